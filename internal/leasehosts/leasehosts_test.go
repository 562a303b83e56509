package leasehosts

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/sharding"
)

func shardFor(name, domain string) sharding.Shard {
	return sharding.Shard{
		Name: name, Gateway: types.NamespacedName{Namespace: "infra", Name: name},
		Domain: domain, CanonicalHostname: "router-" + name + "." + domain,
	}
}

func subdomainLH(sub string) *shardgatev1alpha1.LeaseHost {
	return &shardgatev1alpha1.LeaseHost{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "tenant", UID: "uid-1", Generation: 3},
		Spec: shardgatev1alpha1.LeaseHostSpec{
			Lease:     shardgatev1alpha1.LeaseRef{Owner: "akash1alice", DSeq: 9, GSeq: 1, OSeq: 2},
			Subdomain: sub,
			Service:   shardgatev1alpha1.ServiceRef{Name: "web", Port: 8080},
		},
	}
}

var (
	shardA = shardFor("shard-a", "a.example.test")
	shardB = shardFor("shard-b", "b.example.test")
	held   = hostnames.Decision{Reserved: true, Reason: hostnames.ReasonReserved}
	inUse  = hostnames.Decision{Reason: hostnames.ReasonHostnameInUse, Message: "in use by another tenant"}
)

func TestPlanComposesOneHostPerShard(t *testing.T) {
	p := PlanFor(subdomainLH("web"), []sharding.Shard{shardA, shardB})
	if got := strings.Join(p.Hosts, ","); got != "web.a.example.test,web.b.example.test" {
		t.Fatalf("hosts = %s", got)
	}
	lh := subdomainLH("")
	lh.Spec.Hostname = "shop.example.test"
	p = PlanFor(lh, []sharding.Shard{shardA, shardB})
	if got := strings.Join(p.Hosts, ","); got != "shop.example.test" {
		t.Fatalf("explicit hostname: hosts = %s", got)
	}
	if p = PlanFor(lh, nil); strings.Join(p.Hosts, ",") != "shop.example.test" {
		t.Fatalf("an explicit hostname is claimed even with no shard: %v", p.Hosts)
	}
	if p = PlanFor(subdomainLH("web"), nil); len(p.Hosts) != 0 {
		t.Fatalf("a subdomain with no shard composes nothing: %v", p.Hosts)
	}
}

func TestRouteCarriesOnlyHeldHostsAndTheirShards(t *testing.T) {
	lh := subdomainLH("web")
	p := PlanFor(lh, []sharding.Shard{shardA, shardB})
	r := RouteFor(lh, p, map[string]hostnames.Decision{"web.a.example.test": held, "web.b.example.test": inUse})
	if r == nil {
		t.Fatal("no route although one name is held")
	}
	if len(r.Spec.Hostnames) != 1 || r.Spec.Hostnames[0] != "web.a.example.test" {
		t.Fatalf("hostnames = %v", r.Spec.Hostnames)
	}
	if len(r.Spec.ParentRefs) != 1 || r.Spec.ParentRefs[0].Name != "shard-a" || *r.Spec.ParentRefs[0].Namespace != "infra" {
		t.Fatalf("parentRefs = %+v", r.Spec.ParentRefs)
	}
	if *r.Spec.Rules[0].Matches[0].Path.Value != "/" || *r.Spec.Rules[0].BackendRefs[0].Port != 8080 {
		t.Fatalf("rule = %+v", r.Spec.Rules[0])
	}
	if r.Labels[shardgatev1alpha1.LabelLeaseOSeq] != "2" || r.OwnerReferences[0].UID != "uid-1" {
		t.Fatalf("labels %v / owner %v", r.Labels, r.OwnerReferences)
	}
	if RouteFor(lh, p, map[string]hostnames.Decision{"web.a.example.test": inUse, "web.b.example.test": inUse}) != nil {
		t.Fatal("a route although no name is held")
	}
}

func TestLeaseLabelsHashAnOwnerThatIsNoLabelValue(t *testing.T) {
	got := LeaseLabels(shardgatev1alpha1.LeaseRef{Owner: strings.Repeat("x", 80)})[shardgatev1alpha1.LabelLeaseOwner]
	if !strings.HasPrefix(got, "sha256-") || len(got) > 63 {
		t.Fatalf("owner label = %q", got)
	}
	if got := LeaseLabels(shardgatev1alpha1.LeaseRef{Owner: "akash1abc"})[shardgatev1alpha1.LabelLeaseOwner]; got != "akash1abc" {
		t.Fatalf("owner label = %q", got)
	}
}

