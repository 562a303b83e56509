/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/hostnames"
)

// TestTranslatorOwnershipEditsMatchTranslate: two shards, one in Generated
// mode and one in Owned mode, with routes on both (and wildcard routes);
// each step changes the ownership facts the way LeaseHosts do (a route's
// generated entry added, dropped or holding other names; names changing
// holders; namespaces changing owners; the block list changing), alone or
// with a new lease (Service, route and its generated entry
// together) or a deleted route. After every step the Translator's output
// equals a fresh Translate; the steps that changed generated entries only
// are patches, not full translations.
func TestTranslatorOwnershipEditsMatchTranslate(t *testing.T) {
	gw, gw2 := types.NamespacedName{Namespace: "default", Name: "gw"}, types.NamespacedName{Namespace: "default", Name: "gw2"}
	owners := []string{"akash1alice", "akash1bob", "akash1carol"}
	seeds, steps := 30, 40
	if testing.Short() {
		seeds = 5
	}
	var stats TranslatorStats
	seen := map[string]int{}
	generatedOnly, generatedOnlyFull := 0, 0
	flips := 0 // routes a patch attached again because their tenant's other routes changed
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 11))
		rv := 0
		in := benchInput(40)
		g2 := in.Gateways[0].DeepCopy()
		g2.Name = gw2.Name
		in.Gateways = append(in.Gateways, g2)
		// gw: a listener for example.com beside the hostless one (as the
		// demo's shard-a), so a route's name held on gw2 only would be
		// matched on gw by the hostless listener.
		wild := in.Gateways[0].Spec.Listeners[0]
		wild.Name, wild.Hostname = "apps", ptrTo(gatewayv1.Hostname("*.example.com"))
		in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, wild)
		in.Runtime[gw2] = in.Runtime[gw]
		for i, rt := range in.HTTPRoutes {
			ownedRoute(r, rt, i)
		}
		stamp(in, &rv)
		o := &Ownership{
			Shards:          map[types.NamespacedName]ShardRoutes{gw: RoutesGenerated, gw2: RoutesOwned},
			Generated:       map[types.NamespacedName]GeneratedRoute{},
			NamespaceOwners: map[string]string{},
			Holders:         map[string]string{},
		}
		for i := range 500 {
			if r.IntN(4) > 0 {
				o.NamespaceOwners[fmt.Sprintf("lease-%d", i)] = owners[i%len(owners)]
			}
		}
		for i := range 60 {
			if r.IntN(3) > 0 {
				o.Holders[fmt.Sprintf("app-%d.example.com", i)] = owners[r.IntN(len(owners))]
			}
		}
		generateSome(r, o, in.HTTPRoutes, 0.5)
		in.Ownership = o
		// Half the seeds bound each tenant (about 13 routes of each owner
		// per shard) tightly: an edit of one route, or a namespace
		// changing owners, changes the admission of others.
		if seed%2 == 1 {
			in.TenantLimits = TenantLimits{Routes: 2 + r.IntN(10), Rules: r.IntN(12), Matches: r.IntN(14)}
		}

		st := NewStore(testController)
		tr := NewTranslator(st)
		prev := &Input{}
		gen := uint64(0)
		lastGeneratedOnly := false
		for step := range steps {
			applyShuffled(r, st, prev, in)
			before := tr.Stats
			got, want := tr.Translate(FactsOf(in)), Translate(in)
			if !sameOutput(got, want) {
				t.Fatalf("seed %d step %d: the Translator's output differs from Translate's (stats %+v):\n%s", seed, step, tr.Stats, cmp.Diff(bare(want), bare(got)))
			}
			if tr.Stats.Patched > before.Patched {
				for _, st := range tr.gateways {
					flips += len(st.limitFlips)
					st.limitFlips = nil
				}
			}
			for k, ps := range want.HTTPRouteStatus.All() {
				for _, p := range ps {
					if c := meta.FindStatusCondition(p.Conditions, string(gatewayv1.RouteConditionAccepted)); c != nil {
						g, generated := in.Ownership.Generated[k]
						seen[fmt.Sprintf("%s generated=%v %s", p.ParentRef.Name, generated, c.Reason)]++
						if generated && c.Status == metav1.ConditionTrue && splitElsewhere(g, types.NamespacedName{Namespace: "default", Name: string(p.ParentRef.Name)}) {
							seen[fmt.Sprintf("%s split Accepted", p.ParentRef.Name)]++
						}
					}
				}
			}
			// Without tenant limits: with them, an entry's change can
			// flip the admission of another route of its tenant, and a
			// flipped route with a wildcard or no hostname is assembled
			// in full, as any change of such a route is.
			if lastGeneratedOnly && !in.TenantLimits.enabled() {
				generatedOnly++
				if tr.Stats.Full > before.Full {
					generatedOnlyFull++
				}
			}
			lastGeneratedOnly = false
			prev = in
			next := *in
			o := *in.Ownership
			var delta *OwnershipDelta
			switch r.IntN(6) {
			case 0, 1:
				// A LeaseHost comes, goes or changes its names: one
				// generated entry changes, nothing else.
				o.Generated = maps.Clone(o.Generated)
				rt := in.HTTPRoutes[r.IntN(len(in.HTTPRoutes))]
				k := types.NamespacedName{Namespace: rt.Namespace, Name: rt.Name}
				if _, ok := o.Generated[k]; ok && r.IntN(2) == 0 {
					delete(o.Generated, k)
				} else {
					generateSome(r, &o, []*gatewayv1.HTTPRoute{rt}, 1)
				}
				// A patch takes routes with plain hostnames only.
				lastGeneratedOnly = !slices.ContainsFunc(rt.Spec.Hostnames, func(h gatewayv1.Hostname) bool { return h[0] == '*' })
				// As the controller says it, most of the time: which
				// route changed since the last facts.
				if r.IntN(4) > 0 {
					delta = &OwnershipDelta{Routes: []types.NamespacedName{k}}
				}
			case 2:
				// A new lease: its Service and route, with the route
				// generated for its LeaseHost.
				i := 1000 + step
				svc, rt := benchLease(i)
				ownedRoute(r, rt, i)
				for _, obj := range []client.Object{svc, rt} {
					rv++
					obj.SetResourceVersion(fmt.Sprint(rv))
					obj.SetUID(types.UID(fmt.Sprint("uid-", rv)))
				}
				next.Services = append(slices.Clone(in.Services), svc)
				next.HTTPRoutes = append(slices.Clone(in.HTTPRoutes), rt)
				o.Generated = maps.Clone(o.Generated)
				generateSome(r, &o, []*gatewayv1.HTTPRoute{rt}, 1)
				if r.IntN(4) > 0 {
					delta = &OwnershipDelta{Routes: []types.NamespacedName{{Namespace: rt.Namespace, Name: rt.Name}}}
				}
			case 3:
				// Names change holders, namespaces owners.
				o.Holders, o.NamespaceOwners = maps.Clone(o.Holders), maps.Clone(o.NamespaceOwners)
				for i := range 60 {
					h := fmt.Sprintf("app-%d.example.com", i)
					switch r.IntN(10) {
					case 0:
						delete(o.Holders, h)
					case 1:
						o.Holders[h] = owners[r.IntN(len(owners))]
					}
				}
				for i := range 50 {
					if r.IntN(10) == 0 {
						o.NamespaceOwners[fmt.Sprintf("lease-%d", i)] = owners[r.IntN(len(owners))]
					}
				}
				if r.IntN(4) > 0 {
					delta = &OwnershipDelta{Owners: true}
				}
			case 4:
				// The block list changes.
				o.Blocked = []*hostnames.BlockList{nil, hostnames.MustBlockList("app-3.example.com"), hostnames.MustBlockList(".example.com")}[r.IntN(3)]
			case 5:
				// A route deleted, its generated entry kept a while (its
				// LeaseHost is being deleted).
				k := r.IntN(len(in.HTTPRoutes))
				next.HTTPRoutes = slices.Delete(slices.Clone(in.HTTPRoutes), k, k+1)
			}
			// Each facts a generation of their own; a delta from the
			// last facts' when the step made one.
			gen++
			o.Gen, o.Delta = gen, nil
			if delta != nil {
				delta.Since = in.Ownership.Gen
				o.Delta = delta
			}
			next.Ownership = &o
			in = &next
		}
		stats.Full += tr.Stats.Full
		stats.Patched += tr.Stats.Patched
		stats.Reused += tr.Stats.Reused
	}
	t.Logf("Gateway translations: %+v; route parents by shard, generated, Accepted reason: %v", stats, seen)
	for _, want := range []string{
		"gw generated=true Accepted", "gw generated=true HostnameNotOwned", "gw generated=false HostnameNotOwned",
		"gw2 generated=false Accepted", "gw2 generated=false HostnameNotOwned",
		"gw split Accepted", "gw2 split Accepted",
		"gw generated=true TenantLimitExceeded", "gw2 generated=false TenantLimitExceeded",
	} {
		if seen[want] == 0 {
			t.Errorf("the edits never produced %q", want)
		}
	}
	if stats.Patched == 0 {
		t.Errorf("no patch: %+v", stats)
	}
	t.Logf("routes whose admission a patch changed through another route of their tenant: %d", flips)
	if flips == 0 {
		t.Errorf("no patch changed the admission of a route through another route of its tenant")
	}
	// A generated entry changed alone is patched into its shards, as any
	// change of a route with plain hostnames is.
	t.Logf("generated-only steps: %d, of which with a full assembly: %d", generatedOnly, generatedOnlyFull)
	if generatedOnly == 0 || generatedOnlyFull > 0 {
		t.Errorf("generated-only steps: %d, of which with a full assembly: %d", generatedOnly, generatedOnlyFull)
	}
}

