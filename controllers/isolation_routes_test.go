package controllers_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/testenv"
	xdsserver "github.com/shardgate/shardgate/xds/server"
	"github.com/shardgate/shardgate/xds/translate"
)

// Tenant isolation: routes a tenant writes by hand and attaches to a shard
// (RELIABILITY.md, "Tenant isolation"). A shard must allow routes from
// every namespace so that generated routes can attach; ownership decides
// what each route may serve there. Two shards in the provider's namespace
// have the same listeners (HTTP, and TLS passthrough, for any hostname):
// "gen" in the default mode (Generated) and "owned" with routes: Owned.
// Alice (the fixture's owner) is the victim, Bob the attacker.
var _ = Describe("Tenant isolation: routes on shards", Ordered, func() {
	ctx := context.Background()
	var env *testenv.Env
	var c client.Client
	var xds *xdsserver.Server
	var f *fixture
	var bobNS string
	const provider = "zz-owners"
	gen := types.NamespacedName{Namespace: provider, Name: "gen"}
	owned := types.NamespacedName{Namespace: provider, Name: "owned"}
	shards := []types.NamespacedName{gen, owned}
	const bob = "akash1bob"

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		c = env.Client
		cfg := filepath.Join(GinkgoT().TempDir(), "config.yaml")
		Expect(os.WriteFile(cfg, []byte("blockedHostnames:\n  - .apple.com\n  - .vault.bob.test\n"), 0o644)).To(Succeed())
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: provider}})).To(Succeed())
		ownershipShard(ctx, c, gen, "gen.test", "")
		ownershipShard(ctx, c, owned, "owned.test", shardgatev1alpha1.ShardRoutesOwned)
		env.RunManager(manager.Options{ConfigPath: cfg, MetricsAddress: "0", HealthAddress: "0", Log: GinkgoLogr,
			OnXDSServer: func(s *xdsserver.Server) { xds = s }})
		f = newFixture(ctx, c, "own")
		f.service(ctx, "web")
		bobNS = f.nsFor(ctx, bob)
	})

	// parentOn is a route's Accepted condition (Status/Reason) on shard gw.
	parentOn := func(obj client.Object, gw types.NamespacedName) func(Gomega) string {
		return func(g Gomega) string {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
			var parents []gatewayv1.RouteParentStatus
			switch r := obj.(type) {
			case *gatewayv1.HTTPRoute:
				parents = r.Status.Parents
			case *gatewayv1.GRPCRoute:
				parents = r.Status.Parents
			case *gatewayv1.TLSRoute:
				parents = r.Status.Parents
			}
			for _, p := range parents {
				if string(p.ControllerName) == shardgatev1alpha1.ControllerName && string(p.ParentRef.Name) == gw.Name {
					return condition(p.Conditions, "Accepted")
				}
			}
			return "<none>"
		}
	}
	generatedOn := func(name string, gw types.NamespacedName) func(Gomega) string {
		return parentOn(&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: f.nsOf(name), Name: name}}, gw)
	}
	notOwned := "False/" + shardgatev1alpha1.ReasonHostnameNotOwned
	// bobServesNothing: on neither shard does a virtual host for one of
	// hosts send anything to a cluster of Bob's namespace.
	bobServesNothing := func(hosts ...string) func(Gomega) {
		return func(g Gomega) {
			g.Expect(xds).NotTo(BeNil())
			for _, gw := range shards {
				for _, h := range hosts {
					for _, cl := range vhostClusters(xds, gw, h) {
						g.Expect(cl).NotTo(HavePrefix(bobNS+"/"), "%s on shard %s", h, gw)
					}
				}
			}
		}
	}
	// unserved: neither shard has a virtual host for any of hosts.
	unserved := func(hosts ...string) func(Gomega) {
		return func(g Gomega) {
			for _, gw := range shards {
				d := servedDomains(g, xds, gw)
				for _, h := range hosts {
					g.Expect(d).NotTo(HaveKey(h), "shard %s", gw)
				}
			}
		}
	}
	bobRoute := func(name string, hosts []string, rules ...gatewayv1.HTTPRouteRule) *gatewayv1.HTTPRoute {
		r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: bobNS, Name: name}}
		r.Spec.ParentRefs = shardRefs(shards, "http")
		for _, h := range hosts {
			r.Spec.Hostnames = append(r.Spec.Hostnames, gatewayv1.Hostname(h))
		}
		r.Spec.Rules = rules
		if len(rules) == 0 {
			r.Spec.Rules = []gatewayv1.HTTPRouteRule{webRule("/")}
		}
		return r
	}

	It("refuses Bob's route for Alice's reserved name, even ordered ahead of hers with one match per method", func() {
		f.leaseHost(ctx, "shop", "shop.own.test")
		Eventually(f.reserved(ctx, "shop")).Should(Equal("True/Reserved"))
		var rule gatewayv1.HTTPRouteRule
		for _, m := range []gatewayv1.HTTPMethod{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"} {
			rule.Matches = append(rule.Matches, gatewayv1.HTTPRouteMatch{
				Path:   &gatewayv1.HTTPPathMatch{Type: new(gatewayv1.PathMatchPathPrefix), Value: new("/")},
				Method: new(m),
			})
		}
		rule.BackendRefs = webRule("/").BackendRefs
		r := bobRoute("steal-shop", []string{"shop.own.test"}, rule)
		Expect(c.Create(ctx, r)).To(Succeed())
		for _, gw := range shards {
			Eventually(parentOn(r, gw)).Should(Equal(notOwned), "shard %s", gw)
			Eventually(generatedOn("shop", gw)).Should(Equal("True/Accepted"), "shard %s", gw)
		}
		Eventually(bobServesNothing("shop.own.test")).Should(Succeed())
		Eventually(f.reserved(ctx, "shop")).Should(Equal("True/Reserved"))
	})

	It("refuses Bob's routes for a blocked name and its punycode homograph, which the engine refuses him too", func() {
		f.leaseHost(ctx, "homograph", "xn--80ak6aa92e.com", owner(bob, 7))
		Eventually(f.reserved(ctx, "homograph")).Should(Equal("False/" + shardgatev1alpha1.ReasonBlocked))
		for name, host := range map[string]string{"blocked": "login.apple.com", "homograph-route": "xn--80ak6aa92e.com"} {
			r := bobRoute(name, []string{host})
			Expect(c.Create(ctx, r)).To(Succeed())
			for _, gw := range shards {
				Eventually(parentOn(r, gw)).Should(Equal(notOwned), "%s on shard %s", host, gw)
			}
		}
		Eventually(unserved("login.apple.com", "xn--80ak6aa92e.com")).Should(Succeed())
	})

	It("refuses Bob's wildcard under a blocked suffix, even for a domain he holds", func() {
		f.leaseHost(ctx, "root", "bob.test", owner(bob, 8))
		Eventually(f.reserved(ctx, "root")).Should(Equal("True/Reserved"))
		for name, host := range map[string]string{"wild-apple": "*.apple.com", "wild-own": "*.bob.test"} {
			r := bobRoute(name, []string{host})
			Expect(c.Create(ctx, r)).To(Succeed())
			for _, gw := range shards {
				// *.bob.test covers vault.bob.test, which the provider blocks.
				Eventually(parentOn(r, gw)).Should(Equal(notOwned), "%s on shard %s", host, gw)
			}
		}
		Eventually(unserved("*.apple.com", "*.bob.test")).Should(Succeed())
	})

	It("does not let Bob take a name before Alice's LeaseHost claims it", func() {
		r := bobRoute("early", []string{"early.own.test"})
		Expect(c.Create(ctx, r)).To(Succeed())
		for _, gw := range shards {
			Eventually(parentOn(r, gw)).Should(Equal(notOwned), "shard %s", gw)
		}
		f.leaseHost(ctx, "early", "early.own.test")
		Eventually(f.reserved(ctx, "early")).Should(Equal("True/Reserved"))
		for _, gw := range shards {
			// Alice's route is served, not HostnameConflict behind Bob's
			// older one.
			Eventually(generatedOn("early", gw)).Should(Equal("True/Accepted"), "shard %s", gw)
			Consistently(parentOn(r, gw), "2s", "200ms").Should(Equal(notOwned),
				"Bob's route stays refused once Alice's is served (a quiet window: nothing else changes it)")
		}
		Eventually(bobServesNothing("early.own.test")).Should(Succeed())
	})

	It("refuses Bob's TLSRoute for Alice's name on a TLS passthrough listener", func() {
		f.leaseHost(ctx, "vault", "vault.own.test")
		Eventually(f.reserved(ctx, "vault")).Should(Equal("True/Reserved"))
		r := &gatewayv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: bobNS, Name: "sni"}}
		r.Spec.ParentRefs = shardRefs(shards, "tls")
		r.Spec.Hostnames = []gatewayv1.Hostname{"vault.own.test"}
		r.Spec.Rules = []gatewayv1.TLSRouteRule{{BackendRefs: []gatewayv1.BackendRef{{BackendObjectReference: gatewayv1.BackendObjectReference{
			Name: "web", Port: new(gatewayv1.PortNumber(80))}}}}}
		Expect(c.Create(ctx, r)).To(Succeed())
		for _, gw := range shards {
			Eventually(parentOn(r, gw)).Should(Equal(notOwned), "shard %s", gw)
		}
		// Alice's name has only an HTTP route: no filter chain matches
		// its SNI anywhere.
		Eventually(func(g Gomega) {
			g.Expect(xds).NotTo(BeNil())
			for _, gw := range shards {
				g.Expect(sniNames(xds, gw)).NotTo(ContainElement("vault.own.test"), "shard %s", gw)
			}
		}).Should(Succeed())
	})

	It("serves Bob's own route for a name he holds on the Owned shard only, and on the Generated one nothing he writes", func() {
		f.leaseHost(ctx, "api", "api.bob.test", owner(bob, 9))
		Eventually(f.reserved(ctx, "api")).Should(Equal("True/Reserved"))
		// An HTTPRoute beside the generated one (a GRPCRoute would be
		// HostnameConflict with it, ownership aside).
		g := bobRoute("api-v2", []string{"api.bob.test"}, webRule("/v2"))
		Expect(c.Create(ctx, g)).To(Succeed())
		Eventually(parentOn(g, owned)).Should(Equal("True/Accepted"))
		Eventually(parentOn(g, gen)).Should(Equal(notOwned))
		Eventually(func(g Gomega) []string { return vhostClusters(xds, owned, "api.bob.test") }).Should(ContainElement(bobNS + "/web/80"))
	})

	It("keeps a name served while it moves to the same owner's other LeaseHost (make-before-break)", func() {
		const name = "move.own.test"
		f.leaseHost(ctx, "move-old", name, owner(defaultOwner, 21))
		Eventually(f.reserved(ctx, "move-old")).Should(Equal("True/Reserved"))
		for _, gw := range shards {
			Eventually(generatedOn("move-old", gw)).Should(Equal("True/Accepted"), "shard %s", gw)
			Eventually(func(g Gomega) map[string]bool { return servedDomains(g, xds, gw) }).Should(HaveKey(name))
		}

		By("watching every shard's xDS snapshot while the takeover runs")
		var gap atomic.Value
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, gw := range shards {
					if !servedDomains(Default, xds, gw)[name] {
						gap.CompareAndSwap(nil, gw.String())
					}
				}
			}
		}()
		f.leaseHost(ctx, "move-new", name, owner(defaultOwner, 22), takeover)
		Eventually(f.reserved(ctx, "move-new")).Should(Equal("True/Reserved"))
		Eventually(f.reserved(ctx, "move-old")).Should(Equal("False/" + shardgatev1alpha1.ReasonTransferredAway))
		for _, gw := range shards {
			Eventually(generatedOn("move-new", gw)).Should(Equal("True/Accepted"), "shard %s", gw)
		}
		Eventually(f.routeHostnames(ctx, "move-old")).ShouldNot(ContainElement(name))
		close(stop)
		wg.Wait()
		Expect(gap.Load()).To(BeNil(), "%s was not served during the transfer", name)
	})
})

