package metricsauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/singleflight"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

const (
	// DefaultTTL is how long a TokenReview or SubjectAccessReview answer,
	// allowed or denied, is reused.
	DefaultTTL = 10 * time.Second
	// DefaultMaxEntries bounds each of the two caches.
	DefaultMaxEntries = 1024
	// DefaultTimeout bounds one review.
	DefaultTimeout = 10 * time.Second
)

// Options tune a Filter; zero values are the defaults.
type Options struct {
	TTL        time.Duration
	MaxEntries int
	Timeout    time.Duration
}

// Filter authenticates and authorizes requests; see the package doc.
type Filter struct {
	tokens  authenticationclient.TokenReviewInterface
	reviews authorizationclient.SubjectAccessReviewInterface
	ttl     time.Duration
	timeout time.Duration
	now     func() time.Time

	flight    singleflight.Group
	mu        sync.Mutex
	users     *ttlCache[*authenticationv1.UserInfo] // by token digest; nil user: not authenticated
	decisions *ttlCache[bool]                       // by decisionKey
}

// New is a Filter making its reviews through the given clients.
func New(authn authenticationclient.AuthenticationV1Interface, authz authorizationclient.AuthorizationV1Interface, o Options) *Filter {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return &Filter{
		tokens: authn.TokenReviews(), reviews: authz.SubjectAccessReviews(),
		ttl: o.TTL, timeout: o.Timeout, now: time.Now,
		users: newTTLCache[*authenticationv1.UserInfo](o.MaxEntries), decisions: newTTLCache[bool](o.MaxEntries),
	}
}

// Provider is a controller-runtime metrics server FilterProvider: the
// metrics server calls it with the manager's rest.Config and HTTP client.
func Provider(o Options) func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
	return func(c *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
		f, err := NewForConfig(c, hc, o)
		if err != nil {
			return nil, err
		}
		return func(log logr.Logger, next http.Handler) (http.Handler, error) { return f.Wrap(log, next), nil }, nil
	}
}

// NewForConfig is a Filter reviewing through the apiserver of c, with hc.
func NewForConfig(c *rest.Config, hc *http.Client, o Options) (*Filter, error) {
	authn, err := authenticationclient.NewForConfigAndClient(c, hc)
	if err != nil {
		return nil, fmt.Errorf("metrics authentication client: %w", err)
	}
	authz, err := authorizationclient.NewForConfigAndClient(c, hc)
	if err != nil {
		return nil, fmt.Errorf("metrics authorization client: %w", err)
	}
	return New(authn, authz, o), nil
}

// Wrap serves next only to requests the apiserver authenticates and
// authorizes.
func (f *Filter) Wrap(log logr.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		token, ok := bearerToken(req)
		if !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		user, err := f.authenticate(req.Context(), token)
		if err != nil {
			log.Error(err, "Authentication failed")
			http.Error(w, "Authentication failed", http.StatusInternalServerError)
			return
		}
		if user == nil {
			log.V(4).Info("Authentication failed", "path", req.URL.Path)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		verb, path := strings.ToLower(req.Method), req.URL.Path
		allowed, err := f.authorize(req.Context(), user, verb, path)
		if err != nil {
			msg := fmt.Sprintf("Authorization for user %s failed", user.Username)
			log.Error(err, msg)
			http.Error(w, msg, http.StatusInternalServerError)
			return
		}
		if !allowed {
			msg := fmt.Sprintf("Authorization denied for user %s", user.Username)
			log.V(4).Info(msg, "verb", verb, "path", path)
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		// The token is not the handler's business.
		req.Header.Del("Authorization")
		next.ServeHTTP(w, req)
	})
}

// bearerToken is the token of an "Authorization: Bearer <token>" header,
// parsed as the apiserver does.
func bearerToken(req *http.Request) (string, bool) {
	parts := strings.SplitN(strings.TrimSpace(req.Header.Get("Authorization")), " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") || parts[1] == "" {
		return "", false
	}
	return parts[1], true
}

// authenticate is the user the apiserver says token belongs to, or nil
// when it does not authenticate it.
func (f *Filter) authenticate(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
	sum := sha256.Sum256([]byte(token))
	key := string(sum[:])
	f.mu.Lock()
	user, hit := f.users.get(key, f.now())
	f.mu.Unlock()
	if hit {
		return user, nil
	}
	v, err, _ := f.flight.Do("t"+key, func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.timeout)
		defer cancel()
		r, err := f.tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("token review: %w", err)
		}
		var u *authenticationv1.UserInfo
		if r.Status.Authenticated {
			u = &r.Status.User
		}
		f.mu.Lock()
		f.users.put(key, u, f.now(), f.ttl)
		f.mu.Unlock()
		return u, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*authenticationv1.UserInfo), nil
}

// decisionKey identifies a SubjectAccessReview: everything it sends.
type decisionKey struct {
	User   string                                 `json:"u"`
	UID    string                                 `json:"i"`
	Groups []string                               `json:"g"`
	Extra  map[string]authenticationv1.ExtraValue `json:"e"`
	Verb   string                                 `json:"v"`
	Path   string                                 `json:"p"`
}

// authorize says whether the apiserver allows user verb on path.
func (f *Filter) authorize(ctx context.Context, user *authenticationv1.UserInfo, verb, path string) (bool, error) {
	k, err := json.Marshal(decisionKey{user.Username, user.UID, user.Groups, user.Extra, verb, path})
	if err != nil {
		return false, fmt.Errorf("access review key: %w", err)
	}
	key := string(k)
	f.mu.Lock()
	allowed, hit := f.decisions.get(key, f.now())
	f.mu.Unlock()
	if hit {
		return allowed, nil
	}
	v, err, _ := f.flight.Do("a"+key, func() (any, error) {
		extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
		for k, v := range user.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.timeout)
		defer cancel()
		r, err := f.reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
		}}, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("subject access review of %s %s for %s: %w", verb, path, user.Username, err)
		}
		ok := r.Status.Allowed && !r.Status.Denied
		f.mu.Lock()
		f.decisions.put(key, ok, f.now(), f.ttl)
		f.mu.Unlock()
		return ok, nil
	})
	if err != nil {
		return false, err
	}
	return v.(bool), nil
}
