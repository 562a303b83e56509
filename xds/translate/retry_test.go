package translate

import (
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/internal/ir"
)

// The route timeout of a retried rule with only a BackendRequest timeout
// leaves room for every attempt and Envoy's longest backoff before each
// retry; a Request timeout, or no retry, keeps the plain rules.
func TestRetryRouteTimeout(t *testing.T) {
	d := func(v time.Duration) *metav1.Duration { return &metav1.Duration{Duration: v} }
	n := func(v int) *int { return &v }
	cases := []struct {
		name  string
		to    *ir.Timeouts
		retry *ir.Retry
		want  *time.Duration // nil: no timeout set (Envoy's default)
	}{
		{"defaults: one retry, 25 ms base backoff", &ir.Timeouts{BackendRequest: d(time.Second)}, &ir.Retry{},
			new(2*time.Second + 250*time.Millisecond)},
		{"attempts and backoff", &ir.Timeouts{BackendRequest: d(500 * time.Millisecond)}, &ir.Retry{Attempts: n(2), Backoff: d(50 * time.Millisecond)},
			new(2500 * time.Millisecond)},
		{"request timeout bounds everything", &ir.Timeouts{Request: d(3 * time.Second), BackendRequest: d(time.Second)}, &ir.Retry{Attempts: n(5)},
			new(3 * time.Second)},
		{"no retry: the single attempt's timeout", &ir.Timeouts{BackendRequest: d(time.Second)}, nil,
			new(time.Second)},
		{"retry without backendRequest: left to the caller", &ir.Timeouts{BackendRequest: d(0)}, &ir.Retry{Attempts: n(2)},
			nil},
		{"a budget too large to express: none", &ir.Timeouts{BackendRequest: d(1000 * time.Hour)}, &ir.Retry{Attempts: n(1 << 30)},
			new(time.Duration(0))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := &routev3.RouteAction{}
			timeouts(a, c.to, c.retry)
			switch {
			case c.want == nil && a.Timeout != nil:
				t.Fatalf("timeout %v, want none", a.Timeout.AsDuration())
			case c.want != nil && a.Timeout == nil:
				t.Fatalf("no timeout, want %v", *c.want)
			case c.want != nil && a.Timeout.AsDuration() != *c.want:
				t.Fatalf("timeout %v, want %v", a.Timeout.AsDuration(), *c.want)
			}
		})
	}
}

// TestNoRouteGetsEnvoysDefaultTimeout: whatever its timeouts, no HTTP or
// gRPC route is left to Envoy's 15 s default, which would cut every longer
// response: a route without a total timeout says 0 (none).
func TestNoRouteGetsEnvoysDefaultTimeout(t *testing.T) {
	d := func(v time.Duration) *metav1.Duration { return &metav1.Duration{Duration: v} }
	n := func(v int) *int { return &v }
	for name, r := range map[string]ir.Route{
		"no timeouts":                     {},
		"backendRequest 0 with a retry":   {Timeouts: &ir.Timeouts{BackendRequest: d(0)}, Retry: &ir.Retry{Attempts: n(2)}},
		"request 0":                       {Timeouts: &ir.Timeouts{Request: d(0)}},
		"gRPC without timeouts":           {GRPC: true},
		"gRPC, backendRequest 0, a retry": {GRPC: true, Timeouts: &ir.Timeouts{BackendRequest: d(0)}, Retry: &ir.Retry{Attempts: n(1)}},
		"an idle timeout of its own, 0":   {IdleTimeout: d(0)},
	} {
		r.Name, r.Backends = "r", []ir.Backend{{Cluster: "default/web/80", Weight: 1}}
		gw := &ir.Gateway{Clusters: []*ir.Cluster{{Name: "default/web/80", Protocol: ir.ClusterHTTP1}}}
		var tr translator
		tr.gw = gw
		a, err := tr.routeAction(&r, weightedBackends(r.Backends, 0), "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if a.Timeout == nil || a.Timeout.AsDuration() != 0 {
			t.Errorf("%s: route timeout %v, want 0s (none)", name, a.Timeout)
		}
	}
}
