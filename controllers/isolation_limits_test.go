package controllers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/testenv"
	xdsserver "github.com/shardgate/shardgate/xds/server"
)

// Tenant limits on a shard (RELIABILITY.md, "Tenant isolation"): a noisy
// tenant must not slow every tenant on a shard. The controller runs with
// shards.tenantLimits of 3 routes and 2 regular expressions per tenant per
// shard; "limits" is a shard in Owned mode. Bob (the attacker) holds
// bob.lim.test and floods the shard with routes for it; Alice (the victim)
// edits her own route meanwhile.
var _ = Describe("Tenant isolation: tenant limits on a shard", Ordered, func() {
	ctx := context.Background()
	var env *testenv.Env
	var c client.Client
	var xds *xdsserver.Server
	var f *fixture
	var bobNS string
	const provider = "zz-limits"
	shard := types.NamespacedName{Namespace: provider, Name: "limits"}
	const bob = "akash1bob"
	overLimit := "False/" + shardgatev1alpha1.ReasonTenantLimitExceeded

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		c = env.Client
		cfg := filepath.Join(GinkgoT().TempDir(), "config.yaml")
		Expect(os.WriteFile(cfg, []byte("shards:\n  tenantLimits:\n    routes: 3\n    regularExpressions: 2\n"), 0o644)).To(Succeed())
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: provider}})).To(Succeed())
		ownershipShard(ctx, c, shard, "limits.test", shardgatev1alpha1.ShardRoutesOwned)
		env.RunManager(manager.Options{ConfigPath: cfg, MetricsAddress: "0", HealthAddress: "0", Log: GinkgoLogr,
			OnXDSServer: func(s *xdsserver.Server) { xds = s }})
		f = newFixture(ctx, c, "lim")
		f.service(ctx, "web")
		bobNS = f.nsFor(ctx, bob)
	})

	accepted := func(obj client.Object) func(Gomega) string {
		return func(g Gomega) string {
			r := obj.(*gatewayv1.HTTPRoute)
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(r), r)).To(Succeed())
			for _, p := range r.Status.Parents {
				if string(p.ControllerName) == shardgatev1alpha1.ControllerName && string(p.ParentRef.Name) == shard.Name {
					return condition(p.Conditions, "Accepted")
				}
			}
			return "<none>"
		}
	}
	route := func(ns, name, host string, rules ...gatewayv1.HTTPRouteRule) *gatewayv1.HTTPRoute {
		r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		r.Spec.ParentRefs = shardRefs([]types.NamespacedName{shard}, "http")
		r.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(host)}
		r.Spec.Rules = rules
		return r
	}
	// prefixes are the paths the shard's virtual host for host routes on,
	// once each (a PathPrefix match is an exact path and a prefix route
	// in Envoy).
	prefixes := func(host string) func(Gomega) []string {
		return func(g Gomega) []string {
			g.Expect(xds).NotTo(BeNil())
			var out []string
			for _, rt := range vhostRoutes(xds, shard, host) {
				m := rt.GetMatch()
				p := m.GetPathSeparatedPrefix()
				if p == "" {
					p = m.GetPrefix()
				}
				if p == "" {
					p = m.GetPath()
				}
				if p != "/" {
					p = strings.TrimSuffix(p, "/")
				}
				if !slices.Contains(out, p) {
					out = append(out, p)
				}
			}
			return out
		}
	}

	// pastSecondOf waits until obj's creation second is over, so that
	// what is created next is strictly newer (creationTimestamp has
	// seconds only; ties go to the lower UID).
	pastSecondOf := func(obj client.Object) {
		Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		created := obj.GetCreationTimestamp().Time
		Eventually(func() bool { return time.Now().After(created.Add(time.Second)) }).Should(BeTrue())
	}

	var bobRoutes []*gatewayv1.HTTPRoute
	// census counts Bob's routes by their Accepted condition on the shard.
	census := func(g Gomega) map[string]int {
		out := map[string]int{}
		for _, r := range append([]*gatewayv1.HTTPRoute{{ObjectMeta: metav1.ObjectMeta{Namespace: bobNS, Name: "bob-root"}}}, bobRoutes...) {
			out[accepted(r)(g)]++
		}
		return out
	}

	It("serves the attacker's oldest routes up to its limits and refuses the rest, naming the limit", func() {
		f.leaseHost(ctx, "shop", "shop.lim.test")
		f.leaseHost(ctx, "bob-root", "bob.lim.test", owner(bob, 9))
		Eventually(f.reserved(ctx, "shop")).Should(Equal("True/Reserved"))
		Eventually(f.reserved(ctx, "bob-root")).Should(Equal("True/Reserved"))
		// Bob's generated route counts: one route of his three.
		root := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: bobNS, Name: "bob-root"}}
		Eventually(accepted(root)).Should(Equal("True/Accepted"))
		pastSecondOf(root)
		for i := range 6 {
			rule := webRule(fmt.Sprintf("/flood-%d", i))
			if i == 0 {
				// Three regular expressions: over the limit of 2 alone.
				for j := range 3 {
					rule.Matches = append(rule.Matches, gatewayv1.HTTPRouteMatch{
						Path: &gatewayv1.HTTPPathMatch{Type: new(gatewayv1.PathMatchPathPrefix), Value: new(fmt.Sprintf("/re-%d", j))},
						Headers: []gatewayv1.HTTPHeaderMatch{{Type: new(gatewayv1.HeaderMatchRegularExpression), Name: "x-evil",
							Value: fmt.Sprintf("^(a+|b+)*c%d$", j)}}})
				}
			}
			r := route(bobNS, fmt.Sprintf("flood-%d", i), "bob.lim.test", rule)
			Expect(c.Create(ctx, r)).To(Succeed())
			bobRoutes = append(bobRoutes, r)
			if i == 0 {
				// The regex route is his second oldest: refused for its
				// regular expressions, not for the number of routes.
				pastSecondOf(r)
			}
		}
		Eventually(accepted(bobRoutes[0])).Should(Equal(overLimit))
		// Of his seven routes, three are served (his generated one and
		// the two oldest that fit), four refused.
		Eventually(census).Should(Equal(map[string]int{"True/Accepted": 3, overLimit: 4}))
		Expect(accepted(root)(Default)).To(Equal("True/Accepted"), "the generated route is Bob's oldest")
		r := bobRoutes[0]
		Expect(c.Get(ctx, client.ObjectKeyFromObject(r), r)).To(Succeed())
		for _, p := range r.Status.Parents {
			if string(p.ParentRef.Name) == shard.Name {
				Expect(condition(p.Conditions, "Accepted")).To(Equal(overLimit))
				for _, cd := range p.Conditions {
					if cd.Type == "Accepted" {
						Expect(cd.Message).To(ContainSubstring("limit of 2 regular expressions"))
						Expect(cd.Message).To(ContainSubstring("shards.tenantLimits.regularExpressions"))
					}
				}
			}
		}
		// The shard serves exactly the three admitted routes for his name:
		// none of the refused ones' paths.
		Eventually(func(g Gomega) {
			ps := prefixes("bob.lim.test")(g)
			g.Expect(ps).To(HaveLen(3), "%v", ps)
			g.Expect(ps).NotTo(ContainElement(HavePrefix("/re-")))
		}).Should(Succeed())
	})

	It("keeps the attacker's admitted routes when it adds more: a new route never evicts an older one", func() {
		before := map[string]string{}
		for _, r := range bobRoutes {
			before[r.Name] = accepted(r)(Default)
		}
		pastSecondOf(bobRoutes[len(bobRoutes)-1])
		r := route(bobNS, "flood-late", "bob.lim.test", webRule("/late"))
		Expect(c.Create(ctx, r)).To(Succeed())
		Eventually(accepted(r)).Should(Equal(overLimit))
		Consistently(func(g Gomega) map[string]string {
			now := map[string]string{}
			for _, r := range bobRoutes {
				now[r.Name] = accepted(r)(g)
			}
			return now
		}, "2s", "200ms").Should(Equal(before))
		bobRoutes = append(bobRoutes, r)
	})

	It("serves the victim's route and each of its edits while the attacker is over its limits", func() {
		Eventually(accepted(&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: f.nsOf("shop"), Name: "shop"}})).Should(Equal("True/Accepted"))
		r := route(f.nsOf("shop"), "alice-api", "shop.lim.test", webRule("/v1"))
		Expect(c.Create(ctx, r)).To(Succeed())
		Eventually(accepted(r)).Should(Equal("True/Accepted"))
		Eventually(prefixes("shop.lim.test")).Should(ContainElement("/v1"))
		for _, v := range []string{"/v2", "/v3"} {
			// The controller writes the route's status meanwhile: read and
			// write again on a conflict.
			Eventually(func() error {
				if err := c.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
					return err
				}
				r.Spec.Rules[0].Matches[0].Path.Value = new(v)
				return c.Update(ctx, r)
			}).Should(Succeed())
			Eventually(prefixes("shop.lim.test")).Should(And(ContainElement(v), Not(ContainElement("/v1"))))
			Eventually(accepted(r)).Should(Equal("True/Accepted"))
		}
		// Bob's routes are as they were.
		Eventually(census).Should(Equal(map[string]int{"True/Accepted": 3, overLimit: 5}))
	})

	It("admits the attacker's next route once an older one is deleted", func() {
		var admitted *gatewayv1.HTTPRoute
		for _, r := range bobRoutes {
			if accepted(r)(Default) == "True/Accepted" {
				admitted = r
				break
			}
		}
		Expect(admitted).NotTo(BeNil())
		Expect(c.Delete(ctx, admitted)).To(Succeed())
		bobRoutes = slicesDelete(bobRoutes, admitted)
		Eventually(census).Should(Equal(map[string]int{"True/Accepted": 3, overLimit: 4}))
		Eventually(func(g Gomega) { g.Expect(prefixes("bob.lim.test")(g)).To(HaveLen(3)) }).Should(Succeed())
	})
})

func slicesDelete(rs []*gatewayv1.HTTPRoute, r *gatewayv1.HTTPRoute) []*gatewayv1.HTTPRoute {
	var out []*gatewayv1.HTTPRoute
	for _, x := range rs {
		if x != r {
			out = append(out, x)
		}
	}
	return out
}