func parents(accepted, resolved metav1.ConditionStatus, reason string) *gatewayv1.HTTPRoute {
	ns := gatewayv1.Namespace("infra")
	return &gatewayv1.HTTPRoute{Status: gatewayv1.HTTPRouteStatus{RouteStatus: gatewayv1.RouteStatus{Parents: []gatewayv1.RouteParentStatus{
		{
			ParentRef:      gatewayv1.ParentReference{Namespace: &ns, Name: "shard-a"},
			ControllerName: shardgatev1alpha1.ControllerName,
			Conditions: []metav1.Condition{
				{Type: "Accepted", Status: accepted, Reason: reason},
				{Type: "ResolvedRefs", Status: resolved, Reason: reason},
			},
		},
		{ // another controller's entry for the same Gateway name is ignored
			ParentRef:      gatewayv1.ParentReference{Namespace: &ns, Name: "shard-a"},
			ControllerName: "example.com/other",
			Conditions:     []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "Other"}},
		},
	}}}}
}

func TestStatusPerShard(t *testing.T) {
	lh := subdomainLH("web")
	p := PlanFor(lh, []sharding.Shard{shardA, shardB})
	decisions := map[string]hostnames.Decision{"web.a.example.test": held, "web.b.example.test": inUse}
	cases := []struct {
		name                        string
		route                       *gatewayv1.HTTPRoute
		svc                         bool
		wantA, wantReady            string
		wantReserved, wantReservedR string
		wantAdmitted                string
	}{
		// shard-b refuses (its name is another owner's): not Ready.
		{"admitted on shard-a", parents("True", "True", "Accepted"), true, "True/Admitted", "False/PartiallyAdmitted", "True", "PartiallyReserved", "1/2"},
		{"not yet reported", nil, true, "Unknown/Pending", "False/Pending", "True", "PartiallyReserved", "0/2"},
		{"backend not found", parents("True", "False", "BackendNotFound"), false, "False/BackendNotFound", "False/BackendNotFound", "True", "PartiallyReserved", "0/2"},
		{"not allowed", parents("False", "True", "NotAllowedByListeners"), true, "False/NotAllowedByListeners", "False/NotAdmitted", "True", "PartiallyReserved", "0/2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := StatusFor(lh, p, decisions, Observed{Route: tc.route, ServiceExists: tc.svc, ControllerName: shardgatev1alpha1.ControllerName})
			if len(st.Shards) != 2 || st.Shards[0].Name != "shard-a" || st.Shards[1].Host != "web.b.example.test" {
				t.Fatalf("shards = %+v", st.Shards)
			}
			if st.Shards[0].Gateway != "infra/shard-a" || st.Shards[0].CanonicalHostname != "router-shard-a.a.example.test" {
				t.Fatalf("shard-a entry = %+v", st.Shards[0])
			}
			a := meta.FindStatusCondition(st.Shards[0].Conditions, "Admitted")
			if got := string(a.Status) + "/" + a.Reason; got != tc.wantA {
				t.Fatalf("shard-a Admitted = %s, want %s", got, tc.wantA)
			}
			b := meta.FindStatusCondition(st.Shards[1].Conditions, "Admitted")
			if string(b.Status)+"/"+b.Reason != "False/HostnameInUse" {
				t.Fatalf("shard-b Admitted = %s/%s", b.Status, b.Reason)
			}
			ready := meta.FindStatusCondition(st.Conditions, "Ready")
			if got := string(ready.Status) + "/" + ready.Reason; got != tc.wantReady {
				t.Fatalf("Ready = %s, want %s", got, tc.wantReady)
			}
			r := meta.FindStatusCondition(st.Conditions, "Reserved")
			if string(r.Status) != tc.wantReserved || r.Reason != tc.wantReservedR || r.ObservedGeneration != 3 {
				t.Fatalf("Reserved = %+v", r)
			}
			if len(st.ReservedHosts) != 1 || st.ReservedHosts[0] != "web.a.example.test" || st.Route != "web" {
				t.Fatalf("reservedHosts %v route %q", st.ReservedHosts, st.Route)
			}
			if st.Admitted != tc.wantAdmitted {
				t.Fatalf("admitted = %q, want %q", st.Admitted, tc.wantAdmitted)
			}
		})
	}
}

