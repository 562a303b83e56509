package akash

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
)

// RouteOptions are an expose's http_options (milliseconds and bytes, as in
// the Manifest), the settings of its route.
type RouteOptions struct {
	ReadTimeout uint32
	SendTimeout uint32
	NextTimeout uint32
	MaxBodySize uint32
	NextTries   uint32
	NextCases   []string
}

// DefaultRouteOptions are Akash's defaults for an expose without
// http_options (or without a Manifest): 60 s timeouts, a 1 MiB body, 3 tries
// on error or timeout.
func DefaultRouteOptions() RouteOptions {
	return RouteOptions{
		ReadTimeout: 60_000, SendTimeout: 60_000, NextTimeout: 60_000,
		MaxBodySize: 1 << 20, NextTries: 3, NextCases: []string{"error", "timeout"},
	}
}

// OptionsFor finds the expose of serviceName on externalPort in m, as
// Akash's hostname operator does (a global expose of a service with a
// non-zero count, whose external port, or port when it has none, is
// externalPort), and returns its options. Like Akash, an expose whose
// max_body_size is zero (written before http_options existed) gets the
// defaults, and so does a ProviderHost without a Manifest or expose (found
// is then false).
func OptionsFor(m *akashv1.Manifest, serviceName string, externalPort uint32) (opts RouteOptions, found bool) {
	if m == nil {
		return DefaultRouteOptions(), false
	}
	for _, svc := range m.Spec.Group.Services {
		if svc.Name != serviceName || svc.Count == 0 {
			continue
		}
		for _, e := range svc.Expose {
			ext := uint32(e.ExternalPort)
			if ext == 0 {
				ext = uint32(e.Port)
			}
			if !e.Global || ext != externalPort {
				continue
			}
			o := e.HTTPOptions
			if o.MaxBodySize == 0 {
				return DefaultRouteOptions(), true
			}
			return RouteOptions{
				ReadTimeout: o.ReadTimeout, SendTimeout: o.SendTimeout, NextTimeout: o.NextTimeout,
				MaxBodySize: o.MaxBodySize, NextTries: o.NextTries, NextCases: slices.Clone(o.NextCases),
			}, true
		}
	}
	return DefaultRouteOptions(), false
}

// IdleTimeout is the route's idle timeout in milliseconds: the longer
// of read_timeout and send_timeout. NGINX's proxy_read_timeout and
// proxy_send_timeout bound the time between two reads or two writes, not
// a whole response, so they become the idle timeout, and no cap applies to
// a response as long as bytes flow. 0 (both unset) leaves the Gateway's
// default.
func (o RouteOptions) IdleTimeout() uint64 {
	return uint64(max(o.ReadTimeout, o.SendTimeout))
}

// Tries is how many times a request may be sent, retries included:
// next_tries, never more than next_timeout lets start. NGINX stops passing a request to the next
// upstream once next_timeout has passed since the first try; a try that
// times out costs the idle timeout, so at most 1 + next_timeout / idle
// tries fit. Retries happen only before a response has begun: they never
// cut or repeat a response under way.
func (o RouteOptions) Tries() uint32 {
	tries := o.NextTries
	if idle := o.IdleTimeout(); o.NextTimeout > 0 && idle > 0 {
		tries = uint32(min(uint64(tries), 1+uint64(o.NextTimeout)/idle))
	}
	return tries
}

// Retry is the rule's retry policy: Tries counts the first attempt, so it
// allows Tries-1 retries; "off", or fewer than two tries, means no
// retries. Each try gets the idle timeout (Envoy's per_try_idle_timeout). A status code ("500" or "http_500") adds that code. Every retry
// policy retries connection failures, resets and per-try timeouts, which
// covers "error", "timeout" and "invalid_header" (an upstream response
// that cannot be parsed resets the upstream stream); those are retried
// even when next_cases leaves them out. "non_idempotent" is an annotation
// (Annotations).
func (o RouteOptions) Retry() *gatewayv1.HTTPRouteRetry {
	tries := o.Tries()
	if tries < 2 || slices.Contains(o.NextCases, "off") {
		return nil
	}
	r := &gatewayv1.HTTPRouteRetry{Attempts: new(int(tries - 1))}
	for _, c := range o.NextCases {
		n, err := strconv.Atoi(strings.TrimPrefix(c, "http_"))
		if err != nil || n < 400 || n > 599 {
			continue
		}
		code := gatewayv1.HTTPRouteRetryStatusCode(n)
		if !slices.Contains(r.Codes, code) {
			r.Codes = append(r.Codes, code)
		}
	}
	slices.Sort(r.Codes)
	return r
}

// Annotations are the route's shardgate annotations: WebSocket upgrades
// (NGINX upgrades on every Akash route), the idle timeout, max_body_size as
// its request body limit and, when the route retries and next_cases does
// not list non_idempotent, retries for idempotent requests only (NGINX
// never passes a POST, PATCH or LOCK request to the next upstream unless
// non_idempotent is listed).
func (o RouteOptions) Annotations() map[string]string {
	a := map[string]string{shardgatev1alpha1.AnnotationWebSocket: "true"}
	if idle := o.IdleTimeout(); idle > 0 {
		a[shardgatev1alpha1.AnnotationIdleTimeout] = FormatDuration(idle)
	}
	if o.MaxBodySize > 0 {
		a[shardgatev1alpha1.AnnotationMaxRequestBodyBytes] = strconv.FormatUint(uint64(o.MaxBodySize), 10)
	}
	if o.Retry() != nil && !slices.Contains(o.NextCases, "non_idempotent") {
		a[shardgatev1alpha1.AnnotationRetryIdempotentOnly] = "true"
	}
	return a
}

// RouteAnnotations are the annotation keys a generated route may carry:
// those Annotations sets, and AnnotationRetry (RetryAsAnnotation).
var RouteAnnotations = []string{
	shardgatev1alpha1.AnnotationMaxRequestBodyBytes, shardgatev1alpha1.AnnotationRetryIdempotentOnly,
	shardgatev1alpha1.AnnotationIdleTimeout, shardgatev1alpha1.AnnotationWebSocket, shardgatev1alpha1.AnnotationRetry,
}

// FormatDuration writes ms milliseconds as a Gateway API duration (at most
// five digits per unit): "60s", "1m30s", "1500ms".
func FormatDuration(ms uint64) string {
	if ms == 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		n    uint64
		unit string
	}{{3_600_000, "h"}, {60_000, "m"}, {1000, "s"}, {1, "ms"}} {
		if v := ms / u.n; v > 0 {
			fmt.Fprintf(&b, "%d%s", v, u.unit)
			ms -= v * u.n
		}
	}
	return b.String()
}
