/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// limitRoute is a route of ns on the shard for host (held by the
// namespace's owner), created at second created, with rules rules of
// matches matches each, regexes of which carry a header regex.
func limitRoute(ns, name, host string, created int64, rules, matches, regexes int) *gatewayv1.HTTPRoute {
	r := tenantRoute(ns, name, shardGW, host)
	r.CreationTimestamp = metav1.Unix(created, 0)
	r.UID = types.UID("uid-" + ns + "-" + name)
	rule := r.Spec.Rules[0]
	r.Spec.Rules = nil
	n := 0
	for i := range rules {
		rl := *rule.DeepCopy()
		for j := range matches {
			p := fmt.Sprintf("/r%d/m%d", i, j)
			m := gatewayv1.HTTPRouteMatch{Path: &gatewayv1.HTTPPathMatch{Type: ptrTo(gatewayv1.PathMatchPathPrefix), Value: &p}}
			if n < regexes {
				m.Headers = []gatewayv1.HTTPHeaderMatch{{Type: ptrTo(gatewayv1.HeaderMatchRegularExpression), Name: "x-v", Value: fmt.Sprintf("^v[0-9]+-%d$", n)}}
				n++
			}
			rl.Matches = append(rl.Matches, m)
		}
		r.Spec.Rules = append(r.Spec.Rules, rl)
	}
	return r
}

func acceptedMessage(out *Output, ns, name string, gw types.NamespacedName) string {
	for _, p := range out.HTTPRouteStatus.At(types.NamespacedName{Namespace: ns, Name: name}) {
		if string(p.ParentRef.Name) == gw.Name {
			if c := meta.FindStatusCondition(p.Conditions, "Accepted"); c != nil {
				return c.Message
			}
		}
	}
	return ""
}

// TestTenantLimitsOldestFirst: alice may have two routes on the shard; her
// third, newest, is refused TenantLimitExceeded naming the limit and
// serves nothing, whatever the order of the input; bob is not affected;
// on a Gateway that is no shard nothing is limited; a newer route never
// displaces an older one; equal creation times are settled by UID.
func TestTenantLimitsOldestFirst(t *testing.T) {
	in := ownershipInput(RoutesOwned)
	in.Ownership.Holders["a.example.test"] = "akash1alice"
	in.TenantLimits = TenantLimits{Routes: 2}
	in.HTTPRoutes = []*gatewayv1.HTTPRoute{
		limitRoute(aliceNS, "new", "a.example.test", 300, 1, 1, 0),
		limitRoute(aliceNS, "old", "a.example.test", 100, 1, 1, 0),
		limitRoute(bobNS, "b1", "bob.example.test", 50, 1, 1, 0),
		limitRoute(bobNS, "b2", "bob.example.test", 400, 1, 1, 0),
		limitRoute(aliceNS, "mid", "a.example.test", 200, 1, 1, 0),
	}
	plain := limitRoute(aliceNS, "plain", "a.example.test", 500, 1, 1, 0)
	plain.Spec.ParentRefs[0].Name = gatewayv1.ObjectName(plainGW.Name)
	in.HTTPRoutes = append(in.HTTPRoutes, plain)
	check := func(in *Input) {
		t.Helper()
		out := Translate(in)
		for name, want := range map[string]string{"old": "True/Accepted", "mid": "True/Accepted", "new": "False/" + shardgatev1alpha1.ReasonTenantLimitExceeded} {
			if got := parentOf(out, kindHTTPRoute, aliceNS, name, shardGW); got != want {
				t.Errorf("alice's %s: %s, want %s", name, got, want)
			}
		}
		for _, name := range []string{"b1", "b2"} {
			if got := parentOf(out, kindHTTPRoute, bobNS, name, shardGW); got != "True/Accepted" {
				t.Errorf("bob's %s: %s", name, got)
			}
		}
		if got := parentOf(out, kindHTTPRoute, aliceNS, "plain", plainGW); got != "True/Accepted" {
			t.Errorf("a route on a Gateway that is no shard: %s", got)
		}
		msg := acceptedMessage(out, aliceNS, "new", shardGW)
		if !strings.Contains(msg, "limit of 2 routes") || !strings.Contains(msg, "shards.tenantLimits.routes") {
			t.Errorf("message does not name the limit: %q", msg)
		}
		for _, s := range served(out, shardGW) {
			if strings.HasSuffix(s, aliceNS+"/new") {
				t.Errorf("the refused route is served: %s", s)
			}
		}
	}
	check(in)
	// Any order of the same objects.
	r := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		c := *in
		c.HTTPRoutes = slices.Clone(in.HTTPRoutes)
		r.Shuffle(len(c.HTTPRoutes), func(i, j int) { c.HTTPRoutes[i], c.HTTPRoutes[j] = c.HTTPRoutes[j], c.HTTPRoutes[i] })
		check(&c)
	}
	// Ties on creationTimestamp: the lower UID is older.
	tie := *in
	tie.HTTPRoutes = []*gatewayv1.HTTPRoute{
		limitRoute(aliceNS, "z", "a.example.test", 100, 1, 1, 0),
		limitRoute(aliceNS, "y", "a.example.test", 100, 1, 1, 0),
		limitRoute(aliceNS, "x", "a.example.test", 100, 1, 1, 0),
	}
	tie.HTTPRoutes[0].UID, tie.HTTPRoutes[1].UID, tie.HTTPRoutes[2].UID = "uid-1", "uid-3", "uid-2"
	out := Translate(&tie)
	for name, want := range map[string]string{"z": "True/Accepted", "x": "True/Accepted", "y": "False/" + shardgatev1alpha1.ReasonTenantLimitExceeded} {
		if got := parentOf(out, kindHTTPRoute, aliceNS, name, shardGW); got != want {
			t.Errorf("tie %s: %s, want %s", name, got, want)
		}
	}
}

