/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// benchInput is one Gateway with an HTTP listener, n HTTPRoutes each with
// its own hostname and Service (with one EndpointSlice of two endpoints),
// as a large provider's shard looks.
func benchInput(n int) *Input {
	in := &Input{ControllerName: testController, Runtime: map[types.NamespacedName]GatewayRuntime{
		{Namespace: "default", Name: "gw"}: {Addresses: []gatewayv1.GatewayStatusAddress{{Value: "192.0.2.1"}}},
	}}
	in.GatewayClasses = []*gatewayv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "shardgate"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: testController}}}
	from := gatewayv1.NamespacesFromAll
	in.Gateways = []*gatewayv1.Gateway{{
		ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "default"},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "shardgate", Listeners: []gatewayv1.Listener{{
			Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType,
			AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &from}},
		}}},
	}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	port := int32(80)
	prefix := gatewayv1.PathMatchPathPrefix
	gwNS := gatewayv1.Namespace("default")
	for i := 0; i < n; i++ {
		ns := fmt.Sprintf("lease-%d", i%500)
		name := fmt.Sprintf("app-%d", i)
		path := "/"
		if i%3 == 0 {
			path = "/api"
		}
		in.HTTPRoutes = append(in.HTTPRoutes, &gatewayv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(i) * time.Second))},
			Spec: gatewayv1.HTTPRouteSpec{
				CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw", Namespace: &gwNS}}},
				Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(fmt.Sprintf("app-%d.example.com", i))},
				Rules: []gatewayv1.HTTPRouteRule{{
					Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path}}},
					BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(name), Port: &port}}}},
				}},
			},
		})
		in.Services = append(in.Services, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		})
		pname, pnum := "http", int32(8080)
		in.EndpointSlices = append(in.EndpointSlices, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: name + "-x", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &pname, Port: &pnum}},
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{fmt.Sprintf("10.244.%d.%d", i/250, i%250+1)}},
				{Addresses: []string{fmt.Sprintf("10.245.%d.%d", i/250, i%250+1)}},
			},
		})
	}
	return in
}

func BenchmarkTranslate10k(b *testing.B) {
	in := benchInput(10000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		out := Translate(in)
		if len(out.HTTPRouteStatus) != 10000 || len(out.Gateways) != 1 {
			b.Fatalf("unexpected output: %d route statuses, %d gateways", len(out.HTTPRouteStatus), len(out.Gateways))
		}
	}
}

// TestTranslate10kShape checks the benchmark input translates as intended:
// all routes attached, one virtual host per route plus the catch-all.
func TestTranslate10kShape(t *testing.T) {
	if testing.Short() {
		t.Skip("large input")
	}
	out := Translate(benchInput(10000))
	st := out.GatewayStatus[types.NamespacedName{Namespace: "default", Name: "gw"}]
	if got := st.Listeners[0].AttachedRoutes; got != 10000 {
		t.Fatalf("attachedRoutes = %d", got)
	}
	if got := len(out.Gateways[0].Listeners[0].VirtualHosts); got != 10001 {
		t.Fatalf("virtual hosts = %d", got)
	}
	if got := len(out.Gateways[0].Clusters); got != 10000 {
		t.Fatalf("clusters = %d", got)
	}
}
