/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"fmt"
	"maps"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// benchInput is one Gateway with an HTTP listener, n HTTPRoutes each with
// its own hostname and Service, as a large provider's shard looks (the
// Services' EndpointSlices are the xDS side's: xds/server's benchmarks).
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
	for i := 0; i < n; i++ {
		svc, rt := benchLease(i)
		in.HTTPRoutes = append(in.HTTPRoutes, rt)
		in.Services = append(in.Services, svc)
	}
	return in
}

// BenchmarkTranslate10k: a full translation of 10k routes, each on its own
// Service. Target: ≤ 100 ms.
func BenchmarkTranslate10k(b *testing.B) {
	in := benchInput(10000)
	b.ReportAllocs()
	b.ResetTimer()
	start := now()
	for b.Loop() {
		out := Translate(in)
		if out.HTTPRouteStatus.Len() != 10000 || len(out.Gateways) != 1 {
			b.Fatalf("unexpected output: %d route statuses, %d gateways", out.HTTPRouteStatus.Len(), len(out.Gateways))
		}
	}
	target(b, start, 100*time.Millisecond)
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

// benchLease is lease i of the benchmark: a Service with one port and an
// HTTPRoute for its own hostname.
func benchLease(i int) (*corev1.Service, *gatewayv1.HTTPRoute) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	port := int32(80)
	prefix := gatewayv1.PathMatchPathPrefix
	gwNS := gatewayv1.Namespace("default")
	ns := fmt.Sprintf("lease-%d", i%500)
	name := fmt.Sprintf("app-%d", i)
	path := "/"
	if i%3 == 0 {
		path = "/api"
	}
	rt := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(i) * time.Second))},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw", Namespace: &gwNS}}},
			Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(fmt.Sprintf("app-%d.example.com", i))},
			Rules: []gatewayv1.HTTPRouteRule{{
				Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path}}},
				BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(name), Port: &port}}}},
			}},
		},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	return svc, rt
}

// benchTranslator is a Translator over a Store holding benchInput(n),
// translated once.
func benchTranslator(n int) (*Input, *Store, *Translator, Facts) {
	in := benchInput(n)
	st, tr, f, _ := translatorOver(in)
	return in, st, tr, f
}

// translatorOver stamps in's objects with versions and returns a
// Translator over a Store holding them, with its first translation.
func translatorOver(in *Input) (*Store, *Translator, Facts, *Output) {
	rv := 0
	stamp(in, &rv)
	st := NewStore(testController)
	st.Load(in)
	tr := NewTranslator(st)
	f := FactsOf(in)
	return st, tr, f, tr.Translate(f)
}

// clock is the wall time and the CPU time (user and system, all threads,
// garbage collection included) the process has used. On a shared machine
// the wall time includes waiting for a core; the CPU time is what an
// operation costs.
type clock struct {
	wall time.Time
	cpu  time.Duration
}

