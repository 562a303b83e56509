/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// Two shards as in the demo: shard-a has a listener for its domain and a
// hostless listener on the same port, shard-b a listener for its domain.
// A generated route lists its LeaseHost's name on every shard (a
// subdomain composes one per shard); each shard serves only the names
// held on it, and another shard's names never make it refuse the route.

var (
	splitA = types.NamespacedName{Namespace: "infra", Name: "shard-a"}
	splitB = types.NamespacedName{Namespace: "infra", Name: "shard-b"}
)

const (
	blogA = "blog.a.example.test"
	blogB = "blog.b.example.test"
)

func splitShardsInput(mode ShardRoutes) *Input {
	all := &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptrTo(gatewayv1.NamespacesFromAll)}}
	gw := func(k types.NamespacedName, ls ...gatewayv1.Listener) *gatewayv1.Gateway {
		return &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name, Generation: 1},
			Spec: gatewayv1.GatewaySpec{GatewayClassName: "shardgate", Listeners: ls}}
	}
	in := hostileInput()
	in.Runtime = nil
	in.Gateways = []*gatewayv1.Gateway{
		gw(splitA,
			gatewayv1.Listener{Name: "apps", Port: 80, Protocol: gatewayv1.HTTPProtocolType, Hostname: ptrTo(gatewayv1.Hostname("*.a.example.test")), AllowedRoutes: all},
			gatewayv1.Listener{Name: "custom", Port: 80, Protocol: gatewayv1.HTTPProtocolType, AllowedRoutes: all}),
		gw(splitB,
			gatewayv1.Listener{Name: "apps", Port: 80, Protocol: gatewayv1.HTTPProtocolType, Hostname: ptrTo(gatewayv1.Hostname("*.b.example.test")), AllowedRoutes: all}),
	}
	in.Namespaces = append(in.Namespaces,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: aliceNS}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bobNS}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra"}})
	in.Services = append(in.Services, service(aliceNS, "web"), service(bobNS, "web"))
	in.HTTPRoutes = []*gatewayv1.HTTPRoute{generatedOn(aliceNS, "blog", "uid-blog", blogA, blogB)}
	in.Ownership = &Ownership{
		Shards: map[types.NamespacedName]ShardRoutes{splitA: mode, splitB: mode},
		Generated: map[types.NamespacedName]GeneratedRoute{
			{Namespace: aliceNS, Name: "blog"}: {LeaseHost: "uid-blog", Hosts: map[types.NamespacedName][]string{splitA: {blogA}, splitB: {blogB}}},
		},
		NamespaceOwners: map[string]string{aliceNS: "akash1alice", bobNS: "akash1bob"},
		Holders:         map[string]string{blogA: "akash1alice", blogB: "akash1alice"},
	}
	return in
}

// generatedOn is a route as shardgate generates it for LeaseHost uid:
// attached to both shards, with hosts.
func generatedOn(ns, name string, uid types.UID, hosts ...string) *gatewayv1.HTTPRoute {
	r := tenantRoute(ns, name, splitA, hosts...)
	r.Spec.ParentRefs = []gatewayv1.ParentReference{
		{Namespace: ptrTo(gatewayv1.Namespace(splitA.Namespace)), Name: gatewayv1.ObjectName(splitA.Name)},
		{Namespace: ptrTo(gatewayv1.Namespace(splitB.Namespace)), Name: gatewayv1.ObjectName(splitB.Name)},
	}
	r.CreationTimestamp = metav1.Unix(100, 0)
	r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "shardgate.io/v1alpha1", Kind: "LeaseHost", Name: name, UID: uid, Controller: ptrTo(true)}}
	return r
}

// edited is r as the apiserver returns it after an edit of its spec.
func edited(r *gatewayv1.HTTPRoute) *gatewayv1.HTTPRoute {
	r.Generation++
	return r
}

func parentMessage(out *Output, ns, name string, gw types.NamespacedName) string {
	for _, p := range out.HTTPRouteStatus.At(types.NamespacedName{Namespace: ns, Name: name}) {
		if string(p.ParentRef.Name) == gw.Name {
			if c := meta.FindStatusCondition(p.Conditions, "Accepted"); c != nil {
				return c.Message
			}
		}
	}
	return ""
}