// ownedRoute gives rt, route i of a benchmark input, the shape of a
// generated route: a controller reference to its LeaseHost (none for
// some, as Akash mode's routes have), on both shards for some, and a
// wildcard hostname for a few.
func ownedRoute(r *rand.Rand, rt *gatewayv1.HTTPRoute, i int) {
	if r.IntN(4) > 0 {
		yes := true
		rt.OwnerReferences = []metav1.OwnerReference{{APIVersion: "shardgate.io/v1alpha1", Kind: "LeaseHost", Name: rt.Name,
			UID: types.UID(fmt.Sprintf("uid-lh-%d", i)), Controller: &yes}}
	}
	switch r.IntN(3) {
	case 0:
		rt.Spec.ParentRefs[0].Name = "gw2"
	case 1:
		rt.Spec.ParentRefs = append(rt.Spec.ParentRefs, rt.Spec.ParentRefs[0])
		rt.Spec.ParentRefs[1].Name = "gw2"
		// A subdomain's route, for some: one name per shard.
		if r.IntN(2) == 0 {
			rt.Spec.Hostnames = append(rt.Spec.Hostnames, gatewayv1.Hostname(fmt.Sprintf("app-%d.gw2.example.net", i)))
		}
	}
	if r.IntN(8) == 0 {
		rt.Spec.Hostnames = append(rt.Spec.Hostnames, gatewayv1.Hostname(fmt.Sprintf("*.app-%d.example.com", i%60)))
	}
}

