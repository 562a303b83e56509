package leasehosts

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/sharding"
)

func ownedNS(name, owner string) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if owner != "" {
		ns.Annotations = map[string]string{tenancy.OwnerKey: owner}
	}
	return ns
}

func hostLH(ns, name, uid, owner string, dseq uint64, host string, created int64) *shardgatev1alpha1.LeaseHost {
	return &shardgatev1alpha1.LeaseHost{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), CreationTimestamp: metav1.Unix(created, 0)},
		Spec: shardgatev1alpha1.LeaseHostSpec{
			Lease:    shardgatev1alpha1.LeaseRef{Owner: owner, DSeq: dseq, GSeq: 1},
			Hostname: host,
			Service:  shardgatev1alpha1.ServiceRef{Name: "web", Port: 80},
		},
	}
}

// TestOwnership: the facts the translator gets come from the engine and
// the namespaces' owner markings only; what a tenant writes in its own
// namespace (a LeaseHost naming another owner, with takeover; a forged
// lease-owner label; a LeaseHost status claiming a name) moves nothing.
func TestOwnership(t *testing.T) {
	alice := hostLH("tenant-a", "shop", "uid-a", "akash1alice", 1, "shop.example.test", 10)
	alice.Status.ReservedHosts = []string{"shop.example.test"}
	// B, in its own namespace, names A's owner and takes over.
	spoof := hostLH("tenant-b", "steal", "uid-b", "akash1alice", 2, "shop.example.test", 20)
	spoof.Spec.Takeover = true
	// B's own name, with a forged hint for A's other name in its status.
	own := hostLH("tenant-b", "own", "uid-b2", "akash1bob", 3, "bob.example.test", 30)
	own.Status.ReservedHosts = []string{"bob.example.test", "other.example.test"}
	// A LeaseHost in an unmarked namespace, and a blocked look-alike.
	stray := hostLH("stray", "free", "uid-c", "akash1carol", 4, "free.example.test", 40)
	homograph := hostLH("tenant-b", "apple", "uid-b3", "akash1bob", 5, "xn--80ak6aa92e.com", 50)
	sub := subdomainLH("web")
	sub.Namespace, sub.UID, sub.Spec.Lease.Owner = "tenant-a", "uid-a2", "akash1alice"
	// A LeaseHost being deleted claims nothing.
	leaving := hostLH("tenant-a", "leaving", "uid-a3", "akash1alice", 6, "leaving.example.test", 60)
	leaving.DeletionTimestamp = &metav1.Time{}

	got := Ownership(OwnershipInput{
		LeaseHosts: []*shardgatev1alpha1.LeaseHost{alice, spoof, own, stray, homograph, sub, leaving},
		Namespaces: []*corev1.Namespace{ownedNS("tenant-a", "akash1alice"), ownedNS("tenant-b", "akash1bob"), ownedNS("stray", "")},
		Shards:     []sharding.Shard{shardA, shardB},
		Routes:     map[types.NamespacedName]gatewayapi.ShardRoutes{shardB.Gateway: gatewayapi.RoutesOwned},
		Policy:     tenancy.DefaultPolicy(),
		Blocked:    hostnames.MustBlockList(".apple.com"),
	})
	want := &gatewayapi.Ownership{
		Shards: map[types.NamespacedName]gatewayapi.ShardRoutes{shardA.Gateway: gatewayapi.RoutesGenerated, shardB.Gateway: gatewayapi.RoutesOwned},
		Generated: map[types.NamespacedName]gatewayapi.GeneratedRoute{
			{Namespace: "tenant-a", Name: "shop"}: {LeaseHost: "uid-a", Hosts: map[types.NamespacedName][]string{
				shardA.Gateway: {"shop.example.test"}, shardB.Gateway: {"shop.example.test"}}},
			{Namespace: "tenant-b", Name: "own"}: {LeaseHost: "uid-b2", Hosts: map[types.NamespacedName][]string{
				shardA.Gateway: {"bob.example.test"}, shardB.Gateway: {"bob.example.test"}}},
			{Namespace: "tenant-a", Name: "web"}: {LeaseHost: "uid-a2", Hosts: map[types.NamespacedName][]string{
				shardA.Gateway: {"web.a.example.test"}, shardB.Gateway: {"web.b.example.test"}}},
		},
		NamespaceOwners: map[string]string{"tenant-a": "akash1alice", "tenant-b": "akash1bob"},
		Holders: map[string]string{"shop.example.test": "akash1alice", "bob.example.test": "akash1bob",
			"web.a.example.test": "akash1alice", "web.b.example.test": "akash1alice"},
		Blocked: hostnames.MustBlockList(".apple.com"),
		// The routes of the LeaseHosts that hold nothing, which the
		// LeaseHost controller deletes.
		Retiring: map[types.NamespacedName]types.UID{
			{Namespace: "tenant-b", Name: "steal"}:   "uid-b",
			{Namespace: "stray", Name: "free"}:       "uid-c",
			{Namespace: "tenant-b", Name: "apple"}:   "uid-b3",
			{Namespace: "tenant-a", Name: "leaving"}: "uid-a3",
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Ownership =\n%+v\nwant\n%+v", got, want)
	}
	for nn, uid := range want.Retiring {
		if !got.RetiringRoute(nn, leaseHostRef(uid)) {
			t.Errorf("RetiringRoute(%s, %s) = false, want true", nn, uid)
		}
		if got.RetiringRoute(nn, leaseHostRef("uid-b2")) {
			t.Errorf("RetiringRoute(%s) of a route another LeaseHost controls = true, want false", nn)
		}
	}
	shop := types.NamespacedName{Namespace: "tenant-a", Name: "shop"}
	if got.RetiringRoute(shop, leaseHostRef("uid-a")) {
		t.Error("RetiringRoute of a route whose LeaseHost holds its name = true, want false")
	}
	// A route whose controller is a LeaseHost that was deleted is being
	// deleted; one whose controller UID never was a LeaseHost's (forged),
	// or is an object of another kind, is not.
	orphan := types.NamespacedName{Namespace: "tenant-a", Name: "closed"}
	if got.RetiringRoute(orphan, leaseHostRef("uid-gone")) {
		t.Error("RetiringRoute of a route whose controller UID is no LeaseHost's = true, want false")
	}
	got.Deleted = map[types.UID]bool{"uid-gone": true}
	if !got.RetiringRoute(orphan, leaseHostRef("uid-gone")) {
		t.Error("RetiringRoute of a route whose LeaseHost was deleted = false, want true")
	}
	other := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "LeaseHost", Name: "x", UID: "uid-gone"}
	if got.RetiringRoute(orphan, other) {
		t.Error("RetiringRoute of a route controlled by another API group's object = true, want false")
	}
}