// ownershipShard creates a shard Gateway gw with an HTTP listener and a TLS
// passthrough listener for any hostname, open to every namespace, and its
// GatewayParameters (routes: mode, or the default when "").
func ownershipShard(ctx context.Context, c client.Client, gw types.NamespacedName, domain string, mode shardgatev1alpha1.ShardRoutes) {
	class := &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "shardgate"},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: shardgatev1alpha1.ControllerName},
	}
	Expect(client.IgnoreAlreadyExists(c.Create(ctx, class))).To(Succeed())
	Expect(c.Create(ctx, &shardgatev1alpha1.GatewayParameters{
		ObjectMeta: metav1.ObjectMeta{Name: gw.Name, Namespace: gw.Namespace},
		Spec:       shardgatev1alpha1.GatewayParametersSpec{Shard: &shardgatev1alpha1.ShardSpec{Domain: domain, Routes: mode}},
	})).To(Succeed())
	all := &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: new(gatewayv1.NamespacesFromAll)}}
	Expect(c.Create(ctx, &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: gw.Name, Namespace: gw.Namespace},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: "shardgate",
			Infrastructure: &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{
				Group: "shardgate.io", Kind: "GatewayParameters", Name: gw.Name,
			}},
			Listeners: []gatewayv1.Listener{
				{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80, AllowedRoutes: all},
				{Name: "tls", Protocol: gatewayv1.TLSProtocolType, Port: 443, AllowedRoutes: all,
					TLS: &gatewayv1.ListenerTLSConfig{Mode: new(gatewayv1.TLSModePassthrough)}},
			},
		},
	})).To(Succeed())
}

