package controllers_test

import (
	"context"
	"sort"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/testenv"
)

// entries renders a LeaseHost's status.shards as shard → "host Admitted/Reason".
func entries(ctx context.Context, c client.Client, ns, name string) func(Gomega) map[string]string {
	return func(g Gomega) map[string]string {
		var lh shardgatev1alpha1.LeaseHost
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &lh)).To(Succeed())
		out := map[string]string{}
		for _, s := range lh.Status.Shards {
			a := meta.FindStatusCondition(s.Conditions, shardgatev1alpha1.ConditionAdmitted)
			g.Expect(a).NotTo(BeNil())
			out[s.Name] = s.Host + " " + string(a.Status) + "/" + a.Reason
		}
		return out
	}
}

func sortedHostnames(ctx context.Context, c client.Client, ns, name string) func() []string {
	return func() []string {
		hs := routeHostnames(ctx, c, ns, name)()
		sort.Strings(hs)
		return hs
	}
}

var _ = Describe("shards", Ordered, func() {
	ctx := context.Background()
	var env *testenv.Env
	var c client.Client
	var f *fixture
	const infra = "default"

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		c = env.Client
		env.RunManager(manager.Options{MetricsAddress: "0", HealthAddress: "0", Log: GinkgoLogr})
		shard(ctx, c, infra, "shard-a", "shard-a.apps.example.test")
		shard(ctx, c, infra, "shard-b", "shard-b.apps.example.test")
		// shard-b does not carry the "basic" tier.
		Eventually(func() error {
			var pb shardgatev1alpha1.GatewayParameters
			Expect(c.Get(ctx, client.ObjectKey{Namespace: infra, Name: "shard-b"}, &pb)).To(Succeed())
			pb.Spec.Shard.LeaseSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"basic"},
			}}}
			return c.Update(ctx, &pb)
		}).Should(Succeed())

		f = newFixture(ctx, c, "tenants")
		f.service(ctx, "web")
		// bob holds web.shard-b explicitly before alice asks for "web" on every shard.
		f.leaseHost(ctx, "bob-web", "web.shard-b.apps.example.test", owner("akash1bob", 1))
		Eventually(f.reserved(ctx, "bob-web")).Should(Equal("True/Reserved"))
		f.leaseHost(ctx, "alice-web", "", owner("akash1alice", 1), func(lh *shardgatev1alpha1.LeaseHost) { lh.Spec.Subdomain = "web" })
		f.leaseHost(ctx, "carol-api", "", owner("akash1carol", 1), func(lh *shardgatev1alpha1.LeaseHost) {
			lh.Spec.Subdomain = "api"
			lh.Labels = map[string]string{"tier": "basic"}
		})
	})

	It("composes a subdomain per shard and refuses only the conflicting shard", func() {
		Eventually(entries(ctx, c, f.nsOf("alice-web"), "alice-web")).Should(Equal(map[string]string{
			"shard-a": "web.shard-a.apps.example.test True/Admitted",
			"shard-b": "web.shard-b.apps.example.test False/HostnameInUse",
		}))
		Eventually(f.reserved(ctx, "alice-web")).Should(Equal("True/PartiallyReserved"))
		Eventually(sortedHostnames(ctx, c, f.nsOf("alice-web"), "alice-web")).Should(Equal([]string{"web.shard-a.apps.example.test"}))
		Eventually(entries(ctx, c, f.nsOf("bob-web"), "bob-web")).Should(Equal(map[string]string{
			"shard-a": "web.shard-b.apps.example.test False/NoMatchingListenerHostname",
			"shard-b": "web.shard-b.apps.example.test True/Admitted",
		}))
		lh := f.get(ctx, "alice-web")
		Expect(lh.Status.Shards[0].Gateway).To(Equal("default/shard-a"))
		Expect(lh.Status.Shards[0].CanonicalHostname).To(Equal("router-shard-a.shard-a.apps.example.test"))
	})

	It("lists only the shards whose selectors select the LeaseHost", func() {
		Eventually(entries(ctx, c, f.nsOf("carol-api"), "carol-api")).Should(Equal(map[string]string{
			"shard-a": "api.shard-a.apps.example.test True/Admitted",
		}))
	})

	It("admits on both shards once the conflict is gone", func() {
		Expect(c.Delete(ctx, f.get(ctx, "bob-web"))).To(Succeed())
		Eventually(entries(ctx, c, f.nsOf("alice-web"), "alice-web")).Should(Equal(map[string]string{
			"shard-a": "web.shard-a.apps.example.test True/Admitted",
			"shard-b": "web.shard-b.apps.example.test True/Admitted",
		}))
		Eventually(sortedHostnames(ctx, c, f.nsOf("alice-web"), "alice-web")).Should(Equal([]string{"web.shard-a.apps.example.test", "web.shard-b.apps.example.test"}))
		Eventually(f.reserved(ctx, "alice-web")).Should(Equal("True/Reserved"))
	})

	It("follows a domain change with no stale entry, and reports a listener that cannot carry the domain", func() {
		var pa shardgatev1alpha1.GatewayParameters
		Eventually(func() error { // our status writes race this update
			Expect(c.Get(ctx, client.ObjectKey{Namespace: infra, Name: "shard-a"}, &pa)).To(Succeed())
			pa.Spec.Shard.Domain = "shard-a2.apps.example.test"
			return c.Update(ctx, &pa)
		}).Should(Succeed())

		By("the listener still says *.shard-a...: the parameters are not Valid")
		Eventually(func(g Gomega) string {
			var p shardgatev1alpha1.GatewayParameters
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&pa), &p)).To(Succeed())
			return condition(p.Status.Conditions, shardgatev1alpha1.ConditionValid)
		}).Should(Equal("False/" + shardgatev1alpha1.ReasonNoListenerForDomain))
		Eventually(entries(ctx, c, f.nsOf("alice-web"), "alice-web")).Should(HaveKeyWithValue("shard-a", "web.shard-a2.apps.example.test False/NoMatchingListenerHostname"))

		By("updating the listener")
		Eventually(func() error {
			var gw gatewayv1.Gateway
			Expect(c.Get(ctx, client.ObjectKey{Namespace: infra, Name: "shard-a"}, &gw)).To(Succeed())
			gw.Spec.Listeners[0].Hostname = new(gatewayv1.Hostname("*.shard-a2.apps.example.test"))
			return c.Update(ctx, &gw)
		}).Should(Succeed())
		Eventually(entries(ctx, c, f.nsOf("alice-web"), "alice-web")).Should(Equal(map[string]string{
			"shard-a": "web.shard-a2.apps.example.test True/Admitted",
			"shard-b": "web.shard-b.apps.example.test True/Admitted",
		}))
		Eventually(sortedHostnames(ctx, c, f.nsOf("alice-web"), "alice-web")).Should(Equal([]string{"web.shard-a2.apps.example.test", "web.shard-b.apps.example.test"}))
		Eventually(func(g Gomega) string {
			var p shardgatev1alpha1.GatewayParameters
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&pa), &p)).To(Succeed())
			return condition(p.Status.Conditions, shardgatev1alpha1.ConditionValid)
		}).Should(Equal("True/Valid"))
	})

	It("removes a deleted shard's entries", func() {
		var gw gatewayv1.Gateway
		Expect(c.Get(ctx, client.ObjectKey{Namespace: infra, Name: "shard-b"}, &gw)).To(Succeed())
		Expect(c.Delete(ctx, &gw)).To(Succeed())
		Eventually(entries(ctx, c, f.nsOf("alice-web"), "alice-web")).Should(Equal(map[string]string{
			"shard-a": "web.shard-a2.apps.example.test True/Admitted",
		}))
		Eventually(sortedHostnames(ctx, c, f.nsOf("alice-web"), "alice-web")).Should(Equal([]string{"web.shard-a2.apps.example.test"}))
	})
})
