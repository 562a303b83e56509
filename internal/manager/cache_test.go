package manager

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kptr "k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/infra"
	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/endpoints"
)

func transformOf[T any](t *testing.T, opts cache.Options) func(any) (any, error) {
	t.Helper()
	for o, by := range opts.ByObject {
		if _, ok := any(o).(T); ok {
			if by.Transform == nil {
				t.Fatalf("%T has no transform", o)
			}
			return by.Transform
		}
	}
	t.Fatalf("no cache options for %T", *new(T))
	return nil
}

// The cache holds every ConfigMap (any may be a Gateway's client CA), but
// of those shardgate does not manage only ca.crt; shardgate's own keep
// everything (the infra controller compares them). Non-TLS Secrets keep
// ca.crt only.
func TestCacheKeepsOnlyCABundles(t *testing.T) {
	opts := cacheOptions()
	for o, by := range opts.ByObject {
		if _, ok := o.(*corev1.ConfigMap); ok && by.Label != nil {
			t.Fatal("ConfigMaps are cached by label: a CA ConfigMap would never reach the translator")
		}
	}
	cmT := transformOf[*corev1.ConfigMap](t, opts)
	tenant := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: "t", Annotations: map[string]string{"big": "x"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Data:       map[string]string{"ca.crt": "PEM", "other": "large"},
		BinaryData: map[string][]byte{"blob": []byte("large")},
	}
	got, err := cmT(tenant)
	if err != nil {
		t.Fatal(err)
	}
	c := got.(*corev1.ConfigMap)
	if !maps.Equal(c.Data, map[string]string{"ca.crt": "PEM"}) || c.BinaryData != nil || c.Annotations != nil || c.ManagedFields != nil {
		t.Fatalf("tenant ConfigMap cached as data=%v binary=%v annotations=%v managedFields=%v", c.Data, c.BinaryData, c.Annotations, c.ManagedFields)
	}
	noCA, _ := cmT(&corev1.ConfigMap{Data: map[string]string{"other": "large"}})
	if noCA.(*corev1.ConfigMap).Data != nil {
		t.Fatal("a ConfigMap without ca.crt keeps data")
	}
	ours := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{infra.LabelOwnGateway: "edge"},
			Annotations: map[string]string{infra.AnnotationDesiredHash: "h"}},
		Data: map[string]string{infra.BootstrapKey: "envoy"},
	}
	got, _ = cmT(ours)
	if c := got.(*corev1.ConfigMap); c.Data[infra.BootstrapKey] != "envoy" || c.Annotations[infra.AnnotationDesiredHash] != "h" {
		t.Fatalf("shardgate's ConfigMap lost data or annotations: %v %v", c.Data, c.Annotations)
	}

	secT := transformOf[*corev1.Secret](t, opts)
	got, _ = secT(&corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"ca.crt": []byte("PEM"), "password": []byte("x")}})
	s := got.(*corev1.Secret)
	if string(s.Data["ca.crt"]) != "PEM" || s.Data["password"] != nil {
		t.Fatalf("Opaque Secret cached as %v", s.Data)
	}
}

