package controllers_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// leasedIPState describes a LeasedIP for failure messages.
func leasedIPState(ctx context.Context, c client.Client, ns, name string) string {
	var l shardgatev1alpha1.LeasedIP
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &l); err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%s/%s spec.lease.owner=%q endpoint=%q status=%+v", ns, name, l.Spec.Lease.Owner, l.Spec.Endpoint, l.Status)
}

// Hostile-tenant specs: tenant A (the victim) holds a dedicated IP; tenant
// B (the attacker) writes only in its own namespace and tries to land on
// A's address.
var _ = Describe("LeasedIP tenant isolation on the real MetalLB controller", Ordered, ContinueOnFailure, func() {
	ctx := context.Background()
	var env *testenv.Env
	var c client.Client

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{MetalLB: true, Pools: []testenv.Pool{{Name: leasedPool, Addresses: []string{leasedPoolRange}}}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			metalLBQuiet(env)
			Expect(env.Stop()).To(Succeed())
		})
		c = env.Client
		_, err = env.StartShardgate("shardgate-lip-tenancy", "--metrics-address=0",
			"--health-address=0", "--xds-address=127.0.0.1:0", "--log-format=text")
		Expect(err).NotTo(HaveOccurred())
	})

	// refused waits for the LeasedIP's refusal and checks that it has no
	// Service and no address.
	refused := func(f *fixture, name, service, reason string) {
		GinkgoHelper()
		Eventually(allocated(ctx, c, f.ns, name)).Should(Equal("False/"+reason), func() string { return leasedIPState(ctx, c, f.ns, name) })
		l := f.getLeasedIP(ctx, name)
		Expect(l.Status.IP).To(BeEmpty(), leasedIPState(ctx, c, f.ns, name))
		Expect(f.serviceExists(ctx, service)()).To(BeFalse(), "a refused LeasedIP has no LoadBalancer Service")
	}

	It("refuses B's LeasedIP that names A as its owner, in B's namespace: it never gets A's IP", func() {
		victim := ownedFixture(ctx, c, "tn-victim", "akash1victim")
		victim.service(ctx, "web")
		victim.leasedIP(ctx, "db", "db", "web", 80, lipLease("akash1victim", 1))
		ipA := victim.allocatedIP(ctx, "db")

		attacker := ownedFixture(ctx, c, "tn-attacker", "akash1attacker")
		attacker.service(ctx, "web")
		attacker.leasedIP(ctx, "db", "db", "web", 443, lipLease("akash1victim", 1))
		refused(attacker, "db", "web-ip-443-tcp", shardgatev1alpha1.ReasonNamespaceOwnerMismatch)
		cond := meta.FindStatusCondition(attacker.getLeasedIP(ctx, "db").Status.Conditions, shardgatev1alpha1.ConditionAllocated)
		Expect(cond.Message).NotTo(ContainSubstring("akash1attacker"), "the message names no namespace owner")
		Expect(victim.allocatedIP(ctx, "db")).To(Equal(ipA))
	})

	It("refuses a LeasedIP in a namespace with no owner marking: it never gets A's IP", func() {
		victim := ownedFixture(ctx, c, "tn-victim2", "akash1victim2")
		victim.service(ctx, "web")
		victim.leasedIP(ctx, "db", "db", "web", 80, lipLease("akash1victim2", 1))
		victim.allocatedIP(ctx, "db")

		attacker := ownedFixture(ctx, c, "tn-unmarked", "")
		attacker.service(ctx, "web")
		attacker.leasedIP(ctx, "db", "db", "web", 443, lipLease("akash1victim2", 1))
		refused(attacker, "db", "web-ip-443-tcp", shardgatev1alpha1.ReasonNamespaceOwnerMissing)
	})

	It("gives (akash1a, db-ip-primary) and (akash1a-ip-db, primary) different sharing keys and different IPs", func() {
		a := ownedFixture(ctx, c, "tn-collide-a", "akash1a")
		a.service(ctx, "web")
		a.leasedIP(ctx, "ip", "db-ip-primary", "web", 80, lipLease("akash1a", 1))
		ipA := a.allocatedIP(ctx, "ip")
		b := ownedFixture(ctx, c, "tn-collide-b", "akash1a-ip-db")
		b.service(ctx, "web")
		b.leasedIP(ctx, "ip", "primary", "web", 443, lipLease("akash1a-ip-db", 1))
		ipB := b.allocatedIP(ctx, "ip")
		keyA, keyB := a.getLeasedIP(ctx, "ip").Status.SharingKey, b.getLeasedIP(ctx, "ip").Status.SharingKey
		GinkgoWriter.Printf("sharing keys: %q (%s), %q (%s)\n", keyA, ipA, keyB, ipB)
		Expect(keyA).NotTo(Equal(keyB))
		Expect(ipB).NotTo(Equal(ipA), "%s\n%s", leasedIPState(ctx, c, a.ns, "ip"), leasedIPState(ctx, c, b.ns, "ip"))
	})

	It("takes the Service and the address away when a namespace changes owner, and never hands A's address to B while A holds it", func() {
		victim := ownedFixture(ctx, c, "tn-victim3", "akash1victim3")
		victim.service(ctx, "web")
		victim.leasedIP(ctx, "db", "db", "web", 80, lipLease("akash1victim3", 1))
		ipA := victim.allocatedIP(ctx, "db")

		By("a second namespace of the same owner shares the endpoint's IP")
		second := ownedFixture(ctx, c, "tn-victim3b", "akash1victim3")
		second.service(ctx, "web")
		second.leasedIP(ctx, "db", "db", "web", 443, lipLease("akash1victim3", 1))
		Expect(second.allocatedIP(ctx, "db")).To(Equal(ipA))

		By("the provider hands the second namespace to tenant B")
		var ns corev1.Namespace
		Expect(c.Get(ctx, client.ObjectKey{Name: second.ns}, &ns)).To(Succeed())
		ns.Annotations[tenancy.OwnerKey] = "akash1newowner"
		Expect(c.Update(ctx, &ns)).To(Succeed())
		refused(second, "db", "web-ip-443-tcp", shardgatev1alpha1.ReasonNamespaceOwnerMismatch)

		By("B's own LeasedIP for the same endpoint name gets another address")
		second.leasedIP(ctx, "own", "db", "web", 8443, lipLease("akash1newowner", 1))
		Expect(second.allocatedIP(ctx, "own")).NotTo(Equal(ipA))
		Expect(victim.allocatedIP(ctx, "db")).To(Equal(ipA))
	})
})
