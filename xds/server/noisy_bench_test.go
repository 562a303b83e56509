package server

import (
	"fmt"
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/gatewayapi"
)

// noisyShard is a shard (routes Owned) with 200 ordinary routes, each its
// own tenant's (namespace lease-i, owner akash1t-i, name app-i held by
// it), translated and published, with a meter on a proxy's watches. With
// attacker, one more tenant (akash1mallory, namespace attacker, holding
// evil-0..3.example.com) first fills its rule, match and regex limits
// exactly (100 routes of 10 rules × 2 matches, 100 of the matches with a
// header regex: 1000 rules, 2000 matches, 100 regexes) and then adds the attack a
// hostile-tenant review measured: 400 routes of 16 rules × 8 matches, each
// match with a header regex (within the CRD's limits).
type noisyShard struct {
	in    *gatewayapi.Input
	st    *gatewayapi.Store
	tr    *gatewayapi.Translator
	facts gatewayapi.Facts
	s     *Server
	m     *changeMeter
	group string
}

func newNoisyShard(b *testing.B, attacker bool, limits gatewayapi.TenantLimits) *noisyShard {
	in, eslices := pipelineInput(200)
	gw := types.NamespacedName{Namespace: "default", Name: "gw"}
	o := &gatewayapi.Ownership{
		Shards:          map[types.NamespacedName]gatewayapi.ShardRoutes{gw: gatewayapi.RoutesOwned},
		Generated:       map[types.NamespacedName]gatewayapi.GeneratedRoute{},
		NamespaceOwners: map[string]string{},
		Holders:         map[string]string{},
	}
	for _, rt := range in.HTTPRoutes {
		owner := "akash1t-" + rt.Namespace
		o.NamespaceOwners[rt.Namespace] = owner
		o.Holders[string(rt.Spec.Hostnames[0])] = owner
	}
	if attacker {
		const ns = "attacker"
		o.NamespaceOwners[ns] = "akash1mallory"
		for i := range 4 {
			o.Holders[fmt.Sprintf("evil-%d.example.com", i)] = "akash1mallory"
		}
		in.Services = append(in.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", ResourceVersion: "1", UID: "uid-evil-web"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}})
		for i := range 500 {
			rules, matches := 10, 2
			if i >= 100 {
				rules, matches = 16, 8
			}
			// The filling routes have one regex each; the attack's, one
			// per match.
			rt := attackRoute(ns, i, rules, matches, func(r, m int) bool { return i >= 100 || r == 0 && m == 0 })
			in.HTTPRoutes = append(in.HTTPRoutes, rt)
		}
	}
	in.Ownership = o
	in.TenantLimits = limits
	st := gatewayapi.NewStore(in.ControllerName)
	st.Load(in)
	tr := gatewayapi.NewTranslator(st)
	facts := gatewayapi.FactsOf(in)
	s := newWithSlices(eslices)
	s.Publish(tr.Translate(facts).Gateways)
	if errs := s.PublishErrors(); len(errs) > 0 {
		b.Fatal(errs)
	}
	group := NodeGroup(gw)
	return &noisyShard{in: in, st: st, tr: tr, facts: facts, s: s, m: newChangeMeter(b, s, group), group: group}
}

// attackRoute is attacker route i: rules × matches, on one of the names
// the attacker holds, each match with a header regex when regex says so.
func attackRoute(ns string, i, rules, matches int, regex func(r, m int) bool) *gatewayv1.HTTPRoute {
	gwNS := gatewayv1.Namespace("default")
	port := gatewayv1.PortNumber(80)
	rt := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("evil-%d", i), Generation: 1,
		ResourceVersion: fmt.Sprint(100_000 + i), UID: types.UID(fmt.Sprintf("uid-evil-%d", i)),
		CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second))},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw", Namespace: &gwNS}}},
			Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(fmt.Sprintf("evil-%d.example.com", i%4))},
		}}
	prefix, re := gatewayv1.PathMatchPathPrefix, gatewayv1.HeaderMatchRegularExpression
	for r := range rules {
		rule := gatewayv1.HTTPRouteRule{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web", Port: &port}}}}}
		for m := range matches {
			path := fmt.Sprintf("/%d/%d/%d", i, r, m)
			match := gatewayv1.HTTPRouteMatch{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path}}
			if regex(r, m) {
				match.Headers = []gatewayv1.HTTPHeaderMatch{{Type: &re, Name: "x-evil", Value: fmt.Sprintf("^(a+|b+)*c[0-9]{1,8}-%d-%d-%d$", i, r, m)}}
			}
			rule.Matches = append(rule.Matches, match)
		}
		rt.Spec.Rules = append(rt.Spec.Rules, rule)
	}
	return rt
}