func leaseHostRef(uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: shardgatev1alpha1.GroupVersion.String(), Kind: "LeaseHost", Name: "lh", UID: uid, Controller: new(true)}
}

// TestHandover: a name moving between one owner's LeaseHosts stays with
// the old holder's route until the new holder's route carries it; a name
// moving to another owner, or released, is never kept.
func TestHandover(t *testing.T) {
	gw := shardA.Gateway
	oldRoute := types.NamespacedName{Namespace: "tenant-a", Name: "old"}
	newRoute := types.NamespacedName{Namespace: "tenant-a2", Name: "new"}
	facts := func(holderOwner string, holders map[types.NamespacedName]gatewayapi.GeneratedRoute) *gatewayapi.Ownership {
		return &gatewayapi.Ownership{
			Shards:    map[types.NamespacedName]gatewayapi.ShardRoutes{gw: gatewayapi.RoutesGenerated},
			Generated: holders,
			Holders:   map[string]string{"n.example.test": holderOwner},
		}
	}
	held := func(uid string) gatewayapi.GeneratedRoute {
		return gatewayapi.GeneratedRoute{LeaseHost: types.UID(uid), Hosts: map[types.NamespacedName][]string{gw: {"n.example.test"}}}
	}
	prev := facts("akash1alice", map[types.NamespacedName]gatewayapi.GeneratedRoute{oldRoute: held("uid-old")})
	next := facts("akash1alice", map[types.NamespacedName]gatewayapi.GeneratedRoute{newRoute: held("uid-new")})
	next.Retiring = map[types.NamespacedName]types.UID{oldRoute: "uid-old"} // its LeaseHost holds nothing now
	liveSet := map[types.UID]bool{"uid-old": true, "uid-new": true}
	live := func(uid types.UID) bool { return liveSet[uid] }
	// Handover over every route, and over the routes whose entries
	// differ only: the same result.
	handover := func(prev, next *gatewayapi.Ownership, routes []*gatewayv1.HTTPRoute, live func(types.UID) bool) *gatewayapi.Ownership {
		t.Helper()
		all, keptAll := Handover(prev, next, routes, live, nil)
		var differ []types.NamespacedName
		for k, g := range prev.Generated {
			if n, ok := next.Generated[k]; !ok || !reflect.DeepEqual(n, g) {
				differ = append(differ, k)
			}
		}
		some, keptSome := Handover(prev, next, routes, live, slices.Values(differ))
		if !reflect.DeepEqual(all, some) || !reflect.DeepEqual(keptAll, keptSome) {
			t.Fatalf("Handover over the changed routes differs from Handover over all: %+v / %v, %+v / %v", some, keptSome, all, keptAll)
		}
		if (all == next) != (len(keptAll) == 0) {
			t.Fatalf("kept routes %v, yet the result is next: %v", keptAll, all == next)
		}
		return all
	}
	route := func(nn types.NamespacedName, uid string, hosts ...gatewayv1.Hostname) *gatewayv1.HTTPRoute {
		return &gatewayv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "shardgate.io/v1alpha1", Kind: "LeaseHost", Name: nn.Name, UID: types.UID(uid), Controller: new(true)}}},
			Spec: gatewayv1.HTTPRouteSpec{Hostnames: hosts},
		}
	}
	oldR := route(oldRoute, "uid-old", "n.example.test")

	// The new holder has no route yet: the old one keeps the name.
	got := handover(prev, next, []*gatewayv1.HTTPRoute{oldR}, live)
	if g, ok := got.Generated[oldRoute]; !ok || g.LeaseHost != "uid-old" || !reflect.DeepEqual(g.Hosts[gw], []string{"n.example.test"}) {
		t.Fatalf("no route of the new holder yet: old route's entry = %+v, want it kept", got.Generated[oldRoute])
	}
	if _, touched := next.Generated[oldRoute]; touched {
		t.Fatal("Handover modified next")
	}
	// While it serves the name, the old route is not one being deleted.
	if got.RetiringRoute(oldRoute, leaseHostRef("uid-old")) {
		t.Fatal("a route kept serving through a handover counts as retiring")
	}
	if !next.RetiringRoute(oldRoute, leaseHostRef("uid-old")) {
		t.Fatal("without the handover, the old route should count as retiring")
	}
	// Carried from one translation to the next while the new route lacks it.
	again := handover(got, next, []*gatewayv1.HTTPRoute{oldR, route(newRoute, "uid-new")}, live)
	if _, ok := again.Generated[oldRoute]; !ok {
		t.Fatal("new route without the name: the old route's grace was dropped")
	}
	// The new route carries it: handed over.
	if done := handover(again, next, []*gatewayv1.HTTPRoute{oldR, route(newRoute, "uid-new", "n.example.test")}, live); done != next {
		t.Fatalf("new route carries the name: got %+v, want next unchanged", done.Generated)
	}
	// A route by the new route's name that another UID controls does not count.
	if forged := handover(prev, next, []*gatewayv1.HTTPRoute{oldR, route(newRoute, "uid-forged", "n.example.test")}, live); forged == next {
		t.Fatal("a route the new holder does not control ended the grace")
	}
	// Across owners: never kept.
	other := facts("akash1bob", next.Generated)
	if got := handover(prev, other, []*gatewayv1.HTTPRoute{oldR}, live); got != other {
		t.Fatalf("cross-owner move kept the old route: %+v", got.Generated)
	}
	// Released (nobody holds it now): never kept.
	released := facts("", map[types.NamespacedName]gatewayapi.GeneratedRoute{})
	if got := handover(prev, released, []*gatewayv1.HTTPRoute{oldR}, live); got != released {
		t.Fatalf("released name kept: %+v", got.Generated)
	}
	// The old LeaseHost is gone: nothing kept.
	if got := handover(prev, next, []*gatewayv1.HTTPRoute{oldR}, func(uid types.UID) bool { return uid == "uid-new" }); got != next {
		t.Fatalf("deleted LeaseHost's route kept: %+v", got.Generated)
	}
}

