package leasehosts

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/tenancy"
)

// TestClaimsShareOneEngine: LeaseHosts and the provider's objects claim
// in one engine, each kind's Claims keeping its own objects: a change one
// kind's claim causes names the other kind's object to that kind only; an
// object deleted and created again under its name is told apart by UID;
// a refused plan releases everything; and HoldsRoute follows the engine.
func TestClaimsShareOneEngine(t *testing.T) {
	engine := hostnames.New(nil)
	tenants := NewClaims(engine, LeaseHostKind)
	provider := NewClaims(engine, Kind{Provider: true, RouteAnnotations: []string{"a"}})
	const host = "web.example.test"

	a := hostLH("t-alice", "web", "uid-a", "akash1alice", 1, host, 1)
	aNN := types.NamespacedName{Namespace: a.Namespace, Name: a.Name}
	d, ch := tenants.Claim(aNN, a, aNN, PlanFor(a, nil))
	if !d[host].Reserved || len(ch) != 0 {
		t.Fatalf("first claim: %+v, changes %+v", d, ch)
	}

	p := hostLH("lease-bob", host, "uid-p", "akash1bob", 2, host, 2)
	pNN := types.NamespacedName{Namespace: "akash-services", Name: "p"}
	pRoute := types.NamespacedName{Namespace: "lease-bob", Name: host}
	d, ch = provider.Claim(pNN, p, pRoute, PlanFor(p, nil))
	if d[host].Reserved || d[host].Reason != hostnames.ReasonHostnameInUse {
		t.Fatalf("the provider's claim of a held name: %+v, want HostnameInUse", d[host])
	}
	if got := tenants.Changed(ch, types.NamespacedName{}); len(got) != 0 {
		t.Fatalf("the provider's claim changed LeaseHosts %v", got)
	}
	if provider.HoldsRoute(pRoute) {
		t.Fatal("a route whose object holds no name counts as held")
	}
	if rt, ok := provider.Route("uid-p"); !ok || rt != pRoute {
		t.Fatalf("route of uid-p: %v %v", rt, ok)
	}

	// The LeaseHost deleted and created again under its name: the old
	// object's claims go by its UID, the new one's stay.
	a2 := a.DeepCopy()
	a2.UID = "uid-a2"
	tenants.Record(aNN, a2.UID, aNN)
	stale, routes := tenants.Drop(aNN, a2.UID)
	if len(stale) != 1 || stale[0] != "uid-a" || len(routes) != 1 || routes[0] != aNN {
		t.Fatalf("replaced: stale %v routes %v, want uid-a and its route", stale, routes)
	}
	ch = tenants.Release(stale)
	if got := provider.Changed(ch, types.NamespacedName{}); len(got) != 1 || got[0].NamespacedName != pNN || got[0].UID != "uid-p" {
		t.Fatalf("the release promoted %v, want the provider's object %s", got, pNN)
	}
	if got := provider.Changed(ch, pNN); len(got) != 0 {
		t.Fatalf("changes of self reported: %v", got)
	}
	if !provider.HoldsRoute(pRoute) {
		t.Fatal("the promoted object's route is not held")
	}
	d, ch = tenants.Claim(aNN, a2, aNN, PlanFor(a2, nil))
	if d[host].Reserved || len(ch) != 0 {
		t.Fatalf("the new LeaseHost's claim of the name the provider holds now: %+v, changes %+v", d[host], ch)
	}

	// A refusal releases every claim: nothing held, nothing waiting.
	refused := PlanFor(p, nil)
	refused.Refusal = &hostnames.Decision{Reason: shardgatev1alpha1.ReasonNamespaceOwnerMismatch, Message: "not yours"}
	d, ch = provider.Claim(pNN, p, pRoute, refused)
	if d[host].Reserved || d[host].Reason != shardgatev1alpha1.ReasonNamespaceOwnerMismatch || len(engine.ClaimsOf("uid-p")) != 0 {
		t.Fatalf("refused: %+v, claims left %v", d[host], engine.ClaimsOf("uid-p"))
	}
	if got := tenants.Changed(ch, types.NamespacedName{}); len(got) != 1 || got[0].UID != "uid-a2" {
		t.Fatalf("the refusal promoted %v, want uid-a2", got)
	}

	// Everything of a name dropped: nothing of it is left.
	gone, _ := tenants.Drop(aNN, "")
	if len(gone) != 1 || gone[0] != "uid-a2" || len(tenants.Changed([]hostnames.Change{{UID: ClaimUID("uid-a2", host)}}, types.NamespacedName{})) != 0 {
		t.Fatalf("dropped %v; the dropped object must no longer be named by changes", gone)
	}
	if gone, routes := tenants.Drop(aNN, ""); gone != nil || routes != nil {
		t.Fatalf("dropped twice: %v %v", gone, routes)
	}

	// The cold start: a refused object is recorded and claims nothing;
	// another claims its names with its hint.
	cold := NewClaims(hostnames.New(nil), LeaseHostKind)
	if cs := cold.Restored(pNN, p, pRoute, refused); cs != nil {
		t.Fatalf("a refused object's claimants on a cold start: %+v", cs)
	}
	hinted := a.DeepCopy()
	hinted.Status.ReservedHosts = []string{host}
	cs := cold.Restored(aNN, hinted, aNN, PlanFor(hinted, nil))
	if len(cs) != 1 || cs[0].Host != host || !cs[0].Holding {
		t.Fatalf("a hinted object's claimants on a cold start: %+v", cs)
	}
	if got := cold.Changed([]hostnames.Change{{UID: ClaimUID("uid-p", host)}, {UID: ClaimUID("uid-a", host)}}, types.NamespacedName{}); len(got) != 2 {
		t.Fatalf("objects recorded on a cold start, named by changes: %v, want both", got)
	}

	if pol := provider.Kind().Policy(tenancy.Policy{RequireOwner: true}); pol.RequireOwner {
		t.Error("the provider's objects' policy requires an owner")
	}
	if pol := tenants.Kind().Policy(tenancy.Policy{RequireOwner: true}); !pol.RequireOwner {
		t.Error("the LeaseHosts' policy lost RequireOwner")
	}
}

