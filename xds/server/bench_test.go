package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/gatewayapi"
)

// pipelineInput is one Gateway with n HTTPRoutes, each with its own
// hostname and Service (one EndpointSlice of two endpoints).
func pipelineInput(n int) *gatewayapi.Input {
	const controller = "shardgate.io/gateway-controller"
	gwNN := types.NamespacedName{Namespace: "default", Name: "gw"}
	in := &gatewayapi.Input{ControllerName: controller, Runtime: map[types.NamespacedName]gatewayapi.GatewayRuntime{
		gwNN: {Addresses: []gatewayv1.GatewayStatusAddress{{Value: "192.0.2.1"}}},
	}}
	rv := 0
	meta := func(ns, name string) metav1.ObjectMeta {
		rv++
		return metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: fmt.Sprint(rv), UID: types.UID(fmt.Sprint(rv)), Generation: 1,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, rv, 0, time.UTC))}
	}
	in.GatewayClasses = []*gatewayv1.GatewayClass{{ObjectMeta: meta("", "shardgate"), Spec: gatewayv1.GatewayClassSpec{ControllerName: controller}}}
	from := gatewayv1.NamespacesFromAll
	in.Gateways = []*gatewayv1.Gateway{{ObjectMeta: meta(gwNN.Namespace, gwNN.Name), Spec: gatewayv1.GatewaySpec{GatewayClassName: "shardgate",
		Listeners: []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType,
			AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &from}}}}}}}
	port, pnum, pname := gatewayv1.PortNumber(80), int32(8080), "http"
	gwNS := gatewayv1.Namespace(gwNN.Namespace)
	for i := range n {
		ns, name := fmt.Sprintf("lease-%d", i%500), fmt.Sprintf("app-%d", i)
		in.HTTPRoutes = append(in.HTTPRoutes, &gatewayv1.HTTPRoute{ObjectMeta: meta(ns, name), Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw", Namespace: &gwNS}}},
			Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(name + ".example.com")},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(name), Port: &port}}}}}},
		}})
		in.Services = append(in.Services, &corev1.Service{ObjectMeta: meta(ns, name), Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: pname, Port: 80}}}})
		in.EndpointSlices = append(in.EndpointSlices, &discoveryv1.EndpointSlice{
			ObjectMeta: func() metav1.ObjectMeta {
				m := meta(ns, name+"-x")
				m.Labels = map[string]string{discoveryv1.LabelServiceName: name}
				return m
			}(),
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &pname, Port: &pnum}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprintf("10.244.%d.%d", i/250, i%250+1)}},
				{Addresses: []string{fmt.Sprintf("10.245.%d.%d", i/250, i%250+1)}}},
		})
	}
	return in
}

// BenchmarkPipelineOneRouteChange: 10k routes on one Gateway; each
// iteration replaces one route (as an update does) and runs everything a
// change costs before it is sent: the Gateway API translation, the xDS
// translation, validation and versioning, and the snapshot update.
func BenchmarkPipelineOneRouteChange(b *testing.B) {
	in := pipelineInput(10_000)
	st := gatewayapi.NewStore(in.ControllerName)
	st.Load(in)
	tr := gatewayapi.NewTranslator(st)
	facts := gatewayapi.FactsOf(in)
	s := New(Options{Log: logr.Discard()})
	s.Publish(in, tr.Translate(facts))
	if errs := s.PublishErrors(); len(errs) > 0 {
		b.Fatal(errs)
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		k := i % len(in.HTTPRoutes)
		r := in.HTTPRoutes[k].DeepCopy()
		r.Generation++
		path, prefix := fmt.Sprintf("/v%d", i), gatewayv1.PathMatchPathPrefix
		r.Spec.Rules[0].Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path}}}
		in.HTTPRoutes[k] = r
		st.Upsert(r)
		s.Publish(in, tr.Translate(facts))
	}
	b.StopTimer()
	if errs := s.PublishErrors(); len(errs) > 0 {
		b.Fatal(errs)
	}
	if tr.Stats.Patched < b.N {
		b.Fatalf("%d patches for %d changes: the change was not incremental (%+v)", tr.Stats.Patched, b.N, tr.Stats)
	}
}