// benchOwnershipInput is 10,000 LeaseHosts of 100 owners, each in its
// own namespace, one name each, on two shards.
func benchOwnershipInput() OwnershipInput {
	var lhs []*shardgatev1alpha1.LeaseHost
	var nss []*corev1.Namespace
	for o := range 100 {
		ns := fmt.Sprintf("tenant-%d", o)
		owner := fmt.Sprintf("akash1owner%d", o)
		nss = append(nss, ownedNS(ns, owner))
		for i := range 100 {
			lhs = append(lhs, hostLH(ns, fmt.Sprintf("lh-%d", i), fmt.Sprintf("uid-%d-%d", o, i), owner, uint64(i+1),
				fmt.Sprintf("h%d.o%d.example.test", i, o), int64(o*100+i)))
		}
	}
	return OwnershipInput{LeaseHosts: lhs, Namespaces: nss, Shards: []sharding.Shard{shardA, shardB},
		Policy: tenancy.DefaultPolicy(), Blocked: hostnames.MustBlockList(".apple.com")}
}

// BenchmarkOwnership: the cost of the facts the controller recomputes when
// a LeaseHost, a Namespace, a shard or the block list changes (10,000
// LeaseHosts of 100 owners on two shards).
func BenchmarkOwnership(b *testing.B) {
	in := benchOwnershipInput()
	b.ReportAllocs()
	for b.Loop() {
		Ownership(in)
	}
}

