package controllers_test

import (
	"context"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/testenv"
)

var _ = Describe("LeaseHost ownership on the real apiserver", Ordered, func() {
	ctx := context.Background()
	var env *testenv.Env
	var c client.Client
	var cfgFile string

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		c = env.Client
		cfgFile = configPath()
		writeConfig(cfgFile, ".blocked.test", "admin.provider.test")
		shard(ctx, c, "default", "shard-a", "shard-a.apps.test")
		env.RunManager(manager.Options{ConfigPath: cfgFile, MetricsAddress: "0", HealthAddress: "0", Log: GinkgoLogr})
	})

	It("gives a raced name to exactly one of two owners", func() {
		f := newFixture(ctx, c, "race")
		f.service(ctx, "web")
		var wg sync.WaitGroup
		for _, o := range []string{"akash1alice", "akash1bob"} {
			wg.Add(1)
			go func(o string) {
				defer GinkgoRecover()
				defer wg.Done()
				f.leaseHost(ctx, strings.TrimPrefix(o, "akash1"), "race.example.test", owner(o, 1))
			}(o)
		}
		wg.Wait()
		var results []string
		Eventually(func(g Gomega) {
			results = []string{f.reserved(ctx, "alice")(g), f.reserved(ctx, "bob")(g)}
			g.Expect(results).To(ConsistOf("True/Reserved", "False/HostnameInUse"))
		}).Should(Succeed())
		winner, loser := "alice", "bob"
		if results[1] == "True/Reserved" {
			winner, loser = "bob", "alice"
		}
		// The loser is told nothing about who holds the name.
		cond := meta.FindStatusCondition(f.get(ctx, loser).Status.Conditions, shardgatev1alpha1.ConditionReserved)
		Expect(cond.Message).NotTo(ContainSubstring("akash1"))
		Expect(cond.Message).NotTo(ContainSubstring(winner))
		Eventually(f.routeHostnames(ctx, winner)).Should(Equal([]string{"race.example.test"}))
		Consistently(f.routeHostnames(ctx, loser), "500ms").Should(BeNil())

		By("promoting the loser when the winner is deleted")
		Expect(c.Delete(ctx, f.get(ctx, winner))).To(Succeed())
		Eventually(f.reserved(ctx, loser)).Should(Equal("True/Reserved"))
		Eventually(f.routeHostnames(ctx, loser)).Should(Equal([]string{"race.example.test"}))
		Eventually(f.routeHostnames(ctx, winner)).Should(BeNil())
	})

	It("withholds a same-owner name until a takeover moves it, and the routes follow", func() {
		f := newFixture(ctx, c, "takeover")
		f.service(ctx, "web")
		f.leaseHost(ctx, "blue", "app.example.test", owner("akash1carol", 10))
		Eventually(f.reserved(ctx, "blue")).Should(Equal("True/Reserved"))
		f.leaseHost(ctx, "green", "app.example.test", owner("akash1carol", 11))
		Eventually(f.reserved(ctx, "green")).Should(Equal("False/Withheld"))
		Consistently(f.routeHostnames(ctx, "green"), "300ms").Should(BeNil())

		By("a lease differing only in oseq is the same deployment, not withheld")
		f.leaseHost(ctx, "blue-oseq2", "app.example.test", func(lh *shardgatev1alpha1.LeaseHost) {
			lh.Spec.Lease = shardgatev1alpha1.LeaseRef{Owner: "akash1carol", DSeq: 10, GSeq: 1, OSeq: 2}
		})
		Eventually(f.reserved(ctx, "blue-oseq2")).Should(Equal("True/Reserved"))

		By("setting takeover on the waiting deployment")
		update(ctx, c, f.get(ctx, "green"), func(lh *shardgatev1alpha1.LeaseHost) { lh.Spec.Takeover = true })
		Eventually(f.reserved(ctx, "green")).Should(Equal("True/Reserved"))
		Eventually(f.reserved(ctx, "blue")).Should(Equal("False/TransferredAway"))
		Eventually(f.routeHostnames(ctx, "green")).Should(Equal([]string{"app.example.test"}))
		Eventually(f.routeHostnames(ctx, "blue")).Should(BeNil())
		Eventually(f.routeHostnames(ctx, "blue-oseq2")).Should(BeNil())

		By("refusing a takeover across owners")
		f.leaseHost(ctx, "thief", "app.example.test", owner("akash1mallory", 1), takeover)
		Eventually(f.reserved(ctx, "thief")).Should(Equal("False/HostnameInUse"))
		Consistently(f.reserved(ctx, "green"), "300ms").Should(Equal("True/Reserved"))
	})

	It("refuses blocked names and revokes a claim when its name becomes blocked", func() {
		f := newFixture(ctx, c, "blocked")
		f.service(ctx, "web")
		f.leaseHost(ctx, "apex", "blocked.test")
		f.leaseHost(ctx, "deep", "a.b.blocked.test")
		f.leaseHost(ctx, "exact", "admin.provider.test")
		f.leaseHost(ctx, "lookalike", "notblocked.test")
		Eventually(f.reserved(ctx, "apex")).Should(Equal("False/Blocked"))
		Eventually(f.reserved(ctx, "deep")).Should(Equal("False/Blocked"))
		Eventually(f.reserved(ctx, "exact")).Should(Equal("False/Blocked"))
		Eventually(f.reserved(ctx, "lookalike")).Should(Equal("True/Reserved"))
		cond := meta.FindStatusCondition(f.get(ctx, "deep").Status.Conditions, shardgatev1alpha1.ConditionReserved)
		Expect(cond.Message).To(ContainSubstring(".blocked.test"))

		By("adding a block to the live config file")
		f.leaseHost(ctx, "victim", "soon.example.test")
		Eventually(f.reserved(ctx, "victim")).Should(Equal("True/Reserved"))
		Eventually(f.routeHostnames(ctx, "victim")).Should(Equal([]string{"soon.example.test"}))
		writeConfig(cfgFile, ".blocked.test", "admin.provider.test", "soon.example.test")
		Eventually(f.reserved(ctx, "victim")).Should(Equal("False/Blocked"))
		Eventually(f.routeHostnames(ctx, "victim")).Should(BeNil())

		By("removing the block again")
		writeConfig(cfgFile, ".blocked.test", "admin.provider.test")
		Eventually(f.reserved(ctx, "victim")).Should(Equal("True/Reserved"))
	})

	It("generates the HTTPRoute with parentRefs, hostnames, rule, labels and owner, and removes it on delete", func() {
		f := newFixture(ctx, c, "route")
		f.service(ctx, "web")
		lh := f.leaseHost(ctx, "site", "site.example.test", owner("akash1dave", 42), func(lh *shardgatev1alpha1.LeaseHost) {
			lh.Spec.Lease.GSeq, lh.Spec.Lease.OSeq = 3, 4
			lh.Spec.Path = "/api"
			lh.Spec.Service.Port = 80
		})
		var route gatewayv1.HTTPRoute
		Eventually(func() error { return c.Get(ctx, client.ObjectKey{Namespace: f.nsOf("site"), Name: "site"}, &route) }).Should(Succeed())
		Expect(route.Spec.ParentRefs).To(HaveLen(1))
		Expect(string(route.Spec.ParentRefs[0].Name)).To(Equal("shard-a"))
		Expect(string(*route.Spec.ParentRefs[0].Namespace)).To(Equal("default"))
		Expect(route.Spec.Hostnames).To(Equal([]gatewayv1.Hostname{"site.example.test"}))
		Expect(route.Spec.Rules).To(HaveLen(1))
		Expect(*route.Spec.Rules[0].Matches[0].Path.Type).To(Equal(gatewayv1.PathMatchPathPrefix))
		Expect(*route.Spec.Rules[0].Matches[0].Path.Value).To(Equal("/api"))
		Expect(string(route.Spec.Rules[0].BackendRefs[0].Name)).To(Equal("web"))
		Expect(int32(*route.Spec.Rules[0].BackendRefs[0].Port)).To(Equal(int32(80)))
		Expect(route.Labels).To(HaveKeyWithValue("shardgate.io/lease-owner", "akash1dave"))
		Expect(route.Labels).To(HaveKeyWithValue("shardgate.io/lease-dseq", "42"))
		Expect(route.Labels).To(HaveKeyWithValue("shardgate.io/lease-gseq", "3"))
		Expect(route.Labels).To(HaveKeyWithValue("shardgate.io/lease-oseq", "4"))
		ctrlRef := metav1.GetControllerOf(&route)
		Expect(ctrlRef).NotTo(BeNil())
		Expect(ctrlRef.UID).To(Equal(f.get(ctx, "site").UID))
		Expect(ctrlRef.Kind).To(Equal("LeaseHost"))
		// The route is written before the status that names it, so a reader
		// who saw the route waits for status.route rather than reading once.
		Eventually(func() string { return f.get(ctx, "site").Status.Route }).Should(Equal("site"))
		Expect(route.ManagedFields).To(ContainElement(HaveField("Manager", "shardgate")))

		By("making no write when nothing changed")
		// Steady state first: the Gateway has reported on the route (its
		// status write bumps the route, and Admitted bumps the LeaseHost).
		// site.example.test is outside shard-a's *.shard-a listener, so the
		// report is NotAdmitted.
		Eventually(func(g Gomega) string {
			cond := meta.FindStatusCondition(f.get(ctx, "site").Status.Conditions, shardgatev1alpha1.ConditionReady)
			g.Expect(cond).NotTo(BeNil())
			return string(cond.Status) + "/" + cond.Reason
		}).Should(Equal("False/" + shardgatev1alpha1.ReasonNotAdmitted))
		Expect(c.Get(ctx, client.ObjectKeyFromObject(&route), &route)).To(Succeed())
		rv := route.ResourceVersion
		lhRV := f.get(ctx, "site").ResourceVersion
		touched := f.get(ctx, "site")
		update(ctx, c, touched, func(lh *shardgatev1alpha1.LeaseHost) { lh.Annotations = map[string]string{"touch": "1"} })
		Consistently(func(g Gomega) {
			var r gatewayv1.HTTPRoute
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&route), &r)).To(Succeed())
			g.Expect(r.ResourceVersion).To(Equal(rv))
			// Only our annotation write bumped the LeaseHost.
			g.Expect(f.get(ctx, "site").ResourceVersion).NotTo(Equal(lhRV))
			g.Expect(f.get(ctx, "site").ResourceVersion).To(Equal(touched.ResourceVersion))
		}, "1s").Should(Succeed())

		By("deleting the LeaseHost")
		Expect(c.Delete(ctx, lh)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(&route), &gatewayv1.HTTPRoute{}))
		}).Should(BeTrue())
	})

	It("keeps the claim when the Service is missing, and reports it", func() {
		f := newFixture(ctx, c, "nosvc")
		f.leaseHost(ctx, "orphan", "orphan.example.test", service("missing"))
		Eventually(f.reserved(ctx, "orphan")).Should(Equal("True/Reserved"))
		Eventually(func(g Gomega) string {
			cond := meta.FindStatusCondition(f.get(ctx, "orphan").Status.Conditions, shardgatev1alpha1.ConditionReady)
			g.Expect(cond).NotTo(BeNil())
			return cond.Reason
		}).Should(Equal(shardgatev1alpha1.ReasonBackendNotFound))
		Eventually(f.routeHostnames(ctx, "orphan")).Should(Equal([]string{"orphan.example.test"}))

		By("creating the Service")
		f.service(ctx, "missing")
		Eventually(func(g Gomega) string {
			cond := meta.FindStatusCondition(f.get(ctx, "orphan").Status.Conditions, shardgatev1alpha1.ConditionReady)
			g.Expect(cond).NotTo(BeNil())
			return cond.Reason
		}).ShouldNot(Equal(shardgatev1alpha1.ReasonBackendNotFound))
	})

	It("releases the old name and claims the new one when a hostname is edited", func() {
		f := newFixture(ctx, c, "edit")
		f.service(ctx, "web")
		f.leaseHost(ctx, "first", "old.example.test", owner("akash1erin", 1))
		Eventually(f.reserved(ctx, "first")).Should(Equal("True/Reserved"))
		f.leaseHost(ctx, "waiter", "old.example.test", owner("akash1frank", 1))
		Eventually(f.reserved(ctx, "waiter")).Should(Equal("False/HostnameInUse"))

		update(ctx, c, f.get(ctx, "first"), func(lh *shardgatev1alpha1.LeaseHost) { lh.Spec.Hostname = "new.example.test" })
		Eventually(f.reserved(ctx, "first")).Should(Equal("True/Reserved"))
		Eventually(f.routeHostnames(ctx, "first")).Should(Equal([]string{"new.example.test"}))
		Eventually(f.reserved(ctx, "waiter")).Should(Equal("True/Reserved"))
		Eventually(f.routeHostnames(ctx, "waiter")).Should(Equal([]string{"old.example.test"}))
	})

	It("puts back a status another writer changed, and every status field with it", func() {
		f := newFixture(ctx, c, "status-path")
		f.service(ctx, "web")
		f.leaseHost(ctx, "app", "status-path.example.test", owner("akash1grace", 1))
		Eventually(f.reserved(ctx, "app")).Should(Equal("True/Reserved"))
		// Wait until the controller has nothing more to say: the Gateway
		// has reported on the route, so Ready is no longer Pending.
		var settled shardgatev1alpha1.LeaseHostStatus
		Eventually(func(g Gomega) {
			lh := f.get(ctx, "app")
			cond := meta.FindStatusCondition(lh.Status.Conditions, shardgatev1alpha1.ConditionReady)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).NotTo(Equal(shardgatev1alpha1.ReasonPending))
			settled = *lh.Status.DeepCopy()
		}).Should(Succeed())
		Expect(settled.Route).NotTo(BeEmpty())
		Expect(settled.Shards).To(HaveLen(1))

		By("another writer replacing the whole status")
		Eventually(func() error { // read again on a conflict with the controller's write
			forged := f.get(ctx, "app")
			forged.Status = shardgatev1alpha1.LeaseHostStatus{Conditions: []metav1.Condition{{
				Type: shardgatev1alpha1.ConditionReserved, Status: metav1.ConditionFalse, Reason: shardgatev1alpha1.ReasonHostnameInUse,
				Message: "forged", LastTransitionTime: metav1.Now(), ObservedGeneration: forged.Generation,
			}}}
			return c.Status().Update(ctx, forged)
		}).Should(Succeed())

		Eventually(func(g Gomega) {
			got := f.get(ctx, "app").Status
			g.Expect(got.ObservedGeneration).To(Equal(settled.ObservedGeneration))
			g.Expect(got.Route).To(Equal(settled.Route))
			g.Expect(got.Shards).To(HaveLen(1))
			g.Expect(got.Shards[0].Host).To(Equal(settled.Shards[0].Host))
			g.Expect(got.Shards[0].CanonicalHostname).To(Equal(settled.Shards[0].CanonicalHostname))
			for _, t := range []string{shardgatev1alpha1.ConditionReserved, shardgatev1alpha1.ConditionReady} {
				want := meta.FindStatusCondition(settled.Conditions, t)
				cond := meta.FindStatusCondition(got.Conditions, t)
				g.Expect(cond).NotTo(BeNil(), t)
				g.Expect([]string{string(cond.Status), cond.Reason, cond.Message}).To(Equal([]string{string(want.Status), want.Reason, want.Message}), t)
			}
		}).Should(Succeed())
		Expect(f.routeHostnames(ctx, "app")()).To(Equal([]string{"status-path.example.test"}))
	})
})
