package status

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/gatewayapi"
)

// benchRoutes is a Store of one Gateway and n HTTPRoutes, each on its own
// Service, whose status already holds what the translation desires (a
// settled controller).
func benchRoutes(b testing.TB, n int) (*gatewayapi.Store, *gatewayapi.Translator, gatewayapi.Facts) {
	b.Helper()
	gwNN := types.NamespacedName{Namespace: "default", Name: "gw"}
	rv := 0
	meta := func(ns, name string) metav1.ObjectMeta {
		rv++
		return metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: fmt.Sprint(rv), Generation: 1,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rv) * time.Second))}
	}
	in := &gatewayapi.Input{ControllerName: ours, Runtime: map[types.NamespacedName]gatewayapi.GatewayRuntime{
		gwNN: {Addresses: []gatewayv1.GatewayStatusAddress{{Value: "192.0.2.1"}}},
	}}
	in.GatewayClasses = []*gatewayv1.GatewayClass{{ObjectMeta: meta("", "shardgate"), Spec: gatewayv1.GatewayClassSpec{ControllerName: ours}}}
	from := gatewayv1.NamespacesFromAll
	in.Gateways = []*gatewayv1.Gateway{{ObjectMeta: meta(gwNN.Namespace, gwNN.Name), Spec: gatewayv1.GatewaySpec{GatewayClassName: "shardgate",
		Listeners: []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType,
			AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &from}}}}}}}
	port := gatewayv1.PortNumber(80)
	gwNS := gatewayv1.Namespace(gwNN.Namespace)
	for i := range n {
		ns, name := fmt.Sprintf("lease-%d", i%500), fmt.Sprintf("app-%d", i)
		in.HTTPRoutes = append(in.HTTPRoutes, &gatewayv1.HTTPRoute{ObjectMeta: meta(ns, name), Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw", Namespace: &gwNS}}},
			Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(name + ".example.com")},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(name), Port: &port}}}}}},
		}})
		in.Services = append(in.Services, &corev1.Service{ObjectMeta: meta(ns, name), Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}})
	}
	out := gatewayapi.Translate(in)
	now := time.Now()
	for _, r := range in.HTTPRoutes {
		parents, _ := MergeParents(nil, out.HTTPRouteStatus.At(types.NamespacedName{Namespace: r.Namespace, Name: r.Name}), ours, now)
		r.Status.Parents = parents
	}
	st := gatewayapi.NewStore(ours)
	st.Load(in)
	tr := gatewayapi.NewTranslator(st)
	f := gatewayapi.FactsOf(in)
	return st, tr, f
}

// BenchmarkSubmitOneRouteChange: 10k settled routes, each on its own
// Service; per iteration one route's spec changes, the translation runs
// (not timed) and its status is submitted. What is timed is what the
// controller does with the status of a change: Submit.
func BenchmarkSubmitOneRouteChange(b *testing.B) {
	st, tr, f := benchRoutes(b, 10_000)
	w := New(nil, nil, ours, logr.Discard())
	w.Submit(st.Input(f), tr.Translate(f))
	routes := st.Input(f).HTTPRoutes
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		k := i % len(routes)
		r := routes[k].DeepCopy()
		r.Generation++
		r.ResourceVersion = fmt.Sprint(1_000_000 + i)
		path, prefix := fmt.Sprintf("/v%d", i), gatewayv1.PathMatchPathPrefix
		r.Spec.Rules[0].Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path}}}
		routes[k] = r
		st.Upsert(r)
		out := tr.Translate(f)
		in := st.Input(f)
		b.StartTimer()
		w.Submit(in, out)
	}
	b.StopTimer()
	if n := w.queue.Len(); n == 0 {
		b.Fatal("no change was queued for writing")
	}
}

