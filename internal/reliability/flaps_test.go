package reliability_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/config"
)

// The status watch must be able to fail: it records True→False and
// True→absent of our conditions, and ignores other controllers' entries.
func TestFlapDetector(t *testing.T) {
	f := &flapWatch{last: map[string]map[string]metav1.ConditionStatus{}}
	lh := func(reserved metav1.ConditionStatus, admitted ...metav1.ConditionStatus) *shardgatev1alpha1.LeaseHost {
		o := &shardgatev1alpha1.LeaseHost{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "lh"}}
		o.Status.Conditions = []metav1.Condition{{Type: shardgatev1alpha1.ConditionReserved, Status: reserved}}
		for _, a := range admitted {
			o.Status.Shards = append(o.Status.Shards, shardgatev1alpha1.ShardStatus{
				Name: "s", Conditions: []metav1.Condition{{Type: shardgatev1alpha1.ConditionAdmitted, Status: a}},
			})
		}
		return o
	}
	route := func(controller string, accepted metav1.ConditionStatus) *gatewayv1.HTTPRoute {
		r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"}}
		r.Status.Parents = []gatewayv1.RouteParentStatus{{
			ParentRef:      gatewayv1.ParentReference{Name: "gw"},
			ControllerName: gatewayv1.GatewayController(controller),
			Conditions:     []metav1.Condition{{Type: "Accepted", Status: accepted}},
		}}
		return r
	}
	f.observe(lh(metav1.ConditionFalse, metav1.ConditionTrue))
	f.observe(lh(metav1.ConditionTrue, metav1.ConditionTrue)) // False→True is fine
	f.observe(route("example.com/other", metav1.ConditionTrue))
	f.observe(route("example.com/other", metav1.ConditionFalse)) // not ours
	f.observe(route(config.DefaultControllerName, metav1.ConditionTrue))
	if flaps, _ := f.result(); len(flaps) != 0 {
		t.Fatalf("no flap yet, got %v", flaps)
	}
	f.observe(lh(metav1.ConditionFalse))                                  // Reserved True→False, shard Admitted True→absent
	f.observe(route(config.DefaultControllerName, metav1.ConditionFalse)) // Accepted True→False
	flaps, seen := f.result()
	if len(flaps) != 3 || seen != 7 {
		t.Fatalf("want 3 flaps in 7 observations, got %d in %d: %v", len(flaps), seen, flaps)
	}
}