// TestKindRouteUpToDate: a LeaseHost's route is up to date with extra
// annotations, a provider's route only with exactly its owned ones; both
// need the desired spec, labels and controller.
func TestKindRouteUpToDate(t *testing.T) {
	route := func(annotations map[string]string, controller types.UID) *gatewayv1.HTTPRoute {
		r := &gatewayv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "t", Labels: map[string]string{"l": "1"}, Annotations: annotations},
			Spec:       gatewayv1.HTTPRouteSpec{Hostnames: []gatewayv1.Hostname{"web.example.test"}},
		}
		if controller != "" {
			r.OwnerReferences = []metav1.OwnerReference{{Kind: "LeaseHost", Name: "web", UID: controller, Controller: new(true)}}
		}
		return r
	}
	provider := Kind{Provider: true, RouteAnnotations: []string{"owned", "also"}}
	for _, tc := range []struct {
		name                 string
		existing, desired    *gatewayv1.HTTPRoute
		leaseHost, providers bool
	}{
		{"same", route(map[string]string{"owned": "1"}, ""), route(map[string]string{"owned": "1"}, ""), true, true},
		{"an extra annotation of the kind's", route(map[string]string{"owned": "1", "also": "x"}, ""), route(map[string]string{"owned": "1"}, ""), true, false},
		{"an extra annotation of someone else's", route(map[string]string{"owned": "1", "other": "x"}, ""), route(map[string]string{"owned": "1"}, ""), true, true},
		{"a desired annotation missing", route(nil, ""), route(map[string]string{"owned": "1"}, ""), false, false},
		{"a desired annotation differs", route(map[string]string{"owned": "2"}, ""), route(map[string]string{"owned": "1"}, ""), false, false},
		{"a label missing", func() *gatewayv1.HTTPRoute { r := route(nil, ""); r.Labels = nil; return r }(), route(nil, ""), false, false},
		{"the spec differs", func() *gatewayv1.HTTPRoute { r := route(nil, ""); r.Spec.Hostnames = nil; return r }(), route(nil, ""), false, false},
		{"the controller differs", route(nil, "uid-b"), route(nil, "uid-a"), false, false},
		{"no controller", route(nil, ""), route(nil, "uid-a"), false, false},
		{"the same controller", route(nil, "uid-a"), route(nil, "uid-a"), true, true},
	} {
		if got := LeaseHostKind.RouteUpToDate(tc.existing, tc.desired); got != tc.leaseHost {
			t.Errorf("%s: LeaseHost route up to date %v, want %v", tc.name, got, tc.leaseHost)
		}
		if got := provider.RouteUpToDate(tc.existing, tc.desired); got != tc.providers {
			t.Errorf("%s: provider's route up to date %v, want %v", tc.name, got, tc.providers)
		}
	}
}