func shardRefs(gws []types.NamespacedName, section string) []gatewayv1.ParentReference {
	var out []gatewayv1.ParentReference
	for _, gw := range gws {
		out = append(out, gatewayv1.ParentReference{Namespace: new(gatewayv1.Namespace(gw.Namespace)), Name: gatewayv1.ObjectName(gw.Name),
			SectionName: new(gatewayv1.SectionName(section))})
	}
	return out
}

func webRule(path string) gatewayv1.HTTPRouteRule {
	return gatewayv1.HTTPRouteRule{
		Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: new(gatewayv1.PathMatchPathPrefix), Value: new(path)}}},
		BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
			Name: "web", Port: new(gatewayv1.PortNumber(80))}}}},
	}
}

// sniNames are the server names every filter chain of gw's listeners
// matches in its current xDS snapshot.
func sniNames(xds *xdsserver.Server, gw types.NamespacedName) []string {
	snap, err := xds.Snapshot(gw)
	if err != nil {
		return nil
	}
	var out []string
	for _, res := range snap.GetResources(resourcev3.ListenerType) {
		l, ok := res.(*listenerv3.Listener)
		if !ok {
			continue
		}
		for _, fc := range l.FilterChains {
			out = append(out, fc.GetFilterChainMatch().GetServerNames()...)
		}
	}
	return out
}

