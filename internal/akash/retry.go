package akash

import (
	"encoding/json"
	"maps"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// Routes and the HTTPRoute CRD's channel. Standard-channel Gateway API
// CRDs older than v1.7 (those Akash's NGINX Gateway Fabric install brings)
// have no rules[].retry: the apiserver drops the field, and a route that
// never reads back as written would be written again on every pass. On
// such a cluster a generated route carries its retry policy in the
// annotation shardgate.io/retry instead, which the translator honours on
// generated Akash routes only.

// RetryAsAnnotation is a copy of r whose rules carry no retry field, the
// policy (the first rule's that has one; generated routes have one rule)
// going to AnnotationRetry as the JSON of the field. A route without a
// retry policy is returned as it is.
func RetryAsAnnotation(r *gatewayv1.HTTPRoute) *gatewayv1.HTTPRoute {
	var policy *gatewayv1.HTTPRouteRetry
	for i := range r.Spec.Rules {
		if r.Spec.Rules[i].Retry != nil {
			policy = r.Spec.Rules[i].Retry
			break
		}
	}
	if policy == nil {
		return r
	}
	b, err := json.Marshal(policy)
	if err != nil {
		return r
	}
	out := WithoutRetry(r)
	out.Annotations = maps.Clone(out.Annotations)
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[shardgatev1alpha1.AnnotationRetry] = string(b)
	return out
}

// WithoutRetry is a copy of r without any retry policy: no rules[].retry
// and no AnnotationRetry. It is what a CRD without rules[].retry keeps of
// a route written with the field.
func WithoutRetry(r *gatewayv1.HTTPRoute) *gatewayv1.HTTPRoute {
	out := r.DeepCopy()
	for i := range out.Spec.Rules {
		out.Spec.Rules[i].Retry = nil
	}
	delete(out.Annotations, shardgatev1alpha1.AnnotationRetry)
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	return out
}