// change replaces victim route k (one of the 200 ordinary tenants'), runs
// everything the change costs before it is sent, and returns the CPU time
// it took.
func (n *noisyShard) change(b *testing.B, i int) time.Duration {
	k := i % 200
	r := n.in.HTTPRoutes[k].DeepCopy()
	r.Generation++
	r.ResourceVersion = fmt.Sprint(3_000_000 + i)
	path, prefix := fmt.Sprintf("/v%d", i), gatewayv1.PathMatchPathPrefix
	r.Spec.Rules[0].Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path}}}
	n.in.HTTPRoutes[k] = r
	start := cpuTime(b)
	n.st.Upsert(r)
	n.s.Publish(n.tr.Translate(n.facts).Gateways)
	n.m.respond()
	return cpuTime(b) - start
}

// routeTableBytes is the serialized size of every RouteConfiguration the
// Gateway's proxies hold: what one of them receives whole.
func (n *noisyShard) routeTableBytes(b *testing.B) int {
	snap, err := n.s.cache.GetSnapshot(n.group)
	if err != nil {
		b.Fatal(err)
	}
	size := 0
	for _, r := range snap.GetResources(resourcev3.RouteType) {
		size += proto.Size(r)
	}
	return size
}

// BenchmarkPipelineNoisyTenant: one tenant at its limits on a shard (and
// over them with the reviewed attack), with the default tenant limits;
// each iteration another tenant changes one route, and the whole pipeline
// runs (translation, xDS translation, validation, snapshot, the proxy's
// responses), once on the shard with the attacker and once on the same
// shard without it. Targets: the change costs ≤ 3× its cost without the
// attacker (victim-ratio); the route table a proxy holds stays under
// grpc-go's 4 MiB message limit (route-table-B). It also reports the
// bytes serialized and sent per change with the attacker.
func BenchmarkPipelineNoisyTenant(b *testing.B) {
	limits := gatewayapi.DefaultTenantLimits()
	quiet := newNoisyShard(b, false, limits)
	noisy := newNoisyShard(b, true, limits)
	refused := 0
	for _, ps := range noisy.tr.Translate(noisy.facts).HTTPRouteStatus.All() {
		for _, p := range ps {
			for _, c := range p.Conditions {
				if c.Type == "Accepted" && c.Reason == shardgatev1alpha1.ReasonTenantLimitExceeded {
					refused++
				}
			}
		}
	}
	if refused != 400 {
		b.Fatalf("%d attacker routes refused, want the 400 over the limits", refused)
	}
	var quietCPU, noisyCPU time.Duration
	patched := noisy.tr.Stats.Patched
	noisy.m.serialized, noisy.m.response = 0, 0
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		quietCPU += quiet.change(b, i)
		noisyCPU += noisy.change(b, i)
	}
	b.StopTimer()
	for _, n := range []*noisyShard{quiet, noisy} {
		if errs := n.s.PublishErrors(); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
	if got := noisy.tr.Stats.Patched - patched; got < b.N {
		b.Fatalf("%d patches for %d changes: the change was not incremental (%+v)", got, b.N, noisy.tr.Stats)
	}
	ratio := float64(noisyCPU) / float64(quietCPU)
	table := noisy.routeTableBytes(b)
	b.ReportMetric(float64(quietCPU.Microseconds())/1000/float64(b.N), "quiet-cpu-ms/op")
	b.ReportMetric(float64(noisyCPU.Microseconds())/1000/float64(b.N), "noisy-cpu-ms/op")
	b.ReportMetric(ratio, "victim-ratio")
	b.ReportMetric(float64(noisy.m.serialized)/float64(b.N), "serialized-B/op")
	b.ReportMetric(float64(noisy.m.response)/float64(b.N), "response-B/op")
	b.ReportMetric(float64(table), "route-table-B")
	b.ReportMetric(float64(quiet.routeTableBytes(b)), "quiet-route-table-B")
	verdict := "MISS"
	if ratio <= 3 && table < 4<<20 {
		verdict = "PASS"
	}
	b.ReportMetric(1, verdict)
	b.Logf("%s: another tenant's change costs %.2f× its cost without the attacker (target ≤ 3×); route table %d B (target < 4 MiB)", verdict, ratio, table)
}

// BenchmarkPipelineNoisyTenantUnlimited is the same attack with no tenant
// limits (TenantLimits zero), for comparison: what one tenant's routes
// cost every other tenant's change when nothing bounds them.
func BenchmarkPipelineNoisyTenantUnlimited(b *testing.B) {
	noisy := newNoisyShard(b, true, gatewayapi.TenantLimits{})
	noisy.m.serialized, noisy.m.response = 0, 0
	var cpu time.Duration
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		cpu += noisy.change(b, i)
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "noisy-cpu-ms/op")
	b.ReportMetric(float64(noisy.m.serialized)/float64(b.N), "serialized-B/op")
	b.ReportMetric(float64(noisy.m.response)/float64(b.N), "response-B/op")
	b.ReportMetric(float64(noisy.routeTableBytes(b)), "route-table-B")
}