func TestShardServesOnlyItsOwnNamesOfASplitRoute(t *testing.T) {
	notOwned := "False/" + shardgatev1alpha1.ReasonHostnameNotOwned
	type want struct {
		gw       types.NamespacedName
		accepted string
		msg      string   // a substring of the Accepted message, when set
		serves   []string // entries of served() that must be present
		not      []string // and absent
	}
	cases := []struct {
		name   string
		mutate func(*Input)
		rt     types.NamespacedName
		want   []want
		only   ShardRoutes // when set, the case runs in this mode only
	}{
		{name: "a subdomain's route: each shard admits it and serves its own name only",
			rt: types.NamespacedName{Namespace: aliceNS, Name: "blog"},
			want: []want{
				{gw: splitA, accepted: "True/Accepted", serves: []string{blogA + " tenant-a/blog"}, not: []string{blogB + " tenant-a/blog"}},
				{gw: splitB, accepted: "True/Accepted", serves: []string{blogB + " tenant-a/blog"}, not: []string{blogA + " tenant-a/blog"}},
			}},
		{name: "an explicit hostname, held on both shards: shard-a serves it on its hostless listener",
			mutate: func(in *Input) {
				in.HTTPRoutes = append(in.HTTPRoutes, generatedOn(bobNS, "web", "uid-web", "web.b.example.test"))
				in.Ownership.Generated[types.NamespacedName{Namespace: bobNS, Name: "web"}] = GeneratedRoute{LeaseHost: "uid-web",
					Hosts: map[types.NamespacedName][]string{splitA: {"web.b.example.test"}, splitB: {"web.b.example.test"}}}
				in.Ownership.Holders["web.b.example.test"] = "akash1bob"
			},
			rt: types.NamespacedName{Namespace: bobNS, Name: "web"},
			want: []want{
				{gw: splitA, accepted: "True/Accepted", serves: []string{"web.b.example.test tenant-b/web"}},
				{gw: splitB, accepted: "True/Accepted", serves: []string{"web.b.example.test tenant-b/web"}},
			}},
		{name: "the LeaseHost holds its name on shard-b only: shard-a's hostless listener does not serve it, and says why",
			mutate: func(in *Input) {
				k := types.NamespacedName{Namespace: aliceNS, Name: "blog"}
				in.HTTPRoutes = []*gatewayv1.HTTPRoute{edited(generatedOn(aliceNS, "blog", "uid-blog", blogB))}
				in.Ownership.Generated[k] = GeneratedRoute{LeaseHost: "uid-blog", Hosts: map[types.NamespacedName][]string{splitB: {blogB}}}
			},
			rt: types.NamespacedName{Namespace: aliceNS, Name: "blog"},
			want: []want{
				{gw: splitA, accepted: notOwned, msg: blogB + ": held on other shards", not: []string{blogB + " tenant-a/blog"}},
				{gw: splitB, accepted: "True/Accepted", serves: []string{blogB + " tenant-a/blog"}},
			}},
		{name: "a name the LeaseHost holds nowhere still refuses the route on the shard that would serve it",
			mutate: func(in *Input) {
				in.HTTPRoutes = []*gatewayv1.HTTPRoute{edited(generatedOn(aliceNS, "blog", "uid-blog", blogA, blogB, "shop.example.test"))}
			},
			rt: types.NamespacedName{Namespace: aliceNS, Name: "blog"},
			want: []want{
				{gw: splitA, accepted: notOwned, msg: "shop.example.test", not: []string{blogA + " tenant-a/blog", "shop.example.test tenant-a/blog"}},
				{gw: splitB, accepted: "True/Accepted", serves: []string{blogB + " tenant-a/blog"}},
			}},
		{name: "a route of another LeaseHost's UID is not generated: no name of it is another shard's", only: RoutesGenerated,
			mutate: func(in *Input) {
				in.HTTPRoutes = []*gatewayv1.HTTPRoute{edited(generatedOn(aliceNS, "blog", "uid-forged", blogA, blogB))}
			},
			rt: types.NamespacedName{Namespace: aliceNS, Name: "blog"},
			want: []want{
				{gw: splitA, accepted: notOwned, not: []string{blogA + " tenant-a/blog", blogB + " tenant-a/blog"}},
			}},
	}
	for _, mode := range []ShardRoutes{RoutesGenerated, RoutesOwned} {
		for _, c := range cases {
			if c.only != "" && c.only != mode {
				continue
			}
			t.Run(string(mode)+"/"+c.name, func(t *testing.T) {
				in := splitShardsInput(mode)
				if c.mutate != nil {
					c.mutate(in)
				}
				out := Translate(in)
				for _, w := range c.want {
					got := parentOf(out, kindHTTPRoute, c.rt.Namespace, c.rt.Name, w.gw)
					msg := parentMessage(out, c.rt.Namespace, c.rt.Name, w.gw)
					if got != w.accepted || !strings.Contains(msg, w.msg) {
						t.Fatalf("%s on %s: Accepted = %s (%q), want %s (%q); status %+v", c.rt, w.gw, got, msg, w.accepted, w.msg, maps.Collect(out.HTTPRouteStatus.All()))
					}
					served := served(out, w.gw)
					for _, s := range w.serves {
						if !slices.Contains(served, s) {
							t.Errorf("%s does not serve %q: %q", w.gw, s, served)
						}
					}
					for _, s := range w.not {
						if slices.Contains(served, s) {
							t.Errorf("%s serves %q: %q", w.gw, s, served)
						}
					}
				}
				tr := newLoaded()
				tr.translate(splitShardsInput(mode))
				if again := tr.translate(in); !sameOutput(again, out) {
					t.Fatalf("the Translator differs from Translate:\n%s", cmp.Diff(bare(out), bare(again)))
				}
			})
		}
	}
}
