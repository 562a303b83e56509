package akash

import (
	"encoding/json"
	"reflect"
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/gatewayapi"
)

// TestRetryAsAnnotation: on a CRD without rules[].retry, the generated
// route carries the same policy in shardgate.io/retry, and the translator
// counts it as a generated route (so it honours the annotation).
func TestRetryAsAnnotation(t *testing.T) {
	ph := providerHost("web.example.com", "web", 8080)
	p, d := planned(t, ph)
	opts := DefaultRouteOptions()
	opts.NextCases = append(opts.NextCases, "502")
	r := RouteFor(ph, p, d, opts)
	if r == nil || r.Spec.Rules[0].Retry == nil {
		t.Fatalf("route %+v", r)
	}
	if !gatewayapi.IsGeneratedAkashRoute(r) {
		t.Fatal("the generated route is not recognised as generated")
	}
	before := r.DeepCopy()
	a := RetryAsAnnotation(r)
	if !reflect.DeepEqual(r, before) {
		t.Fatal("RetryAsAnnotation changed its input")
	}
	if a.Spec.Rules[0].Retry != nil {
		t.Fatalf("rule still has retry %+v", a.Spec.Rules[0].Retry)
	}
	var got gatewayv1.HTTPRouteRetry
	if err := json.Unmarshal([]byte(a.Annotations[shardgatev1alpha1.AnnotationRetry]), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&got, r.Spec.Rules[0].Retry) {
		t.Fatalf("annotation policy %+v, want %+v", got, *r.Spec.Rules[0].Retry)
	}
	for _, k := range []string{shardgatev1alpha1.AnnotationMaxRequestBodyBytes, shardgatev1alpha1.AnnotationRetryIdempotentOnly} {
		if a.Annotations[k] != r.Annotations[k] {
			t.Errorf("annotation %s = %q, want %q", k, a.Annotations[k], r.Annotations[k])
		}
	}
	w := WithoutRetry(a)
	if w.Spec.Rules[0].Retry != nil || w.Annotations[shardgatev1alpha1.AnnotationRetry] != "" {
		t.Fatalf("WithoutRetry kept a policy: %+v %v", w.Spec.Rules[0].Retry, w.Annotations)
	}
	// Elsewhere with the same labels, it is not a generated route.
	moved := r.DeepCopy()
	moved.Namespace = "default"
	if gatewayapi.IsGeneratedAkashRoute(moved) {
		t.Fatal("a route outside its lease namespace counts as generated")
	}
	// No retry policy: nothing to move.
	opts.NextTries = 1
	if n := RouteFor(ph, p, d, opts); RetryAsAnnotation(n) != n {
		t.Fatal("a route without retries was copied")
	}
}
