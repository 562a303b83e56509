/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// providerNS is a provider namespace: no owner marking.
const providerNS = "akash-services"

// tcpInput is ownershipInput with a TCP listener "tcp" on port 8443 (open
// to every namespace, as the akash-gateway chart has it) on both Gateways,
// and a Service "web" in providerNS.
func tcpInput(mode ShardRoutes) *Input {
	in := ownershipInput(mode)
	all := &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptrTo(gatewayv1.NamespacesFromAll)},
		Kinds: []gatewayv1.RouteGroupKind{{Kind: kindTCPRoute}}}
	for _, gw := range in.Gateways {
		gw.Spec.Listeners = append(slices.Clone(gw.Spec.Listeners),
			gatewayv1.Listener{Name: "tcp", Port: 8443, Protocol: gatewayv1.TCPProtocolType, AllowedRoutes: all})
	}
	in.Namespaces = append(in.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: providerNS}})
	in.Services = append(in.Services, service(providerNS, "web"))
	return in
}

// tcpRouteTo is a TCPRoute in ns on gw's listener "tcp", to ns/web:80.
func tcpRouteTo(ns, name string, gw types.NamespacedName) *gatewayv1.TCPRoute {
	return &gatewayv1.TCPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, CreationTimestamp: metav1.Unix(1, 0)},
		Spec: gatewayv1.TCPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{
				Namespace: ptrTo(gatewayv1.Namespace(gw.Namespace)), Name: gatewayv1.ObjectName(gw.Name), SectionName: ptrTo(gatewayv1.SectionName("tcp"))}}},
			Rules: []gatewayv1.TCPRouteRule{{BackendRefs: []gatewayv1.BackendRef{{BackendObjectReference: gatewayv1.BackendObjectReference{
				Name: "web", Port: ptrTo(gatewayv1.PortNumber(80))}}}}},
		},
	}
}

// tcpAccepted is the Accepted condition of route ns/name on gw.
func tcpAccepted(out *Output, ns, name string, gw types.NamespacedName) string {
	for _, p := range out.TCPRouteStatus.At(types.NamespacedName{Namespace: ns, Name: name}) {
		if p.ParentRef.Namespace != nil && string(*p.ParentRef.Namespace) == gw.Namespace && string(p.ParentRef.Name) == gw.Name {
			for _, c := range p.Conditions {
				if c.Type == string(gatewayv1.RouteConditionAccepted) {
					return string(c.Status) + "/" + c.Reason
				}
			}
		}
	}
	return "<no parent status>"
}

// tcpServed is the route gw's port 8443 serves ("" for none).
func tcpServed(out *Output, gw types.NamespacedName) string {
	for _, g := range out.Gateways {
		if g.Namespace != gw.Namespace || g.Name != gw.Name {
			continue
		}
		for _, l := range g.Listeners {
			if l.Port == 8443 && l.TCPRoute != nil {
				return l.TCPRoute.Source.Namespace + "/" + l.TCPRoute.Source.Name
			}
		}
	}
	return ""
}

// TestTCPRouteShards: a TCPRoute takes a whole port, and no tenant holds a
// port, so a shard serves TCPRoutes only from the provider's namespaces
// (no owner marking), in both routes modes and whatever the listener's
// allowedRoutes admit; a tenant's is Accepted=False PortNotOwned and its
// port serves nothing of it. A Gateway that is not a shard follows the
// spec.
func TestTCPRouteShards(t *testing.T) {
	notOwned := "False/" + shardgatev1alpha1.ReasonPortNotOwned
	cases := []struct {
		name      string
		mode      ShardRoutes
		ns        string
		gw        types.NamespacedName
		want      string
		wantServe bool
	}{
		{"a tenant's TCPRoute on a shard, routes Owned", RoutesOwned, bobNS, shardGW, notOwned, false},
		{"a tenant's TCPRoute on a shard, routes Generated", RoutesGenerated, aliceNS, shardGW, notOwned, false},
		{"the provider's TCPRoute on a shard, routes Generated", RoutesGenerated, providerNS, shardGW, "True/Accepted", true},
		{"the provider's TCPRoute on a shard, routes Owned", RoutesOwned, providerNS, shardGW, "True/Accepted", true},
		{"a tenant's TCPRoute on a Gateway that is not a shard", RoutesOwned, bobNS, plainGW, "True/Accepted", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := tcpInput(c.mode)
			in.Services = append(in.Services, service(c.ns, "web"))
			in.TCPRoutes = []*gatewayv1.TCPRoute{tcpRouteTo(c.ns, "port", c.gw)}
			out := Translate(in)
			if got := tcpAccepted(out, c.ns, "port", c.gw); got != c.want {
				t.Fatalf("Accepted = %s, want %s", got, c.want)
			}
			want := ""
			if c.wantServe {
				want = c.ns + "/port"
			}
			if got := tcpServed(out, c.gw); got != want {
				t.Fatalf("port 8443 serves %q, want %q", got, want)
			}
			tr := newLoaded()
			tr.translate(tcpInput(c.mode))
			if again := tr.translate(in); !sameOutput(again, out) {
				t.Fatal("the Translator differs from Translate")
			}
		})
	}
}