// The cache keeps of an EndpointSlice only what the endpoint table reads: a
// slice as the EndpointSlice controller writes it gives the Service port
// the same endpoints whether cached whole or slimmed, and the rest is gone.
func TestCacheSlimsEndpointSlices(t *testing.T) {
	full := controllerSlice()
	got, err := transformOf[*discoveryv1.EndpointSlice](t, cacheOptions())(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	slim := got.(*discoveryv1.EndpointSlice)
	if slim.Annotations != nil || slim.OwnerReferences != nil || slim.ManagedFields != nil ||
		!maps.Equal(slim.Labels, map[string]string{discoveryv1.LabelServiceName: "app"}) {
		t.Fatalf("slimmed slice keeps metadata: labels=%v annotations=%v owners=%v", slim.Labels, slim.Annotations, slim.OwnerReferences)
	}
	for _, e := range slim.Endpoints {
		if e.TargetRef != nil || e.NodeName != nil || e.Zone != nil || e.Hostname != nil || e.Hints != nil ||
			e.Conditions.Serving != nil || e.Conditions.Terminating != nil {
			t.Fatalf("slimmed endpoint keeps %+v", e)
		}
	}
	if !slices.EqualFunc(slim.Endpoints, full.Endpoints, func(a, b discoveryv1.Endpoint) bool {
		return slices.Equal(a.Addresses, b.Addresses) && kptr.Equal(a.Conditions.Ready, b.Conditions.Ready)
	}) || !reflect.DeepEqual(slim.Ports, full.Ports) || slim.AddressType != full.AddressType {
		t.Fatalf("slimmed slice lost what the endpoint table reads: %+v", slim)
	}

	want, got := endpointsOf(full), endpointsOf(slim)
	if len(want) != 2 {
		t.Fatalf("the full slice should give its two ready endpoints, got %+v", want)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("slimmed slice gives endpoints\n%+v\nwant\n%+v", got, want)
	}
}

// controllerSlice is an EndpointSlice of Service t/app as the EndpointSlice
// controller writes it: two ready Pods, one not ready, one terminating.
func controllerSlice() *discoveryv1.EndpointSlice {
	port, name, tcp := int32(8080), "http", corev1.ProtocolTCP
	ep := func(ip string, ready, serving, terminating bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{
			Addresses:  []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: kptr.To(ready), Serving: kptr.To(serving), Terminating: kptr.To(terminating)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "t", Name: "app-" + ip, UID: "u-" + types.UID(ip)},
			NodeName:   kptr.To("node-1"),
			Zone:       kptr.To("zone-a"),
			Hostname:   kptr.To("h"),
			Hints:      &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone-a"}}},
		}
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: "app-abcde", GenerateName: "app-", Namespace: "t",
			Labels:          map[string]string{discoveryv1.LabelServiceName: "app", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io", "tier": "web"},
			Annotations:     map[string]string{corev1.EndpointsLastChangeTriggerTime: "2026-11-28T00:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "app", UID: "svc-uid", Controller: kptr.To(true)}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager"}},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &tcp}},
		Endpoints: []discoveryv1.Endpoint{
			ep("10.0.0.2", true, true, false), ep("10.0.0.1", true, true, false),
			ep("10.0.0.3", false, false, false), ep("10.0.0.4", false, true, true),
		},
	}
}

// endpointsOf is what the xDS side's endpoint table makes of slice for
// Service port t/app/http.
func endpointsOf(slice *discoveryv1.EndpointSlice) []endpoints.Endpoint {
	tb := endpoints.NewTable()
	tb.Set(nil, slice)
	return tb.For(ir.ServicePort{Namespace: "t", Name: "app", Port: "http"})
}

// Every cached object loses its managedFields and kubectl's copy of it, and
// keeps its other annotations; the per-kind transforms do the same.
func TestCacheDropsKubectlCopies(t *testing.T) {
	opts := cacheOptions()
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "t",
		Annotations:   map[string]string{corev1.LastAppliedConfigAnnotation: `{"kind":"HTTPRoute"}`, "keep": "v"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	got, err := opts.DefaultTransform(route)
	if err != nil {
		t.Fatal(err)
	}
	if r := got.(*gatewayv1.HTTPRoute); !maps.Equal(r.Annotations, map[string]string{"keep": "v"}) || r.ManagedFields != nil {
		t.Fatalf("cached route keeps annotations %v, managedFields %v", r.Annotations, r.ManagedFields)
	}
	only, _ := opts.DefaultTransform(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: "{}"}}})
	if a := only.(*corev1.Service).Annotations; a != nil {
		t.Fatalf("a Service with only kubectl's copy keeps annotations %v", a)
	}
	sec, _ := transformOf[*corev1.Secret](t, opts)(&corev1.Secret{Type: corev1.SecretTypeTLS,
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "keep": "v"}}})
	if a := sec.(*corev1.Secret).Annotations; !maps.Equal(a, map[string]string{"keep": "v"}) {
		t.Fatalf("a TLS Secret keeps annotations %v", a)
	}
}