// A Submit after a translation of a few changes compares only the routes
// the translation says changed, and still finds every difference: the
// changed route is queued, the settled ones are not, and a route whose
// cached status is stale while its desired status is unchanged is left to
// Recheck (the informer's update event).
func TestSubmitComparesTheChangedRoutes(t *testing.T) {
	st, tr, f := benchRoutes(t, 20)
	w := New(nil, nil, ours, logr.Discard())
	w.Submit(st.Input(f), tr.Translate(f))
	if got := drain(w); len(got) != 0 {
		t.Fatalf("first Submit queued the settled routes %v", got)
	}

	routes := st.Input(f).HTTPRoutes
	changed := routes[3].DeepCopy()
	changed.Generation++
	changed.ResourceVersion = "1000"
	path, prefix := "/changed", gatewayv1.PathMatchPathPrefix
	changed.Spec.Rules[0].Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path}}}
	st.Upsert(changed)
	out := tr.Translate(f)
	if out.StatusAllChanged {
		t.Fatal("a one-route change made every route's status change")
	}
	in := st.Input(f)
	w.Submit(in, out)
	got := drain(w)
	want := Key{Kind: KindHTTPRoute, NamespacedName: types.NamespacedName{Namespace: changed.Namespace, Name: changed.Name}}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("queued %v, want only %v", got, want)
	}

	// Someone clears another route's status: no translation follows (a
	// status-only change), Recheck finds it.
	other := routes[7].DeepCopy()
	other.Status.Parents = nil
	other.ResourceVersion = "1001"
	st.Upsert(other)
	w.Recheck(other)
	got = drain(w)
	want = Key{Kind: KindHTTPRoute, NamespacedName: types.NamespacedName{Namespace: other.Namespace, Name: other.Name}}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("Recheck queued %v, want only %v", got, want)
	}
}

// drain empties the writer's queue (no workers run) of what is ready and
// returns the routes' keys. (GatewayClasses and Gateways are queued after
// GatewayWriteWindow; they are not what these tests count.)
func drain(w *Writer) []Key {
	var out []Key
	for w.queue.Len() > 0 {
		k, _ := w.queue.Get()
		w.queue.Done(k)
		w.queue.Forget(k)
		if k.Kind != KindGateway && k.Kind != KindGatewayClass {
			out = append(out, k)
		}
	}
	return out
}

// A route that reaches the store after the controller listed its snapshot
// but before the translation took the store's changes is translated with
// the rest. When that translation changes every route's status (new facts)
// no later translation names the route changed again, so Submit must find
// it although the snapshot's lists lack it.
func TestSubmitFindsARouteNewerThanTheSnapshot(t *testing.T) {
	st, tr, f := benchRoutes(t, 20)
	w := New(nil, nil, ours, logr.Discard())
	w.Submit(st.Input(f), tr.Translate(f))
	drain(w)

	in := st.Input(f) // the controller's snapshot
	late := st.Input(f).HTTPRoutes[0].DeepCopy()
	late.Name, late.ResourceVersion, late.UID = "late", "2000", "late"
	late.Status = gatewayv1.HTTPRouteStatus{}
	st.Upsert(late) // arrives before the translation takes the store's changes
	f2 := f
	f2.Runtime = map[types.NamespacedName]gatewayapi.GatewayRuntime{{Namespace: "default", Name: "gw"}: {
		Addresses: []gatewayv1.GatewayStatusAddress{{Value: "192.0.2.2"}}}} // new facts: every status may change
	out := tr.Translate(f2)
	if !out.StatusAllChanged {
		t.Fatal("new facts did not change every route's status")
	}
	if _, ok := out.HTTPRouteStatus.Get(types.NamespacedName{Namespace: late.Namespace, Name: late.Name}); !ok {
		t.Fatal("the late route was not translated")
	}
	in.Runtime = f2.Runtime
	w.Submit(in, out)
	want := Key{Kind: KindHTTPRoute, NamespacedName: types.NamespacedName{Namespace: late.Namespace, Name: late.Name}}
	if got := drain(w); !slices.Contains(got, want) {
		t.Fatalf("queued %v; the late route %v is missing", got, want)
	}
}
