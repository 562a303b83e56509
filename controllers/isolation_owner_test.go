package controllers_test

import (
	"context"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Tenant isolation: a namespace's owner marking is authoritative
// (RELIABILITY.md, "Tenant isolation"). Tenant A (akash1alice) is the
// victim, tenant B (akash1bob) the attacker; B writes only in namespaces
// the provider marked as B's, or in namespaces nobody marked.
var _ = Describe("Tenant isolation: namespace owners", Ordered, func() {
	ctx := context.Background()
	var env *testenv.Env
	var c client.Client
	var cfgFile string
	var a *fixture
	var bobNS, strayNS string

	config := func(extra string) {
		tmp := cfgFile + ".tmp"
		Expect(os.WriteFile(tmp, []byte("blockedHostnames: [.blocked.test]\n"+extra), 0o644)).To(Succeed())
		Expect(os.Rename(tmp, cfgFile)).To(Succeed())
	}
	// holds: alice's LeaseHost still holds shop.example.test and its route
	// still serves it.
	aliceHolds := func(g Gomega) {
		g.Expect(a.reserved(ctx, "shop")(g)).To(Equal("True/" + shardgatev1alpha1.ReasonReserved))
		g.Expect(a.routeHostnames(ctx, "shop")()).To(Equal([]string{"shop.example.test"}), "alice's route lost the name")
	}

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		c = env.Client
		cfgFile = configPath()
		config("")
		shard(ctx, c, "default", "shard-o", "apps.example.test")
		env.RunManager(manager.Options{ConfigPath: cfgFile, MetricsAddress: "0", HealthAddress: "0", Log: GinkgoLogr})

		a = newFixture(ctx, c, "alice")
		a.service(ctx, "web")
		bobNS = a.nsFor(ctx, "akash1bob") // marked shardgate.io/owner: akash1bob
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "stray-"}}
		Expect(c.Create(ctx, ns)).To(Succeed())
		strayNS = ns.Name
		a.createService(ctx, strayNS, "web")

		a.leaseHost(ctx, "shop", "shop.example.test", owner("akash1alice", 1))
		Eventually(aliceHolds).Should(Succeed())
	})

	It("refuses a LeaseHost that names the victim's owner with takeover in the attacker's own namespace", func() {
		Expect(c.Create(ctx, hostileLeaseHost(bobNS, "steal", "shop.example.test", owner("akash1alice", 2), takeover))).To(Succeed())
		Eventually(reserved(ctx, c, bobNS, "steal")).Should(Equal("False/" + shardgatev1alpha1.ReasonNamespaceOwnerMismatch))
		cond := meta.FindStatusCondition(getLH(ctx, c, bobNS, "steal").Status.Conditions, shardgatev1alpha1.ConditionReserved)
		Expect(cond.Message).NotTo(ContainSubstring("akash1bob"), "the namespace's owner must not be revealed")
		// The takeover would move the name at once; for a second it must not.
		Consistently(aliceHolds, "1s").Should(Succeed())
		Consistently(routeHostnames(ctx, c, bobNS, "steal"), "300ms").Should(BeNil())
	})

	It("refuses the same takeover from a namespace with no owner marking (NamespaceOwnerMissing)", func() {
		Expect(c.Create(ctx, hostileLeaseHost(strayNS, "steal", "shop.example.test", owner("akash1alice", 3), takeover))).To(Succeed())
		Eventually(reserved(ctx, c, strayNS, "steal")).Should(Equal("False/" + shardgatev1alpha1.ReasonNamespaceOwnerMissing))
		Consistently(aliceHolds, "1s").Should(Succeed())
		Consistently(routeHostnames(ctx, c, strayNS, "steal"), "300ms").Should(BeNil())

		By("an unmarked namespace claims no free name either")
		Expect(c.Create(ctx, hostileLeaseHost(strayNS, "free", "free.example.test", owner("akash1carol", 1)))).To(Succeed())
		Eventually(reserved(ctx, c, strayNS, "free")).Should(Equal("False/" + shardgatev1alpha1.ReasonNamespaceOwnerMissing))
		Consistently(routeHostnames(ctx, c, strayNS, "free"), "300ms").Should(BeNil())
	})

	It("with requireNamespaceOwner: false admits unmarked namespaces, but never honours a takeover from one", func() {
		config("requireNamespaceOwner: false\n")
		Eventually(reserved(ctx, c, strayNS, "free")).Should(Equal("True/" + shardgatev1alpha1.ReasonReserved))
		Eventually(routeHostnames(ctx, c, strayNS, "free")).Should(Equal([]string{"free.example.test"}))
		// Same owner, other deployment, takeover ignored: withheld.
		Eventually(reserved(ctx, c, strayNS, "steal")).Should(Equal("False/" + shardgatev1alpha1.ReasonWithheld))
		Consistently(aliceHolds, "1s").Should(Succeed())
		// A marked namespace of another owner is still refused.
		Consistently(reserved(ctx, c, bobNS, "steal"), "300ms").Should(Equal("False/" + shardgatev1alpha1.ReasonNamespaceOwnerMismatch))

		By("restoring the default revokes the unmarked namespace's name")
		config("")
		Eventually(reserved(ctx, c, strayNS, "free")).Should(Equal("False/" + shardgatev1alpha1.ReasonNamespaceOwnerMissing))
		Eventually(routeHostnames(ctx, c, strayNS, "free")).Should(BeNil())
	})

	It("lets the owner's own takeover through from another namespace the provider marked as the owner's", func() {
		other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "alice-green-",
			Labels: map[string]string{"shardgate.io/owner": "akash1alice"}}} // a label marks it too
		Expect(c.Create(ctx, other)).To(Succeed())
		a.createService(ctx, other.Name, "web")
		Expect(c.Create(ctx, hostileLeaseHost(other.Name, "green", "shop.example.test", owner("akash1alice", 4), takeover))).To(Succeed())
		Eventually(reserved(ctx, c, other.Name, "green")).Should(Equal("True/" + shardgatev1alpha1.ReasonReserved))
		Eventually(a.reserved(ctx, "shop")).Should(Equal("False/" + shardgatev1alpha1.ReasonTransferredAway))
		Eventually(routeHostnames(ctx, c, other.Name, "green")).Should(Equal([]string{"shop.example.test"}))
	})
})