func now() clock {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return clock{wall: time.Now(), cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
}

// target reports the wall and CPU time per operation since start and
// whether the CPU time met the target, as a PASS or MISS metric next to the
// figures.
func target(b *testing.B, start clock, want time.Duration) {
	end := now()
	wall := end.wall.Sub(start.wall) / time.Duration(b.N)
	cpu := (end.cpu - start.cpu) / time.Duration(b.N)
	b.ReportMetric(float64(wall.Microseconds())/1000, "wall-ms/op")
	b.ReportMetric(float64(cpu.Microseconds())/1000, "cpu-ms/op")
	verdict := "MISS"
	if cpu <= want {
		verdict = "PASS"
	}
	b.ReportMetric(1, verdict)
	b.Logf("%s: %v CPU (%v wall) per operation, target %v", verdict, cpu, wall, want)
}

// BenchmarkTranslatorOneRouteChange: 10k routes, each on its own Service;
// one route updated per translation (a new object, as an update stores).
// Target: ≤ 1 ms.
func BenchmarkTranslatorOneRouteChange(b *testing.B) {
	in, st, tr, f := benchTranslator(10000)
	b.ReportAllocs()
	b.ResetTimer()
	start := now()
	i := 0
	for b.Loop() {
		i++
		k := i % len(in.HTTPRoutes)
		r := in.HTTPRoutes[k].DeepCopy()
		r.Generation++
		p := fmt.Sprintf("/v%d", i)
		r.Spec.Rules[0].Matches[0].Path.Value = &p
		in.HTTPRoutes[k] = r
		st.Upsert(r)
		out := tr.Translate(f)
		if out.HTTPRouteStatus.Len() != 10000 {
			b.Fatal("routes missing")
		}
	}
	target(b, start, time.Millisecond)
	if tr.Stats.Patched < b.N {
		b.Fatalf("%d patches for %d changes: the change was not incremental (%+v)", tr.Stats.Patched, b.N, tr.Stats)
	}
}

// BenchmarkTranslatorTenantFlow: 10k routes, each on its own Service; per
// translation a new lease arrives: its Service and route, created together
// (its EndpointSlice goes to the xDS side alone: BenchmarkPipelineTenantFlow
// in xds/server has all three). Target: ≤ 1 ms.
func BenchmarkTranslatorTenantFlow(b *testing.B) {
	_, st, tr, f := benchTranslator(10000)
	b.ReportAllocs()
	b.ResetTimer()
	start := now()
	i := 10000
	for b.Loop() {
		svc, rt := benchLease(i)
		st.Upsert(svc)
		st.Upsert(rt)
		i++
		out := tr.Translate(f)
		if out.HTTPRouteStatus.Len() != i {
			b.Fatalf("%d route statuses, want %d", out.HTTPRouteStatus.Len(), i)
		}
	}
	target(b, start, time.Millisecond)
	if tr.Stats.Full != 1 {
		b.Fatalf("a new lease translated the Gateway in full (%+v)", tr.Stats)
	}
}

// BenchmarkTranslatorLeaseHostFlow: 10k routes on a shard in Generated
// mode, each generated for its LeaseHost; per translation a new lease
// arrives as the hostname operator's flow makes it: its Service and route
// (its EndpointSlice is the xDS side's), and ownership facts in which its LeaseHost
// holds the route's name (a new Ownership, its Generated map copied and
// one entry added, with a delta naming the route, as the controller
// computes it). Target: ≤ 1 ms.
func BenchmarkTranslatorLeaseHostFlow(b *testing.B) {
	in := benchInput(10000)
	gw := types.NamespacedName{Namespace: "default", Name: "gw"}
	generated := func(rt *gatewayv1.HTTPRoute, i int) (types.NamespacedName, GeneratedRoute) {
		yes := true
		uid := types.UID(fmt.Sprintf("uid-lh-%d", i))
		rt.OwnerReferences = []metav1.OwnerReference{{APIVersion: "shardgate.io/v1alpha1", Kind: "LeaseHost", Name: rt.Name, UID: uid, Controller: &yes}}
		return types.NamespacedName{Namespace: rt.Namespace, Name: rt.Name},
			GeneratedRoute{LeaseHost: uid, Hosts: map[types.NamespacedName][]string{gw: {string(rt.Spec.Hostnames[0])}}}
	}
	o := &Ownership{Shards: map[types.NamespacedName]ShardRoutes{gw: RoutesGenerated}, Generated: map[types.NamespacedName]GeneratedRoute{}, Gen: 1}
	for i, rt := range in.HTTPRoutes {
		k, g := generated(rt, i)
		o.Generated[k] = g
	}
	in.Ownership = o
	st, tr, f, out := translatorOver(in)
	if out.GatewayStatus[gw].Listeners[0].AttachedRoutes != 10000 {
		b.Fatalf("attached routes: %d", out.GatewayStatus[gw].Listeners[0].AttachedRoutes)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := now()
	i := 10000
	for b.Loop() {
		svc, rt := benchLease(i)
		k, g := generated(rt, i)
		next := *f.Ownership
		next.Generated = maps.Clone(f.Ownership.Generated)
		next.Generated[k] = g
		next.Gen = f.Ownership.Gen + 1
		next.Delta = &OwnershipDelta{Since: f.Ownership.Gen, Routes: []types.NamespacedName{k}}
		f.Ownership = &next
		st.Upsert(svc)
		st.Upsert(rt)
		i++
		out := tr.Translate(f)
		if n := out.GatewayStatus[gw].Listeners[0].AttachedRoutes; n != int32(i) {
			b.Fatalf("%d routes attached, want %d", n, i)
		}
	}
	target(b, start, time.Millisecond)
	if tr.Stats.Full != 1 {
		b.Fatalf("a new LeaseHost's route translated the Gateway in full (%+v)", tr.Stats)
	}
}
