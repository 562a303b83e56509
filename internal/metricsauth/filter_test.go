package metricsauth_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shardgate/shardgate/internal/metricsauth"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/internal/testwait"
)

// countingTransport counts the TokenReviews and SubjectAccessReviews sent
// through it.
type countingTransport struct {
	next                 http.RoundTripper
	tokenReviews, access atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/tokenreviews"):
		c.tokenReviews.Add(1)
	case strings.HasSuffix(r.URL.Path, "/subjectaccessreviews"):
		c.access.Add(1)
	}
	return c.next.RoundTrip(r)
}

// fakeClock is the filter's clock, moved by the test.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// server is a metrics server stand-in behind a Filter built from the
// apiserver's config, as the manager builds it.
type server struct {
	url   string
	count *countingTransport
	clock *fakeClock
	f     *metricsauth.Filter
}

func newServer(t *testing.T, cfg *rest.Config, o metricsauth.Options) *server {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	count := &countingTransport{next: next}
	hc.Transport = count
	f, err := metricsauth.NewForConfig(cfg, hc, o)
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	f.SetClock(clock.Now)
	h := f.Wrap(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			http.Error(w, "the token reached the handler", http.StatusTeapot)
			return
		}
		_, _ = io.WriteString(w, "served "+r.URL.Path)
	}))
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return &server{url: s.URL, count: count, clock: clock, f: f}
}

func (s *server) do(t *testing.T, method, path, authorization string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// reviews is how many TokenReviews and SubjectAccessReviews s has made.
func (s *server) reviews() (int64, int64) { return s.count.tokenReviews.Load(), s.count.access.Load() }

func TestFilterAgainstAPIServer(t *testing.T) {
	ctx := context.Background()
	env := testenv.StartT(t, testenv.Options{})
	c := env.Client
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}))
	for _, sa := range []string{"reader", "nobody"} {
		must(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: sa}}))
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "reader"}},
	}
	must(c.Create(ctx, binding))
	token := func(sa string, audiences ...string) string {
		t.Helper()
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: audiences}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token of %s: %v", sa, err)
		}
		return tr.Status.Token
	}
	reader, nobody := token("reader"), token("nobody")
	// A valid token of the reader, but issued for another audience: the
	// apiserver does not accept it for itself, and neither may we.
	elsewhere := token("reader", "vault")

	t.Run("answers", func(t *testing.T) {
		s := newServer(t, env.Config, metricsauth.Options{})
		for _, tc := range []struct {
			name, method, path, auth string
			want                     int
		}{
			{"no token", "GET", "/metrics", "", http.StatusUnauthorized},
			{"not a bearer token", "GET", "/metrics", "Basic " + reader, http.StatusUnauthorized},
			{"empty bearer token", "GET", "/metrics", "Bearer ", http.StatusUnauthorized},
			{"a token the apiserver does not know", "GET", "/metrics", "Bearer not-a-token", http.StatusUnauthorized},
			{"a reader token for another audience", "GET", "/metrics", "Bearer " + elsewhere, http.StatusUnauthorized},
			{"authenticated without the role", "GET", "/metrics", "Bearer " + nobody, http.StatusForbidden},
			{"with the role", "GET", "/metrics", "Bearer " + reader, http.StatusOK},
			{"with the role, lower-case scheme", "GET", "/metrics", "bearer " + reader, http.StatusOK},
			{"with the role, another path", "GET", "/debug/config_dump", "Bearer " + reader, http.StatusForbidden},
			{"with the role, another verb", "POST", "/metrics", "Bearer " + reader, http.StatusForbidden},
		} {
			code, body := s.do(t, tc.method, tc.path, tc.auth)
			if code != tc.want {
				t.Errorf("%s: %s %s answered %d %q, want %d", tc.name, tc.method, tc.path, code, body, tc.want)
			}
			if code == http.StatusOK && body != "served /metrics" {
				t.Errorf("%s: body %q", tc.name, body)
			}
		}
	})

	t.Run("cache", func(t *testing.T) {
		s := newServer(t, env.Config, metricsauth.Options{})
		check := func(what string, wantTR, wantSAR int64) {
			t.Helper()
			if tr, sar := s.reviews(); tr != wantTR || sar != wantSAR {
				t.Fatalf("%s: %d TokenReviews and %d SubjectAccessReviews, want %d and %d", what, tr, sar, wantTR, wantSAR)
			}
		}
		for i := range 3 {
			if code, body := s.do(t, "GET", "/metrics", "Bearer "+reader); code != http.StatusOK {
				t.Fatalf("reader, request %d: %d %q", i, code, body)
			}
			if code, _ := s.do(t, "GET", "/metrics", "Bearer "+nobody); code != http.StatusForbidden {
				t.Fatalf("nobody, request %d: %d", i, code)
			}
			if code, _ := s.do(t, "GET", "/metrics", "Bearer not-a-token"); code != http.StatusUnauthorized {
				t.Fatalf("bad token, request %d: %d", i, code)
			}
		}
		// One review per token, one access review per authenticated
		// user, however many requests: allowed, denied and
		// unauthenticated answers are all cached.
		check("three rounds within the TTL", 3, 2)

		// The binding goes; within the TTL the reader still reads, after
		// it the apiserver is asked again and says no.
		must(c.Delete(ctx, binding))
		if code, _ := s.do(t, "GET", "/metrics", "Bearer "+reader); code != http.StatusOK {
			t.Fatalf("reader within the TTL after the binding went: %d, want the cached 200", code)
		}
		check("within the TTL", 3, 2)
		// The apiserver's authorizer follows RBAC objects through its
		// own informers: wait until it denies the reader (asked directly,
		// not through the filter) before the cache's answer expires.
		testwait.For(t, "the apiserver to deny the reader without its binding", func() bool {
			sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{
					User:                  "system:serviceaccount:default:reader",
					NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
				}}, metav1.CreateOptions{})
			return err == nil && !sar.Status.Allowed
		})
		s.clock.Add(metricsauth.DefaultTTL)
		if code, _ := s.do(t, "GET", "/metrics", "Bearer "+reader); code != http.StatusForbidden {
			t.Fatalf("reader after the TTL without the binding: %d, want 403", code)
		}
		check("after the TTL", 4, 3)
		binding.ResourceVersion = ""
		must(c.Create(ctx, binding))
	})

	t.Run("bounded", func(t *testing.T) {
		s := newServer(t, env.Config, metricsauth.Options{MaxEntries: 2})
		for i := range 5 {
			if code, _ := s.do(t, "GET", "/metrics", fmt.Sprintf("Bearer bad-%d", i)); code != http.StatusUnauthorized {
				t.Fatalf("bad-%d: %d", i, code)
			}
			n := s.f.CachedTokens()
			if n > 2 {
				t.Fatalf("after %d tokens the cache holds %d, want at most 2", i+1, n)
			}
		}
		if tr, _ := s.reviews(); tr != 5 {
			t.Fatalf("%d TokenReviews for 5 tokens", tr)
		}
	})
}

// TestFilterAPIServerDown: a review that fails is a 500, and is not cached.
func TestFilterAPIServerDown(t *testing.T) {
	l := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer l.Close()
	s := newServer(t, &rest.Config{Host: l.URL}, metricsauth.Options{Timeout: 5 * time.Second})
	for range 2 {
		if code, _ := s.do(t, "GET", "/metrics", "Bearer some-token"); code != http.StatusInternalServerError {
			t.Fatalf("apiserver answering 503: %d, want 500", code)
		}
	}
	if tr, _ := s.reviews(); tr < 2 {
		t.Fatalf("%d TokenReviews for two requests: a failure was cached", tr)
	}
}