// TestReadyOnlyWhenEveryShardAdmits: Ready (kubectl's READY column) is
// True only when every shard that selects the LeaseHost admits its route;
// one that refuses it makes Ready False PartiallyAdmitted, naming it, and
// one that has not reported yet keeps Ready Pending.
func TestReadyOnlyWhenEveryShardAdmits(t *testing.T) {
	lh := subdomainLH("blog")
	p := PlanFor(lh, []sharding.Shard{shardA, shardB})
	decisions := map[string]hostnames.Decision{"blog.a.example.test": held, "blog.b.example.test": held}
	entry := func(gw, accepted, reason string) gatewayv1.RouteParentStatus {
		return gatewayv1.RouteParentStatus{
			ParentRef:      gatewayv1.ParentReference{Namespace: new(gatewayv1.Namespace("infra")), Name: gatewayv1.ObjectName(gw)},
			ControllerName: shardgatev1alpha1.ControllerName,
			Conditions: []metav1.Condition{
				{Type: "Accepted", Status: metav1.ConditionStatus(accepted), Reason: reason, Message: "says " + gw},
				{Type: "ResolvedRefs", Status: metav1.ConditionTrue, Reason: "ResolvedRefs"},
			},
		}
	}
	route := func(ps ...gatewayv1.RouteParentStatus) *gatewayv1.HTTPRoute {
		return &gatewayv1.HTTPRoute{Status: gatewayv1.HTTPRouteStatus{RouteStatus: gatewayv1.RouteStatus{Parents: ps}}}
	}
	cases := []struct {
		name              string
		route             *gatewayv1.HTTPRoute
		wantReady, wantIn string
		wantAdmitted      string
	}{
		{"both shards admit", route(entry("shard-a", "True", "Accepted"), entry("shard-b", "True", "Accepted")), "True/Admitted", "every shard", "2/2"},
		{"shard-a refuses the route", route(entry("shard-a", "False", shardgatev1alpha1.ReasonHostnameNotOwned), entry("shard-b", "True", "Accepted")),
			"False/" + shardgatev1alpha1.ReasonPartiallyAdmitted, "refused by shard-a (HostnameNotOwned)", "1/2"},
		{"shard-b has not reported", route(entry("shard-a", "True", "Accepted")), "False/Pending", "waiting", "1/2"},
		{"both refuse", route(entry("shard-a", "False", "NotAllowedByListeners"), entry("shard-b", "False", "NotAllowedByListeners")), "False/NotAdmitted", "no shard", "0/2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := StatusFor(lh, p, decisions, Observed{Route: tc.route, ServiceExists: true, ControllerName: shardgatev1alpha1.ControllerName})
			ready := meta.FindStatusCondition(st.Conditions, "Ready")
			if got := string(ready.Status) + "/" + ready.Reason; got != tc.wantReady || !strings.Contains(ready.Message, tc.wantIn) {
				t.Fatalf("Ready = %s (%q), want %s (with %q)", got, ready.Message, tc.wantReady, tc.wantIn)
			}
			if st.Admitted != tc.wantAdmitted {
				t.Fatalf("admitted = %q, want %q", st.Admitted, tc.wantAdmitted)
			}
		})
	}
}

func TestStatusIsStableForAnUnchangedLeaseHost(t *testing.T) {
	lh := subdomainLH("web")
	p := PlanFor(lh, []sharding.Shard{shardA})
	decisions := map[string]hostnames.Decision{"web.a.example.test": held}
	obs := Observed{Route: parents("True", "True", "Accepted"), ServiceExists: true, ControllerName: shardgatev1alpha1.ControllerName}
	first := StatusFor(lh, p, decisions, obs)
	lh.Status = first
	second := StatusFor(lh, p, decisions, obs)
	for i := range first.Conditions {
		if first.Conditions[i] != second.Conditions[i] {
			t.Fatalf("condition changed on a no-op: %+v vs %+v", first.Conditions[i], second.Conditions[i])
		}
	}
}

func TestStatusWithoutShards(t *testing.T) {
	lh := subdomainLH("web")
	st := StatusFor(lh, PlanFor(lh, nil), nil, Observed{ServiceExists: true})
	r := meta.FindStatusCondition(st.Conditions, "Reserved")
	if r.Status != "False" || r.Reason != shardgatev1alpha1.ReasonNoShards {
		t.Fatalf("Reserved = %+v", r)
	}
	if st.Admitted != "0/0" {
		t.Fatalf("admitted = %q, want 0/0", st.Admitted)
	}
	lh.Spec.Subdomain, lh.Spec.Hostname = "", "shop.example.test"
	p := PlanFor(lh, nil)
	st = StatusFor(lh, p, map[string]hostnames.Decision{"shop.example.test": held}, Observed{ServiceExists: true})
	if ready := meta.FindStatusCondition(st.Conditions, "Ready"); ready.Reason != shardgatev1alpha1.ReasonNoShards {
		t.Fatalf("Ready = %+v", ready)
	}
}

func TestInvalidComposedHostIsRefusedOnItsShardOnly(t *testing.T) {
	long := shardFor("shard-long", strings.Repeat("d", 60)+"."+strings.Repeat("e", 60)+"."+strings.Repeat("f", 60)+".example.test")
	lh := subdomainLH(strings.Repeat("w", 60))
	p := PlanFor(lh, []sharding.Shard{shardA, long})
	if len(p.Hosts) != 1 {
		t.Fatalf("hosts = %v", p.Hosts)
	}
	st := StatusFor(lh, p, map[string]hostnames.Decision{p.Hosts[0]: held}, Observed{ServiceExists: true, ControllerName: shardgatev1alpha1.ControllerName})
	c := meta.FindStatusCondition(st.Shards[1].Conditions, "Admitted")
	if st.Shards[1].Name != "shard-long" || c.Reason != shardgatev1alpha1.ReasonInvalidHost {
		t.Fatalf("shard-long = %+v", st.Shards[1])
	}
}