// TestTranslatorListenerSetFollowsHolders: on a shard in Generated mode,
// which reads no holder for its routes, a ListenerSet listener's hostname
// is still checked against the holders. When the name changes hands (with
// a delta saying the owners changed, or none), the Translator refuses the
// listener as a fresh Translate does, and admits it again when the name
// comes back.
func TestTranslatorListenerSetFollowsHolders(t *testing.T) {
	lsKey := types.NamespacedName{Namespace: bobNS, Name: "own"}
	for _, withDelta := range []bool{false, true} {
		in := ownershipInput(RoutesGenerated)
		allowAll(in, shardGW)
		in.ListenerSets = []*gatewayv1.ListenerSet{listenerSet(bobNS, "own", shardGW, 200, httpEntry("http", "bob.example.test"))}
		in.HTTPRoutes = append(in.HTTPRoutes, lsRoute(bobNS, "r", "own", "bob.example.test"))
		in.Ownership.Gen = 1
		_, tr, _, out := translatorOver(in)
		if c := lsCondition(out, lsKey, "http", "Accepted"); c != "True/Accepted" {
			t.Fatalf("bob holds his name: listener Accepted = %s", c)
		}
		for step, holder := range []string{"akash1alice", "akash1bob"} {
			o := *in.Ownership
			o.Holders = maps.Clone(o.Holders)
			o.Holders["bob.example.test"] = holder
			o.Gen, o.Delta = o.Gen+1, nil
			if withDelta {
				o.Delta = &OwnershipDelta{Since: in.Ownership.Gen, Owners: true}
			}
			next := *in
			next.Ownership = &o
			in = &next
			got, want := tr.Translate(FactsOf(in)), Translate(in)
			if !sameOutput(got, want) {
				t.Fatalf("delta %v, step %d: the Translator differs from Translate:\n%s", withDelta, step, cmp.Diff(bare(want), bare(got)))
			}
			wantCond := "True/Accepted"
			if holder != "akash1bob" {
				wantCond = "False/" + shardgatev1alpha1.ReasonHostnameNotOwned
			}
			if c := lsCondition(got, lsKey, "http", "Accepted"); c != wantCond {
				t.Fatalf("delta %v, step %d: listener Accepted = %s, want %s", withDelta, step, c, wantCond)
			}
		}
	}
}