// TestTrackerKeepsFactsOfStatusUpdates: a new version of a LeaseHost
// that changes no fact (its conditions, or the status hint of a name a
// block revoked) gives the same Ownership, not a new one.
func TestTrackerKeepsFactsOfStatusUpdates(t *testing.T) {
	blocked := hostnames.MustBlockList(".blocked.test")
	shop := hostLH("tenant-a", "shop", "uid-a", "akash1alice", 1, "shop.example.test", 10)
	shop.Status.ReservedHosts = []string{"shop.example.test"}
	// Held until a block revoked it: the hint is still there.
	revoked := hostLH("tenant-a", "bad", "uid-b", "akash1alice", 2, "x.blocked.test", 20)
	revoked.Status.ReservedHosts = []string{"x.blocked.test"}
	cases := []struct {
		name   string
		of     *shardgatev1alpha1.LeaseHost
		change func(lh *shardgatev1alpha1.LeaseHost)
	}{
		{"conditions only", shop, func(lh *shardgatev1alpha1.LeaseHost) {
			lh.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Pending"}}
		}},
		{"the hint of a blocked name dropped", revoked, func(lh *shardgatev1alpha1.LeaseHost) { lh.Status.ReservedHosts = nil }},
		{"the hint of a blocked name added", revoked, func(lh *shardgatev1alpha1.LeaseHost) {
			lh.Status.ReservedHosts = append(lh.Status.ReservedHosts, "y.blocked.test")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := OwnershipInput{
				LeaseHosts: []*shardgatev1alpha1.LeaseHost{shop, revoked},
				Namespaces: []*corev1.Namespace{ownedNS("tenant-a", "akash1alice")},
				Shards:     []sharding.Shard{shardA},
				Policy:     tenancy.DefaultPolicy(),
				Blocked:    blocked,
			}
			tr := NewTracker()
			before, _ := tr.Update(in)
			next := c.of.DeepCopy()
			c.change(next)
			in.LeaseHosts = []*shardgatev1alpha1.LeaseHost{shop, revoked}
			in.LeaseHosts[slices.Index(in.LeaseHosts, c.of)] = next
			if after, ch := tr.Update(in); after != before || ch.All || len(ch.Routes) > 0 {
				t.Fatalf("a new Ownership (%+v), or a change %+v", after, ch)
			}
			if !reflect.DeepEqual(before, Ownership(in)) {
				t.Fatal("the facts differ from Ownership's")
			}
		})
	}
}
