package leasehosts

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/sharding"
)

// TestFactsDelta: LeaseHosts of two owners come, go, change names
// and take names over (same-owner handovers, which keep the old route
// serving until the new holder's route carries the name); the generated
// routes appear some steps after their LeaseHosts, as the LeaseHost
// controller writes them. After every step the facts Facts.Next gives
// equal the reference (Ownership over the same objects, through a full
// Handover from the last facts), and their Delta, when set, names every
// route whose generated entry differs from the last facts', and says
// whether the owners differ.
func TestFactsDelta(t *testing.T) {
	shard := sharding.Shard{Name: "a", Gateway: types.NamespacedName{Namespace: "infra", Name: "a"}, Domain: "a.example.test"}
	shards := []sharding.Shard{shard}
	owners := []string{"akash1alice", "akash1bob"}
	nss := []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "t-alice", Annotations: map[string]string{tenancy.OwnerKey: owners[0]}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "t-bob", Annotations: map[string]string{tenancy.OwnerKey: owners[1]}}},
	}
	names := []string{"web", "api", "shop"}
	deltas, kept := 0, 0
	for seed := range 40 {
		r := rand.New(rand.NewPCG(uint64(seed), 5))
		rec := NewFacts()
		var lhs []*shardgatev1alpha1.LeaseHost
		var routes []*gatewayv1.HTTPRoute
		uid := 0
		var last *gatewayapi.Ownership
		for step := range 80 {
			switch k := r.IntN(10); {
			case k < 4 || len(lhs) == 0:
				uid++
				o := r.IntN(2)
				lh := &shardgatev1alpha1.LeaseHost{
					ObjectMeta: metav1.ObjectMeta{Namespace: nss[o].Name, Name: fmt.Sprintf("lh-%d", uid), UID: types.UID(fmt.Sprintf("uid-%d", uid)),
						CreationTimestamp: metav1.Unix(int64(uid), 0)},
					Spec: shardgatev1alpha1.LeaseHostSpec{
						Lease:     shardgatev1alpha1.LeaseRef{Owner: owners[o], DSeq: uint64(uid), GSeq: 1},
						Subdomain: names[r.IntN(len(names))],
						Takeover:  r.IntN(2) == 0,
						Service:   shardgatev1alpha1.ServiceRef{Name: "web", Port: 80},
					},
				}
				lhs = append(slices.Clone(lhs), lh)
			case k < 6:
				i := r.IntN(len(lhs))
				lhs = slices.Delete(slices.Clone(lhs), i, i+1)
			case k < 8:
				// The LeaseHost controller's status hint.
				i := r.IntN(len(lhs))
				lh := lhs[i].DeepCopy()
				lh.Status.ReservedHosts = nil
				if g, ok := last.Generated[types.NamespacedName{Namespace: lh.Namespace, Name: lh.Name}]; ok && g.LeaseHost == lh.UID {
					lh.Status.ReservedHosts = slices.Clone(g.Hosts[shard.Gateway])
				}
				lhs = slices.Clone(lhs)
				lhs[i] = lh
			default:
				// The LeaseHost controller writes the generated routes.
				routes = nil
				for nn, g := range last.Generated {
					var hosts []gatewayv1.Hostname
					for _, h := range g.Hosts[shard.Gateway] {
						hosts = append(hosts, gatewayv1.Hostname(h))
					}
					routes = append(routes, &gatewayv1.HTTPRoute{
						ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name, OwnerReferences: []metav1.OwnerReference{{
							APIVersion: "shardgate.io/v1alpha1", Kind: "LeaseHost", Name: nn.Name, UID: g.LeaseHost, Controller: new(true)}}},
						Spec: gatewayv1.HTTPRouteSpec{Hostnames: hosts},
					})
				}
			}
			prev := rec.Last()
			got := rec.Next(FactsInput{LeaseHosts: lhs, Namespaces: nss, Shards: shards, Policy: tenancy.DefaultPolicy(), Routes: routes,
				Now: time.Date(2026, 1, 1, 0, 0, step, 0, time.UTC)})

			live := map[types.UID]bool{}
			for _, lh := range lhs {
				live[lh.UID] = true
			}
			want, _ := Handover(prev, Ownership(OwnershipInput{
				LeaseHosts: lhs, Namespaces: nss, Shards: shards, Policy: tenancy.DefaultPolicy(),
			}), routes, func(u types.UID) bool { return live[u] }, nil)
			if !reflect.DeepEqual(facts(got), facts(want)) {
				t.Fatalf("seed %d step %d: Next's facts differ from the reference:\n%+v\n%+v", seed, step, facts(got), facts(want))
			}
			if len(rec.of.kept) > 0 {
				kept++
			}
			if d := got.Delta; d != nil && got != prev {
				deltas++
				if prev == nil || d.Since != prev.Gen || got.Gen == prev.Gen {
					t.Fatalf("seed %d step %d: delta since %d, the last facts are generation %d (now %d)", seed, step, d.Since, prev.Gen, got.Gen)
				}
				for nn, g := range got.Generated {
					if p, ok := prev.Generated[nn]; (!ok || !reflect.DeepEqual(p, g)) && !slices.Contains(d.Routes, nn) {
						t.Fatalf("seed %d step %d: route %s changed, not in the delta %v", seed, step, nn, d.Routes)
					}
				}
				for nn := range prev.Generated {
					if _, ok := got.Generated[nn]; !ok && !slices.Contains(d.Routes, nn) {
						t.Fatalf("seed %d step %d: route %s dropped, not in the delta %v", seed, step, nn, d.Routes)
					}
				}
				if owners := !maps.Equal(prev.Holders, got.Holders) || !maps.Equal(prev.NamespaceOwners, got.NamespaceOwners); owners && !d.Owners {
					t.Fatalf("seed %d step %d: owners changed, the delta does not say so", seed, step)
				}
				if !maps.Equal(prev.Shards, got.Shards) {
					t.Fatalf("seed %d step %d: shards changed under a delta", seed, step)
				}
			}
			last = got
		}
	}
	t.Logf("steps with a delta: %d; with names kept through a handover: %d", deltas, kept)
	if deltas == 0 || kept == 0 {
		t.Errorf("the steps never made a delta (%d) or kept a name (%d)", deltas, kept)
	}
}

