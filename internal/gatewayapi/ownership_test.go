/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/hostnames"
)

// The shard-ownership rule (Ownership): tenant A (akash1alice, namespace
// tenant-a) holds shop.example.test through LeaseHost "shop", whose
// generated route tenant-a/shop is controlled by UID "uid-shop"; tenant B
// (akash1bob, namespace tenant-b) holds bob.example.test and the domain
// b.example.test. Gateway infra/shard is a shard with an HTTP listener and
// a TLS passthrough listener, both open to every namespace; infra/plain is
// not a shard. The block list is ".apple.com .blocked.test
// secret.b.example.test".

const (
	aliceNS, bobNS = "tenant-a", "tenant-b"
	aliceLH        = types.UID("uid-shop")
)

var (
	shardGW = types.NamespacedName{Namespace: "infra", Name: "shard"}
	plainGW = types.NamespacedName{Namespace: "infra", Name: "plain"}
)

func ownershipInput(mode ShardRoutes) *Input {
	all := &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptrTo(gatewayv1.NamespacesFromAll)}}
	listeners := []gatewayv1.Listener{
		{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType, AllowedRoutes: all},
		{Name: "tls", Port: 443, Protocol: gatewayv1.TLSProtocolType, AllowedRoutes: all,
			TLS: &gatewayv1.ListenerTLSConfig{Mode: ptrTo(gatewayv1.TLSModePassthrough)}},
	}
	gw := func(k types.NamespacedName) *gatewayv1.Gateway {
		return &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name, Generation: 1},
			Spec: gatewayv1.GatewaySpec{GatewayClassName: "shardgate", Listeners: listeners}}
	}
	in := hostileInput()
	in.Gateways = []*gatewayv1.Gateway{gw(shardGW), gw(plainGW)}
	in.Namespaces = append(in.Namespaces,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: aliceNS}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bobNS}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra"}})
	in.Services = append(in.Services, service(aliceNS, "web"), service(bobNS, "web"))
	in.Runtime = nil
	in.Ownership = &Ownership{
		Shards: map[types.NamespacedName]ShardRoutes{shardGW: mode},
		Generated: map[types.NamespacedName]GeneratedRoute{
			{Namespace: aliceNS, Name: "shop"}: {LeaseHost: aliceLH, Hosts: map[types.NamespacedName][]string{shardGW: {"shop.example.test"}}},
		},
		NamespaceOwners: map[string]string{aliceNS: "akash1alice", bobNS: "akash1bob"},
		Holders: map[string]string{"shop.example.test": "akash1alice", "bob.example.test": "akash1bob",
			"b.example.test": "akash1bob", "x.blocked.example": "akash1bob"},
		Blocked: hostnames.MustBlockList(".apple.com", ".blocked.test", "secret.b.example.test"),
	}
	return in
}

// tenantRoute is an HTTPRoute in ns attached to gw with hostnames.
func tenantRoute(ns, name string, gw types.NamespacedName, hosts ...string) *gatewayv1.HTTPRoute {
	r := route(func(r *gatewayv1.HTTPRoute) {
		r.Namespace, r.Name = ns, name
		r.Spec.ParentRefs = []gatewayv1.ParentReference{{Namespace: ptrTo(gatewayv1.Namespace(gw.Namespace)), Name: gatewayv1.ObjectName(gw.Name), SectionName: ptrTo(gatewayv1.SectionName("http"))}}
		for _, h := range hosts {
			r.Spec.Hostnames = append(r.Spec.Hostnames, gatewayv1.Hostname(h))
		}
	})
	return r
}

// generatedShop is alice's generated route, as shardgate writes it.
func generatedShop() *gatewayv1.HTTPRoute {
	r := tenantRoute(aliceNS, "shop", shardGW, "shop.example.test")
	r.CreationTimestamp = metav1.Unix(100, 0)
	r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "shardgate.io/v1alpha1", Kind: "LeaseHost", Name: "shop", UID: aliceLH, Controller: ptrTo(true)}}
	return r
}

func parentOf(out *Output, kind string, ns, name string, gw types.NamespacedName) string {
	var ps []gatewayv1.RouteParentStatus
	key := types.NamespacedName{Namespace: ns, Name: name}
	switch kind {
	case kindHTTPRoute:
		ps = out.HTTPRouteStatus.At(key)
	case kindGRPCRoute:
		ps = out.GRPCRouteStatus.At(key)
	case kindTLSRoute:
		ps = out.TLSRouteStatus.At(key)
	}
	for _, p := range ps {
		pns := ns
		if p.ParentRef.Namespace != nil {
			pns = string(*p.ParentRef.Namespace)
		}
		if pns == gw.Namespace && string(p.ParentRef.Name) == gw.Name {
			c := meta.FindStatusCondition(p.Conditions, "Accepted")
			if c == nil {
				return "<none>"
			}
			return string(c.Status) + "/" + c.Reason
		}
	}
	return "<no parent status>"
}