// TestTCPRouteOwnerMarkingIncremental: a provider namespace that becomes
// a tenant's (an owner marking appears) loses its TCPRoute on a shard, and
// the incremental Translator sees it, both when it compares the ownership
// facts and when it is handed a delta (Owners) from the last generation,
// on a shard in Generated mode, whose other routes read no owners.
func TestTCPRouteOwnerMarkingIncremental(t *testing.T) {
	for _, delta := range []bool{false, true} {
		in := tcpInput(RoutesGenerated)
		in.TCPRoutes = []*gatewayv1.TCPRoute{tcpRouteTo(providerNS, "port", shardGW)}
		in.Ownership.Gen = 1
		l := newLoaded()
		if got := tcpAccepted(l.translate(in), providerNS, "port", shardGW); got != "True/Accepted" {
			t.Fatalf("before: Accepted = %s", got)
		}
		next := *in
		o := *in.Ownership
		o.NamespaceOwners = map[string]string{providerNS: "akash1mallory"}
		for k, v := range in.Ownership.NamespaceOwners {
			o.NamespaceOwners[k] = v
		}
		o.Gen = 2
		if delta {
			o.Delta = &OwnershipDelta{Since: 1, Owners: true}
		}
		next.Ownership = &o
		got := l.translate(&next)
		want := Translate(&next)
		if a := tcpAccepted(want, providerNS, "port", shardGW); a != "False/"+shardgatev1alpha1.ReasonPortNotOwned {
			t.Fatalf("Translate after the marking: Accepted = %s", a)
		}
		if !sameOutput(got, want) {
			t.Fatalf("delta %v: the Translator differs from Translate: Accepted %s, serves %q",
				delta, tcpAccepted(got, providerNS, "port", shardGW), tcpServed(got, shardGW))
		}
	}
}

// TestTCPRouteServedOnePerPort: the oldest of the TCPRoutes on a listener
// is served; when it goes, the next oldest takes the port, and the
// Translator agrees with Translate at every step.
func TestTCPRouteServedOnePerPort(t *testing.T) {
	in := tcpInput(RoutesOwned)
	in.Ownership = nil
	older, newer := tcpRouteTo(providerNS, "older", plainGW), tcpRouteTo(providerNS, "newer", plainGW)
	newer.CreationTimestamp = metav1.Unix(2, 0)
	in.TCPRoutes = []*gatewayv1.TCPRoute{newer, older}
	l := newLoaded()
	out := l.translate(in)
	if got := tcpServed(out, plainGW); got != providerNS+"/older" {
		t.Fatalf("serves %q, want the older route", got)
	}
	for _, n := range []string{"older", "newer"} {
		if got := tcpAccepted(out, providerNS, n, plainGW); got != "True/Accepted" {
			t.Fatalf("%s: Accepted = %s", n, got)
		}
	}
	for _, gw := range out.GatewayStatus[plainGW].Listeners {
		if gw.Name == "tcp" && gw.AttachedRoutes != 2 {
			t.Fatalf("attachedRoutes = %d, want 2", gw.AttachedRoutes)
		}
	}
	next := *in
	next.TCPRoutes = []*gatewayv1.TCPRoute{newer}
	out = l.translate(&next)
	if got := tcpServed(out, plainGW); got != providerNS+"/newer" {
		t.Fatalf("after the older route went: serves %q", got)
	}
	if !sameOutput(out, Translate(&next)) {
		t.Fatal("the Translator differs from Translate")
	}
}

// TestOwnershipChangesMarksTCPRoutes: a change of the namespace owners
// marks every stored TCPRoute (compared, or from a delta with Owners);
// one of the holders alone, compared, marks none.
func TestOwnershipChangesMarksTCPRoutes(t *testing.T) {
	st := NewStore(testController)
	st.Upsert(tcpRouteTo(providerNS, "port", shardGW))
	tr := NewTranslator(st)
	a := tcpInput(RoutesGenerated).Ownership
	b := *a
	b.NamespaceOwners = map[string]string{providerNS: "akash1mallory"}
	key := RouteKey{Kind: kindTCPRoute, NN: types.NamespacedName{Namespace: providerNS, Name: "port"}}
	d := newDirty()
	tr.ownershipChanges(a, &b, &d)
	if !marked(d, key) {
		t.Fatal("namespace owners changed: the TCPRoute is not marked")
	}
	c := *a
	c.Holders = map[string]string{"x.example.test": "akash1bob"}
	d = newDirty()
	tr.ownershipChanges(a, &c, &d)
	if marked(d, key) {
		t.Fatal("holders changed: the TCPRoute is marked")
	}
	a.Gen = 4
	e := *a
	e.Gen, e.Delta = 5, &OwnershipDelta{Since: 4, Owners: true}
	d = newDirty()
	tr.ownershipChanges(a, &e, &d)
	if !marked(d, key) {
		t.Fatal("a delta with owners: the TCPRoute is not marked")
	}
}

func marked(d dirtySet, k RouteKey) bool {
	_, ok := d.Routes[k]
	return ok
}