// facts is o without what says how it was made (generation, delta) and
// the deleted LeaseHosts (which depend on time).
func facts(o *gatewayapi.Ownership) gatewayapi.Ownership {
	c := *o
	c.Gen, c.Delta, c.Deleted = 0, nil, nil
	return c
}

// TestFactsRefusedShards: a Gateway Discover refused (not for its
// parameters) counts as a shard in the strict Generated mode; facts whose
// refused shards changed carry no delta; unchanged input gives the very
// same facts.
func TestFactsRefusedShards(t *testing.T) {
	shard := sharding.Shard{Name: "a", Gateway: types.NamespacedName{Namespace: "infra", Name: "a"}, Domain: "a.example.test"}
	bad := types.NamespacedName{Namespace: "infra", Name: "bad"}
	params := types.NamespacedName{Namespace: "infra", Name: "params"}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	in := FactsInput{Shards: []sharding.Shard{shard}, Policy: tenancy.DefaultPolicy(), Now: at}
	f := NewFacts()
	first := f.Next(in)
	if len(first.Shards) != 1 || first.Gen == 0 {
		t.Fatalf("one shard: facts %+v", first)
	}
	if again := f.Next(in); again != first {
		t.Fatal("the same input made new facts")
	}
	in.Problems = []sharding.Problem{
		{Gateway: bad, Reason: sharding.ReasonDuplicateShardName},
		{Gateway: params, Reason: sharding.ReasonInvalidParameters},
		{Gateway: bad, Reason: sharding.ReasonDuplicateShardName},
	}
	got := f.Next(in)
	if got.Shards[bad] != gatewayapi.RoutesGenerated || len(got.Shards) != 2 {
		t.Fatalf("refused shards: %v, want %s Generated beside %s (and not %s)", got.Shards, bad, shard.Gateway, params)
	}
	if got.Delta != nil || got.Gen <= first.Gen {
		t.Fatalf("facts with a new refused shard: gen %d after %d, delta %+v, want a new generation without a delta", got.Gen, first.Gen, got.Delta)
	}
	if len(first.Shards) != 1 {
		t.Fatal("the earlier facts were modified")
	}
}

// BenchmarkFactsNewLeaseHost: BenchmarkTrackerNewLeaseHost's LeaseHosts,
// through the facts the translator reads (the tracker, the handover, the
// generation and the delta): one more LeaseHost per operation.
func BenchmarkFactsNewLeaseHost(b *testing.B) {
	oin := benchOwnershipInput()
	in := FactsInput{LeaseHosts: oin.LeaseHosts, Namespaces: oin.Namespaces, Shards: oin.Shards, Policy: oin.Policy, Blocked: oin.Blocked, Now: time.Now()}
	f := NewFacts()
	f.Next(in)
	b.ReportAllocs()
	i := 0
	var out *gatewayapi.Ownership
	for b.Loop() {
		i++
		ns := fmt.Sprintf("lease-%d", i)
		owner := fmt.Sprintf("akash1new%d", i)
		in.Namespaces = append(in.Namespaces, ownedNS(ns, owner))
		in.LeaseHosts = append(in.LeaseHosts, hostLH(ns, "web", fmt.Sprintf("uid-new-%d", i), owner, 1,
			fmt.Sprintf("new%d.example.test", i), 20000+int64(i)))
		out = f.Next(in)
	}
	nn := types.NamespacedName{Namespace: fmt.Sprintf("lease-%d", i), Name: "web"}
	if _, ok := out.Generated[nn]; !ok || out.Delta == nil || !slices.Contains(out.Delta.Routes, nn) {
		b.Fatalf("the new LeaseHost's route is not generated, or not in the delta %+v", out.Delta)
	}
}