// generateSome makes each of routes, with probability p, one shardgate
// generates: a Generated entry under the route's controller (or Unowned
// when it has none, as in Akash mode), holding some of its hostnames on
// the shards among its parents; sometimes under another LeaseHost's UID,
// which generates nothing.
func generateSome(r *rand.Rand, o *Ownership, routes []*gatewayv1.HTTPRoute, p float64) {
	for _, rt := range routes {
		if r.Float64() >= p {
			continue
		}
		g := GeneratedRoute{Hosts: map[types.NamespacedName][]string{}}
		if ref := metav1.GetControllerOf(rt); ref != nil {
			g.LeaseHost = ref.UID
		} else {
			g.LeaseHost, g.Unowned = "uid-provider", true
		}
		if r.IntN(6) == 0 {
			g.LeaseHost, g.Unowned = "uid-another", false
		}
		// Mostly, as a subdomain's LeaseHost: the names of gw2's domain
		// (gw2.example.net) on gw2 only, the others on the other shards.
		split := r.IntN(4) > 0
		for _, ref := range rt.Spec.ParentRefs {
			gw := types.NamespacedName{Namespace: rt.Namespace, Name: string(ref.Name)}
			if ref.Namespace != nil {
				gw.Namespace = string(*ref.Namespace)
			}
			if _, shard := o.Shards[gw]; !shard {
				continue
			}
			for _, h := range rt.Spec.Hostnames {
				if split && strings.HasSuffix(string(h), ".gw2.example.net") != (gw.Name == "gw2") {
					continue
				}
				if r.IntN(4) > 0 && !slices.Contains(g.Hosts[gw], string(h)) {
					g.Hosts[gw] = append(g.Hosts[gw], string(h))
				}
			}
		}
		o.Generated[types.NamespacedName{Namespace: rt.Namespace, Name: rt.Name}] = g
	}
}

// splitElsewhere: g holds on gw a name and on another shard a name it
// does not hold on gw (a subdomain's route, one name per shard).
func splitElsewhere(g GeneratedRoute, gw types.NamespacedName) bool {
	if len(g.Hosts[gw]) == 0 {
		return false
	}
	for other, hosts := range g.Hosts {
		if other == gw {
			continue
		}
		for _, h := range hosts {
			if !slices.Contains(g.Hosts[gw], h) {
				return true
			}
		}
	}
	return false
}
