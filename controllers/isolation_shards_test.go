package controllers_test

import (
	"context"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Tenant isolation: a tenant's Gateway never displaces a shard
// (RELIABILITY.md, "Tenant isolation"). The provider's shard lives in
// zz-provider, which sorts after the attacker's namespace on purpose.
var _ = Describe("Tenant isolation: shard placement", Ordered, func() {
	ctx := context.Background()
	var env *testenv.Env
	var c client.Client
	var a *fixture
	var bobNS string
	const provider = "zz-provider"

	validOf := func(ns, name string) func(Gomega) string {
		return func(g Gomega) string {
			var p shardgatev1alpha1.GatewayParameters
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p)).To(Succeed())
			return condition(p.Status.Conditions, shardgatev1alpha1.ConditionValid)
		}
	}
	acceptedOf := func(ns, name string) func(Gomega) string {
		return func(g Gomega) string {
			var gw gatewayv1.Gateway
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &gw)).To(Succeed())
			return condition(gw.Status.Conditions, "Accepted")
		}
	}
	// aliceServed: alice's generated route names only the provider's
	// shard, and her status entry is that shard's, admitted.
	aliceServed := func(g Gomega) {
		var r gatewayv1.HTTPRoute
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: a.nsOf("web"), Name: "web"}, &r)).To(Succeed())
		g.Expect(r.Spec.ParentRefs).To(HaveLen(1), "parents: %+v", r.Spec.ParentRefs)
		g.Expect(string(*r.Spec.ParentRefs[0].Namespace) + "/" + string(r.Spec.ParentRefs[0].Name)).To(Equal(provider + "/shard-a"))
		lh := a.get(ctx, "web")
		g.Expect(lh.Status.Shards).To(HaveLen(1), "shards: %+v", lh.Status.Shards)
		g.Expect(lh.Status.Shards[0].Gateway).To(Equal(provider + "/shard-a"))
		adm := meta.FindStatusCondition(lh.Status.Shards[0].Conditions, shardgatev1alpha1.ConditionAdmitted)
		g.Expect(adm).NotTo(BeNil())
		g.Expect(string(adm.Status)+"/"+adm.Reason).To(Equal("True/"+shardgatev1alpha1.ReasonAdmitted), "status: %+v", lh.Status)
	}

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		c = env.Client
		cfg := configPath()
		Expect(os.WriteFile(cfg, []byte("shardNamespaces: ["+provider+"]\n"), 0o644)).To(Succeed())
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: provider}})).To(Succeed())
		shard(ctx, c, provider, "shard-a", "apps.example.test")
		env.RunManager(manager.Options{ConfigPath: cfg, MetricsAddress: "0", HealthAddress: "0", Log: GinkgoLogr})

		a = newFixture(ctx, c, "alice")
		a.service(ctx, "web")
		a.leaseHost(ctx, "web", "", func(lh *shardgatev1alpha1.LeaseHost) { lh.Spec.Subdomain = "web" })
		Eventually(aliceServed).Should(Succeed())
		Eventually(validOf(provider, "shard-a")).Should(Equal("True/Valid"))

		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "aa-tenant-b",
			Annotations: map[string]string{tenancy.OwnerKey: "akash1bob"}}}
		Expect(c.Create(ctx, ns)).To(Succeed())
		bobNS = ns.Name
	})

	It("never lets a tenant's Gateway named like a shard, in an earlier-sorting namespace, displace it", func() {
		// B's copy of the provider's shard: same name, same domain, its own
		// parameters, in B's own namespace.
		shard(ctx, c, bobNS, "shard-a", "apps.example.test")

		Eventually(validOf(bobNS, "shard-a")).Should(Equal("False/" + shardgatev1alpha1.ReasonShardInTenantNamespace))
		Eventually(acceptedOf(bobNS, "shard-a")).Should(Equal("False/" + string(gatewayv1.GatewayReasonInvalidParameters)))
		Eventually(func(g Gomega) []string {
			var evs eventsv1.EventList
			g.Expect(c.List(ctx, &evs, client.InNamespace(bobNS))).To(Succeed())
			var reasons []string
			for _, e := range evs.Items {
				if e.Regarding.Kind == "Gateway" && e.Regarding.Name == "shard-a" && e.Type == corev1.EventTypeWarning {
					reasons = append(reasons, e.Reason)
				}
			}
			return reasons
		}).Should(ContainElement(shardgatev1alpha1.ReasonShardInTenantNamespace))
		// The displacement would show within a translation or two; a second
		// of the provider's shard staying whole is the assertion.
		Consistently(func(g Gomega) {
			g.Expect(validOf(provider, "shard-a")(g)).To(Equal("True/Valid"))
			g.Expect(acceptedOf(provider, "shard-a")(g)).To(Equal("True/Accepted"))
			aliceServed(g)
		}, "1s").Should(Succeed())
	})

	It("restricts shards to shardNamespaces", func() {
		other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "unlisted-"}}
		Expect(c.Create(ctx, other)).To(Succeed())
		shard(ctx, c, other.Name, "shard-x", "x.example.test")
		Eventually(validOf(other.Name, "shard-x")).Should(Equal("False/" + shardgatev1alpha1.ReasonShardNamespaceNotAllowed))
		Eventually(acceptedOf(other.Name, "shard-x")).Should(Equal("False/" + string(gatewayv1.GatewayReasonInvalidParameters)))
		Consistently(aliceServed, "500ms").Should(Succeed())
	})

	It("withdraws a shard whose namespace is marked as a tenant's later", func() {
		var ns corev1.Namespace
		Expect(c.Get(ctx, client.ObjectKey{Name: provider}, &ns)).To(Succeed())
		update(ctx, c, &ns, func(n *corev1.Namespace) {
			n.Labels = map[string]string{tenancy.OwnerKey: "akash1mallory"}
		})
		Eventually(validOf(provider, "shard-a")).Should(Equal("False/" + shardgatev1alpha1.ReasonShardInTenantNamespace))
		Eventually(func(g Gomega) int { return len(a.get(ctx, "web").Status.Shards) }).Should(BeZero())
		Eventually(acceptedOf(provider, "shard-a")).Should(Equal("False/" + string(gatewayv1.GatewayReasonInvalidParameters)))
	})
})