// TestTenantLimitsCountRulesMatchesRegexes: each limit counts what it
// says; a route too large for what is left is refused, and a newer route
// that fits is still served (admission is oldest first, not all-or-none).
func TestTenantLimitsCountRulesMatchesRegexes(t *testing.T) {
	for _, c := range []struct {
		name   string
		limits TenantLimits
		big    [3]int // rules, matches per rule, regexes
		names  string
	}{
		{"rules", TenantLimits{Rules: 4}, [3]int{4, 1, 0}, "limit of 4 rules"},
		{"matches", TenantLimits{Matches: 6}, [3]int{2, 3, 0}, "limit of 6 matches"},
		{"regexes", TenantLimits{RegularExpressions: 3}, [3]int{2, 2, 3}, "limit of 3 regular expressions"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := ownershipInput(RoutesOwned)
			in.Ownership.Holders["a.example.test"] = "akash1alice"
			in.TenantLimits = c.limits
			in.HTTPRoutes = []*gatewayv1.HTTPRoute{
				limitRoute(aliceNS, "first", "a.example.test", 100, 1, 1, 1),
				limitRoute(aliceNS, "big", "a.example.test", 200, c.big[0], c.big[1], c.big[2]),
				limitRoute(aliceNS, "small", "a.example.test", 300, 1, 1, 0),
				limitRoute(bobNS, "bob", "bob.example.test", 50, c.big[0], c.big[1], c.big[2]),
			}
			out := Translate(in)
			want := map[string]string{"first": "True/Accepted", "big": "False/" + shardgatev1alpha1.ReasonTenantLimitExceeded, "small": "True/Accepted"}
			for name, w := range want {
				if got := parentOf(out, kindHTTPRoute, aliceNS, name, shardGW); got != w {
					t.Errorf("%s: %s, want %s", name, got, w)
				}
			}
			if got := parentOf(out, kindHTTPRoute, bobNS, "bob", shardGW); got != "True/Accepted" {
				t.Errorf("bob's route, as large as alice's refused one but his only one: %s", got)
			}
			if msg := acceptedMessage(out, aliceNS, "big", shardGW); !strings.Contains(msg, c.names) {
				t.Errorf("message %q does not name %q", msg, c.names)
			}
			// Without limits, everything is served.
			in.TenantLimits = TenantLimits{}
			if got := parentOf(Translate(in), kindHTTPRoute, aliceNS, "big", shardGW); got != "True/Accepted" {
				t.Errorf("without limits: %s", got)
			}
		})
	}
}

