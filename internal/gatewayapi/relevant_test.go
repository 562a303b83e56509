package gatewayapi

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
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

// TestRelevantEndpointSlice: an EndpointSlice update is translated only when
// it changes what a Service port's endpoints are made of (its Service,
// address type, ports, ready addresses), not for the Pod references,
// nodes, zones and other conditions the EndpointSlice controller also
// updates.
func TestRelevantEndpointSlice(t *testing.T) {
	base := func() *discoveryv1.EndpointSlice {
		port, name := int32(8080), "http"
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "app-x", Namespace: "t", UID: "u", ResourceVersion: "1", Labels: map[string]string{discoveryv1.LabelServiceName: "app"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
				{Addresses: []string{"10.0.0.2"}},
				{Addresses: []string{"10.0.0.3"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
			},
		}
	}
	for _, c := range []struct {
		name string
		edit func(*discoveryv1.EndpointSlice)
		want bool
	}{
		{"Pod references, node, zone, serving and terminating", func(s *discoveryv1.EndpointSlice) {
			for i := range s.Endpoints {
				e := &s.Endpoints[i]
				e.TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: "p"}
				e.NodeName, e.Zone = ptr.To("n"), ptr.To("z")
				e.Conditions.Serving, e.Conditions.Terminating = ptr.To(false), ptr.To(true)
			}
			s.Annotations = map[string]string{corev1.EndpointsLastChangeTriggerTime: "now"}
		}, false},
		{"a not-ready endpoint added", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.9"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}})
		}, false},
		{"ready unknown made true", func(s *discoveryv1.EndpointSlice) { s.Endpoints[1].Conditions.Ready = ptr.To(true) }, false},
		{"nothing", func(*discoveryv1.EndpointSlice) {}, false},
		{"a ready endpoint added", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.9"}})
		}, true},
		{"a ready endpoint gone", func(s *discoveryv1.EndpointSlice) { s.Endpoints = s.Endpoints[1:] }, true},
		{"an endpoint becomes ready", func(s *discoveryv1.EndpointSlice) { s.Endpoints[2].Conditions.Ready = ptr.To(true) }, true},
		{"an endpoint becomes not ready", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Conditions.Ready = ptr.To(false) }, true},
		{"an address changes", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses[0] = "10.0.0.7" }, true},
		{"a port changes", func(s *discoveryv1.EndpointSlice) { *s.Ports[0].Port = 9090 }, true},
		{"a port is renamed", func(s *discoveryv1.EndpointSlice) { *s.Ports[0].Name = "web" }, true},
		{"another Service", func(s *discoveryv1.EndpointSlice) { s.Labels[discoveryv1.LabelServiceName] = "other" }, true},
		{"another address type", func(s *discoveryv1.EndpointSlice) { s.AddressType = discoveryv1.AddressTypeFQDN }, true},
		{"deleted and created again", func(s *discoveryv1.EndpointSlice) { s.UID = "u2" }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := base()
			c.edit(n)
			n.ResourceVersion = "2"
			if got := Relevant(base(), n); got != c.want {
				t.Fatalf("Relevant = %v, want %v", got, c.want)
			}
		})
	}
}
