package gatewayapi

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// TestRelevantLeaseHost: a LeaseHost update is translated only when it can
// change the ownership facts (spec, labels, deletion, the names its status
// says it holds), not for its conditions or per-shard status.
func TestRelevantLeaseHost(t *testing.T) {
	base := func() *shardgatev1alpha1.LeaseHost {
		return &shardgatev1alpha1.LeaseHost{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "lh", UID: types.UID("u"),
			Generation: 1, ResourceVersion: "1", Labels: map[string]string{"a": "b"}}}
	}
	cases := map[string]struct {
		mutate func(*shardgatev1alpha1.LeaseHost)
		want   bool
	}{
		"conditions only": {func(lh *shardgatev1alpha1.LeaseHost) {
			lh.Status.Conditions = []metav1.Condition{{Type: "Reserved", Status: metav1.ConditionTrue}}
		}, false},
		"spec":          {func(lh *shardgatev1alpha1.LeaseHost) { lh.Generation = 2 }, true},
		"labels":        {func(lh *shardgatev1alpha1.LeaseHost) { lh.Labels = map[string]string{"a": "c"} }, true},
		"deleting":      {func(lh *shardgatev1alpha1.LeaseHost) { lh.DeletionTimestamp = &metav1.Time{} }, true},
		"reservedHosts": {func(lh *shardgatev1alpha1.LeaseHost) { lh.Status.ReservedHosts = []string{"x.example.test"} }, true},
		"recreated":     {func(lh *shardgatev1alpha1.LeaseHost) { lh.UID = "v" }, true},
	}
	for name, tc := range cases {
		next := base()
		next.ResourceVersion = "2"
		tc.mutate(next)
		if got := Relevant(base(), next); got != tc.want {
			t.Errorf("%s: Relevant = %v, want %v", name, got, tc.want)
		}
	}
}

// TestRelevantHTTPRouteAnnotations: an HTTPRoute update is translated when
// the spec or an annotation the translator honours changes (annotations
// leave metadata.generation alone), not for other annotations or status.
func TestRelevantHTTPRouteAnnotations(t *testing.T) {
	base := func() *gatewayv1.HTTPRoute {
		return &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "r", UID: types.UID("u"),
			Generation: 1, ResourceVersion: "1",
			Annotations: map[string]string{shardgatev1alpha1.AnnotationMaxRequestBodyBytes: "1024"}}}
	}
	cases := map[string]struct {
		mutate func(*gatewayv1.HTTPRoute)
		want   bool
	}{
		"status only": {func(r *gatewayv1.HTTPRoute) {
			r.Status.Parents = []gatewayv1.RouteParentStatus{{ControllerName: "x/y"}}
		}, false},
		"other annotation": {func(r *gatewayv1.HTTPRoute) { r.Annotations["example.com/note"] = "x" }, false},
		"spec":             {func(r *gatewayv1.HTTPRoute) { r.Generation = 2 }, true},
		"body limit changed": {func(r *gatewayv1.HTTPRoute) {
			r.Annotations[shardgatev1alpha1.AnnotationMaxRequestBodyBytes] = "2048"
		}, true},
		"body limit removed": {func(r *gatewayv1.HTTPRoute) { r.Annotations = nil }, true},
		"retry setting added": {func(r *gatewayv1.HTTPRoute) {
			r.Annotations[shardgatev1alpha1.AnnotationRetryIdempotentOnly] = "true"
		}, true},
		"retry policy added": {func(r *gatewayv1.HTTPRoute) {
			r.Annotations[shardgatev1alpha1.AnnotationRetry] = `{"attempts":2}`
		}, true},
		"labels without a retry policy": {func(r *gatewayv1.HTTPRoute) { r.Labels = map[string]string{"akash.network": "true"} }, false},
	}
	for name, tc := range cases {
		next := base()
		next.ResourceVersion = "2"
		tc.mutate(next)
		if got := Relevant(base(), next); got != tc.want {
			t.Errorf("%s: Relevant = %v, want %v", name, got, tc.want)
		}
	}
	// With a retry policy, the labels decide whether it is honoured.
	withRetry := base()
	withRetry.Annotations[shardgatev1alpha1.AnnotationRetry] = `{"attempts":2}`
	relabelled := withRetry.DeepCopy()
	relabelled.ResourceVersion = "2"
	relabelled.Labels = map[string]string{"akash.network": "true"}
	if !Relevant(withRetry, relabelled) {
		t.Error("labels changed on a route with a retry policy: Relevant = false, want true")
	}
}