// TestTenantLimitsTenants: two namespaces of one owner are one tenant;
// unmarked namespaces are a tenant each; on a shard in Generated mode a
// tenant's own routes (refused there anyway) do not use up the limits of
// its generated routes.
func TestTenantLimitsTenants(t *testing.T) {
	in := ownershipInput(RoutesOwned)
	in.Ownership.NamespaceOwners["tenant-a2"] = "akash1alice"
	in.Ownership.Holders["a.example.test"] = "akash1alice"
	in.TenantLimits = TenantLimits{Routes: 1}
	in.HTTPRoutes = []*gatewayv1.HTTPRoute{
		limitRoute(aliceNS, "one", "a.example.test", 100, 1, 1, 0),
		limitRoute("tenant-a2", "two", "a.example.test", 200, 1, 1, 0),
		limitRoute("loose-1", "u", "u.example.test", 100, 1, 1, 0),
		limitRoute("loose-2", "u", "u.example.test", 100, 1, 1, 0),
	}
	out := Translate(in)
	if got := parentOf(out, kindHTTPRoute, "tenant-a2", "two", shardGW); got != "False/"+shardgatev1alpha1.ReasonTenantLimitExceeded {
		t.Errorf("alice's second namespace: %s", got)
	}
	for _, ns := range []string{"loose-1", "loose-2"} {
		// Refused for their names (no owner), not for a limit: each
		// unmarked namespace is a tenant of its own.
		if got := parentOf(out, kindHTTPRoute, ns, "u", shardGW); got != "False/"+shardgatev1alpha1.ReasonHostnameNotOwned {
			t.Errorf("%s: %s", ns, got)
		}
	}

	gen := ownershipInput(RoutesGenerated)
	gen.TenantLimits = TenantLimits{Routes: 1}
	own := limitRoute(aliceNS, "own", "shop.example.test", 1, 1, 1, 0)
	gen.HTTPRoutes = []*gatewayv1.HTTPRoute{own, generatedShop()}
	out = Translate(gen)
	if got := parentOf(out, kindHTTPRoute, aliceNS, "shop", shardGW); got != "True/Accepted" {
		t.Errorf("the generated route, behind an older own route on a Generated shard: %s", got)
	}
	if got := parentOf(out, kindHTTPRoute, aliceNS, "own", shardGW); got != "False/"+shardgatev1alpha1.ReasonHostnameNotOwned {
		t.Errorf("alice's own route on a Generated shard: %s", got)
	}
}

// TestTranslatorTenantLimitsPatch: an incremental translation of a change
// of alice's oldest route that takes it over the limit refuses it and
// admits her next route; bob's change afterwards is patched and never
// changes alice's routes; each equals a fresh Translate.
func TestTranslatorTenantLimitsPatch(t *testing.T) {
	in := ownershipInput(RoutesOwned)
	in.Ownership.Holders["a.example.test"] = "akash1alice"
	in.TenantLimits = TenantLimits{Matches: 3}
	in.HTTPRoutes = []*gatewayv1.HTTPRoute{
		limitRoute(aliceNS, "a1", "a.example.test", 100, 1, 2, 0),
		limitRoute(aliceNS, "a2", "a.example.test", 200, 1, 1, 0),
		limitRoute(aliceNS, "a3", "a.example.test", 300, 1, 1, 0),
		limitRoute(bobNS, "b1", "bob.example.test", 100, 1, 1, 0),
	}
	in.TLSRoutes = nil
	st, tr, f, out := translatorOver(in)
	if got := parentOf(out, kindHTTPRoute, aliceNS, "a3", shardGW); got != "False/"+shardgatev1alpha1.ReasonTenantLimitExceeded {
		t.Fatalf("a3 at first: %s", got)
	}
	step := func(r *gatewayv1.HTTPRoute) *Output {
		t.Helper()
		r.ResourceVersion += "x"
		r.Generation++
		for i, o := range in.HTTPRoutes {
			if o.Namespace == r.Namespace && o.Name == r.Name {
				in.HTTPRoutes[i] = r
			}
		}
		st.Upsert(r)
		before := tr.Stats
		got, want := tr.Translate(f), Translate(in)
		if !sameOutput(got, want) {
			t.Fatalf("the Translator's output differs from Translate's")
		}
		if tr.Stats.Patched != before.Patched+1 {
			t.Fatalf("not patched: %+v then %+v", before, tr.Stats)
		}
		return got
	}
	// a1 grows to 4 matches: over the limit alone; a2 and a3 now fit.
	out = step(limitRoute(aliceNS, "a1", "a.example.test", 100, 2, 2, 0))
	for name, want := range map[string]string{"a1": "False/" + shardgatev1alpha1.ReasonTenantLimitExceeded, "a2": "True/Accepted", "a3": "True/Accepted"} {
		if got := parentOf(out, kindHTTPRoute, aliceNS, name, shardGW); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	if !slices.Contains(out.StatusChanged, RouteKey{Kind: kindHTTPRoute, NN: types.NamespacedName{Namespace: aliceNS, Name: "a3"}}) {
		t.Errorf("a3's status changed but it is not in StatusChanged: %v", out.StatusChanged)
	}
	// Bob's change touches only bob.
	out = step(limitRoute(bobNS, "b1", "bob.example.test", 100, 1, 2, 0))
	for _, k := range out.StatusChanged {
		if k.NN.Namespace != bobNS {
			t.Errorf("bob's change changed the status of %v", k)
		}
	}
}
