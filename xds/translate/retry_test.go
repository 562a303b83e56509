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
		{"retry without backendRequest: Envoy's default", &ir.Timeouts{BackendRequest: d(0)}, &ir.Retry{Attempts: n(2)},
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