// vhostClusters are the clusters that gw's virtual host for domain routes
// to in its current xDS snapshot.
func vhostClusters(xds *xdsserver.Server, gw types.NamespacedName, domain string) []string {
	var out []string
	for _, rt := range vhostRoutes(xds, gw, domain) {
		a := rt.GetRoute()
		if a == nil {
			continue
		}
		if cl := a.GetCluster(); cl != "" {
			out = append(out, cl)
		}
		for _, w := range a.GetWeightedClusters().GetClusters() {
			out = append(out, w.Name)
		}
	}
	return out
}

// vhostRoutes are the routes of gw's virtual host for domain in its
// current xDS snapshot.
func vhostRoutes(xds *xdsserver.Server, gw types.NamespacedName, domain string) []*routev3.Route {
	snap, err := xds.Snapshot(gw)
	if err != nil {
		return nil
	}
	var out []*routev3.Route
	for _, res := range snap.GetResources(resourcev3.RouteType) {
		rc, ok := res.(*routev3.RouteConfiguration)
		if !ok {
			continue
		}
		// The published table carries its virtual hosts as stored bytes.
		rc, err := translate.DecodeRouteConfiguration(rc)
		if err != nil {
			continue
		}
		for _, vh := range rc.VirtualHosts {
			if slices.ContainsFunc(vh.Domains, func(d string) bool { return strings.TrimSuffix(d, ":80") == domain }) {
				out = append(out, vh.Routes...)
			}
		}
	}
	return out
}

// servedDomains are the virtual host domains of gw's current xDS snapshot.
func servedDomains(_ Gomega, xds *xdsserver.Server, gw types.NamespacedName) map[string]bool {
	out := map[string]bool{}
	if xds == nil {
		return out
	}
	snap, err := xds.Snapshot(gw)
	if err != nil {
		return out
	}
	for _, res := range snap.GetResources(resourcev3.RouteType) {
		rc, ok := res.(*routev3.RouteConfiguration)
		if !ok {
			continue
		}
		// The published table carries its virtual hosts as stored bytes.
		rc, err := translate.DecodeRouteConfiguration(rc)
		if err != nil {
			continue
		}
		for _, vh := range rc.VirtualHosts {
			for _, d := range vh.Domains {
				out[strings.TrimSuffix(d, ":80")] = true
			}
		}
	}
	return out
}