// served lists "<domain> <route source>" for everything gw serves.
func served(out *Output, gw types.NamespacedName) []string {
	var got []string
	for _, g := range out.Gateways {
		if g.Namespace != gw.Namespace || g.Name != gw.Name {
			continue
		}
		for _, l := range g.Listeners {
			for _, vh := range l.VirtualHosts {
				for _, r := range vh.Routes {
					got = append(got, vh.Name+" "+r.Source.Namespace+"/"+r.Source.Name)
				}
			}
			for _, tr := range l.TLSRoutes {
				got = append(got, tr.SNI+" "+tr.Source.Namespace+"/"+tr.Source.Name)
			}
		}
	}
	slices.Sort(got)
	return slices.Compact(got)
}

// TestShardOwnership is the translator part of the tenant-isolation
// matrix for routes on shards (RELIABILITY.md, "Tenant isolation").
func TestShardOwnership(t *testing.T) {
	methods := []gatewayv1.HTTPMethod{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"}
	perMethod := func(r *gatewayv1.HTTPRoute) *gatewayv1.HTTPRoute {
		r.CreationTimestamp = metav1.Unix(1, 0) // older than alice's route
		var ms []gatewayv1.HTTPRouteMatch
		for _, m := range methods {
			ms = append(ms, gatewayv1.HTTPRouteMatch{Method: ptrTo(m), Path: &gatewayv1.HTTPPathMatch{Type: ptrTo(gatewayv1.PathMatchExact), Value: ptrTo("/")}})
		}
		r.Spec.Rules[0].Matches = ms
		return r
	}
	forged := func(r *gatewayv1.HTTPRoute, uid types.UID) *gatewayv1.HTTPRoute {
		r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "shardgate.io/v1alpha1", Kind: "LeaseHost", Name: r.Name, UID: uid, Controller: ptrTo(true)}}
		r.Labels = map[string]string{"shardgate.io/lease-owner": "akash1alice"}
		return r
	}
	notOwned := "False/" + shardgatev1alpha1.ReasonHostnameNotOwned
	cases := []struct {
		name     string
		mode     ShardRoutes
		mutate   func(*Input)
		kind     string
		ns, rt   string
		gw       types.NamespacedName
		want     string
		mustNot  string // a served entry that must be absent from the shard
		wantServ string // a served entry that must be present
	}{
		{name: "the generated route of the holder is served", mode: RoutesGenerated,
			kind: kindHTTPRoute, ns: aliceNS, rt: "shop", gw: shardGW, want: "True/Accepted", wantServ: "shop.example.test tenant-a/shop"},
		{name: "B serves A's reserved name ahead of A's route with a match per HTTP method", mode: RoutesGenerated,
			mutate: func(in *Input) {
				in.HTTPRoutes = append(in.HTTPRoutes, perMethod(tenantRoute(bobNS, "steal", shardGW, "shop.example.test")))
			},
			kind: kindHTTPRoute, ns: bobNS, rt: "steal", gw: shardGW, want: notOwned, mustNot: "shop.example.test tenant-b/steal", wantServ: "shop.example.test tenant-a/shop"},
		{name: "the same with shard routes Owned", mode: RoutesOwned,
			mutate: func(in *Input) {
				in.HTTPRoutes = append(in.HTTPRoutes, perMethod(tenantRoute(bobNS, "steal", shardGW, "shop.example.test")))
			},
			kind: kindHTTPRoute, ns: bobNS, rt: "steal", gw: shardGW, want: notOwned, mustNot: "shop.example.test tenant-b/steal", wantServ: "shop.example.test tenant-a/shop"},
		{name: "a forged generated route: A's LeaseHost UID as controller, lease-owner label, in B's namespace", mode: RoutesOwned,
			mutate: func(in *Input) {
				in.HTTPRoutes = append(in.HTTPRoutes, forged(tenantRoute(bobNS, "shop", shardGW, "shop.example.test"), aliceLH))
			},
			kind: kindHTTPRoute, ns: bobNS, rt: "shop", gw: shardGW, want: notOwned, mustNot: "shop.example.test tenant-b/shop"},
		{name: "A's generated route edited to carry a name A does not hold", mode: RoutesGenerated,
			mutate: func(in *Input) {
				r := generatedShop()
				r.Spec.Hostnames = append(r.Spec.Hostnames, "bob.example.test")
				in.HTTPRoutes = []*gatewayv1.HTTPRoute{r}
			},
			kind: kindHTTPRoute, ns: aliceNS, rt: "shop", gw: shardGW, want: notOwned, mustNot: "bob.example.test tenant-a/shop"},
		{name: "a route named like a generated one, without the LeaseHost as controller", mode: RoutesGenerated,
			mutate: func(in *Input) {
				r := generatedShop()
				r.OwnerReferences[0].Controller = ptrTo(false)
				in.HTTPRoutes = []*gatewayv1.HTTPRoute{r}
			},
			kind: kindHTTPRoute, ns: aliceNS, rt: "shop", gw: shardGW, want: notOwned, mustNot: "shop.example.test tenant-a/shop"},
		{name: "a blocked name in punycode (Cyrillic look-alike of apple.com)", mode: RoutesOwned,
			mutate: func(in *Input) {
				in.HTTPRoutes = append(in.HTTPRoutes, tenantRoute(bobNS, "homograph", shardGW, "xn--80ak6aa92e.com"))
			},
			kind: kindHTTPRoute, ns: bobNS, rt: "homograph", gw: shardGW, want: notOwned, mustNot: "xn--80ak6aa92e.com tenant-b/homograph"},
		{name: "a blocked name", mode: RoutesOwned,
			mutate: func(in *Input) {
				in.HTTPRoutes = append(in.HTTPRoutes, tenantRoute(bobNS, "blocked", shardGW, "login.apple.com"))
			},
			kind: kindHTTPRoute, ns: bobNS, rt: "blocked", gw: shardGW, want: notOwned, mustNot: "login.apple.com tenant-b/blocked"},
		{name: "a wildcard under a blocked suffix", mode: RoutesOwned,
			mutate: func(in *Input) {
				in.HTTPRoutes = append(in.HTTPRoutes, tenantRoute(bobNS, "wild", shardGW, "*.x.blocked.test"))
			},
			kind: kindHTTPRoute, ns: bobNS, rt: "wild", gw: shardGW, want: notOwned, mustNot: "*.x.blocked.test tenant-b/wild"},
		{name: "a wildcard over a domain the owner holds but with a blocked name below it", mode: RoutesOwned,
			mutate: func(in *Input) {
				in.HTTPRoutes = append(in.HTTPRoutes, tenantRoute(bobNS, "wild", shardGW, "*.b.example.test"))
			},
			kind: kindHTTPRoute, ns: bobNS, rt: "wild", gw: shardGW, want: notOwned, mustNot: "*.b.example.test tenant-b/wild"},
		{name: "a wildcard over a domain the owner holds, clean", mode: RoutesOwned,
			mutate: func(in *Input) {
				in.Ownership.Blocked = hostnames.MustBlockList(".apple.com")
				in.HTTPRoutes = append(in.HTTPRoutes, tenantRoute(bobNS, "wild", shardGW, "*.b.example.test"))
			},
			kind: kindHTTPRoute, ns: bobNS, rt: "wild", gw: shardGW, want: "True/Accepted", wantServ: "*.b.example.test tenant-b/wild"},
		{name: "a wildcard over a domain with another tenant's name below it", mode: RoutesOwned,
			mutate: func(in *Input) {
				in.Ownership.Blocked = nil
				in.Ownership.Holders = map[string]string{"b.example.test": "akash1bob", "a.b.example.test": "akash1alice"}
				in.HTTPRoutes = append(in.HTTPRoutes, tenantRoute(bobNS, "wild", shardGW, "*.b.example.test"))
			},
			kind: kindHTTPRoute, ns: bobNS, rt: "wild", gw: shardGW, want: notOwned, mustNot: "*.b.example.test tenant-b/wild"},
		{name: "B takes a name nobody holds yet, before A's LeaseHost", mode: RoutesOwned,
			mutate: func(in *Input) {
				in.HTTPRoutes = append(in.HTTPRoutes, tenantRoute(bobNS, "early", shardGW, "new.example.test"))
			},
			kind: kindHTTPRoute, ns: bobNS, rt: "early", gw: shardGW, want: notOwned, mustNot: "new.example.test tenant-b/early"},
		{name: "B's own name with shard routes Owned", mode: RoutesOwned,
			mutate: func(in *Input) {
				in.HTTPRoutes = append(in.HTTPRoutes, tenantRoute(bobNS, "own", shardGW, "bob.example.test"))
			},
			kind: kindHTTPRoute, ns: bobNS, rt: "own", gw: shardGW, want: "True/Accepted", wantServ: "bob.example.test tenant-b/own"},
		{name: "B's own name with shard routes Generated", mode: RoutesGenerated,
			mutate: func(in *Input) {
				in.HTTPRoutes = append(in.HTTPRoutes, tenantRoute(bobNS, "own", shardGW, "bob.example.test"))
			},
			kind: kindHTTPRoute, ns: bobNS, rt: "own", gw: shardGW, want: notOwned, mustNot: "bob.example.test tenant-b/own"},
		{name: "a route without hostnames claims the whole listener", mode: RoutesOwned,
			mutate: func(in *Input) { in.HTTPRoutes = append(in.HTTPRoutes, tenantRoute(bobNS, "any", shardGW)) },
			kind:   kindHTTPRoute, ns: bobNS, rt: "any", gw: shardGW, want: notOwned, mustNot: "* tenant-b/any"},
		{name: "a route in a namespace without an owner marking", mode: RoutesOwned,
			mutate: func(in *Input) {
				in.Services = append(in.Services, service("other", "web"))
				in.HTTPRoutes = append(in.HTTPRoutes, tenantRoute("other", "own", shardGW, "bob.example.test"))
			},
			kind: kindHTTPRoute, ns: "other", rt: "own", gw: shardGW, want: notOwned, mustNot: "bob.example.test other/own"},
		{name: "B takes A's SNI on a passthrough listener", mode: RoutesOwned,
			mutate: func(in *Input) {
				in.TLSRoutes = append(in.TLSRoutes, &gatewayv1.TLSRoute{
					ObjectMeta: metav1.ObjectMeta{Namespace: bobNS, Name: "sni", Generation: 1, CreationTimestamp: metav1.Unix(1, 0)},
					Spec: gatewayv1.TLSRouteSpec{
						CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Namespace: ptrTo(gatewayv1.Namespace("infra")), Name: "shard", SectionName: ptrTo(gatewayv1.SectionName("tls"))}}},
						Hostnames:       []gatewayv1.Hostname{"shop.example.test"},
						Rules: []gatewayv1.TLSRouteRule{{BackendRefs: []gatewayv1.BackendRef{{BackendObjectReference: gatewayv1.BackendObjectReference{
							Name: "web", Port: ptrTo(gatewayv1.PortNumber(80))}}}}},
					},
				})
			},
			kind: kindTLSRoute, ns: bobNS, rt: "sni", gw: shardGW, want: notOwned, mustNot: "shop.example.test tenant-b/sni"},
		{name: "a GRPCRoute for A's name", mode: RoutesOwned,
			mutate: func(in *Input) {
				in.GRPCRoutes = append(in.GRPCRoutes, &gatewayv1.GRPCRoute{
					ObjectMeta: metav1.ObjectMeta{Namespace: bobNS, Name: "grpc", Generation: 1, CreationTimestamp: metav1.Unix(1, 0)},
					Spec: gatewayv1.GRPCRouteSpec{
						CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Namespace: ptrTo(gatewayv1.Namespace("infra")), Name: "shard", SectionName: ptrTo(gatewayv1.SectionName("http"))}}},
						Hostnames:       []gatewayv1.Hostname{"shop.example.test"},
						Rules: []gatewayv1.GRPCRouteRule{{BackendRefs: []gatewayv1.GRPCBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
							Name: "web", Port: ptrTo(gatewayv1.PortNumber(80))}}}}}},
					},
				})
			},
			kind: kindGRPCRoute, ns: bobNS, rt: "grpc", gw: shardGW, want: notOwned, mustNot: "shop.example.test tenant-b/grpc"},
		{name: "a Gateway that is not a shard is not affected", mode: RoutesGenerated,
			mutate: func(in *Input) {
				in.HTTPRoutes = append(in.HTTPRoutes, tenantRoute(bobNS, "plain", plainGW, "shop.example.test"))
			},
			kind: kindHTTPRoute, ns: bobNS, rt: "plain", gw: plainGW, want: "True/Accepted"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := ownershipInput(c.mode)
			in.HTTPRoutes = []*gatewayv1.HTTPRoute{generatedShop()}
			if c.mutate != nil {
				c.mutate(in)
			}
			out := Translate(in)
			if got := parentOf(out, c.kind, c.ns, c.rt, c.gw); got != c.want {
				t.Fatalf("%s %s/%s on %s: Accepted = %s, want %s; status %+v", c.kind, c.ns, c.rt, c.gw, got, c.want, maps.Collect(out.HTTPRouteStatus.All()))
			}
			got := served(out, shardGW)
			if c.mustNot != "" && slices.Contains(got, c.mustNot) {
				t.Fatalf("the shard serves %q: %q", c.mustNot, got)
			}
			if c.wantServ != "" && !slices.Contains(got, c.wantServ) {
				t.Fatalf("the shard does not serve %q: %q", c.wantServ, got)
			}
			tr := newLoaded()
			tr.translate(ownershipInput(c.mode))
			if again := tr.translate(in); !sameOutput(again, out) {
				t.Fatal("the Translator differs from Translate")
			}
		})
	}
}
