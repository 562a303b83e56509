package controllers_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/testenv"
)

// gatewayTranslations reads shardgate_gateway_translations_total{how}.
func gatewayTranslations(how string) float64 {
	GinkgoHelper()
	v, err := testenv.Counter("shardgate_gateway_translations_total", "how", how)
	Expect(err).NotTo(HaveOccurred())
	return v
}

// The flow a provider runs for every new lease: a Service, then a
// LeaseHost naming it. The production manager decides the name, generates
// the route and translates it into the shard: the shard Gateway is
// patched with the new route, never assembled again in full.
var _ = Describe("a new lease on a shard", Ordered, func() {
	ctx := context.Background()
	var c client.Client
	var f *fixture
	const infra = "default"

	BeforeAll(func() {
		env, err := testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		c = env.Client
		env.RunManager(manager.Options{MetricsAddress: "0", HealthAddress: "0", Log: GinkgoLogr})
		shard(ctx, c, infra, "shard-a", "shard-a.apps.example.test")
		f = newFixture(ctx, c, "leases")
		f.service(ctx, "web")
		for i := range 3 {
			name := fmt.Sprintf("app-%d", i)
			f.leaseHost(ctx, name, "", owner("akash1alice", uint64(i+1)), func(lh *shardgatev1alpha1.LeaseHost) { lh.Spec.Subdomain = name })
		}
		for i := range 3 {
			name := fmt.Sprintf("app-%d", i)
			Eventually(entries(ctx, c, f.nsOf(name), name)).Should(Equal(map[string]string{
				"shard-a": name + ".shard-a.apps.example.test True/Admitted",
			}))
		}
	})

	It("is patched into its shard", func() {
		for i := 3; i < 6; i++ {
			name := fmt.Sprintf("app-%d", i)
			full, patched := gatewayTranslations("full"), gatewayTranslations("patched")
			f.createService(ctx, f.nsFor(ctx, "akash1alice"), name)
			f.leaseHost(ctx, name, "", owner("akash1alice", uint64(i+1)), service(name), func(lh *shardgatev1alpha1.LeaseHost) { lh.Spec.Subdomain = name })
			Eventually(entries(ctx, c, f.nsOf(name), name)).Should(Equal(map[string]string{
				"shard-a": name + ".shard-a.apps.example.test True/Admitted",
			}))
			Eventually(f.reserved(ctx, name)).Should(Equal("True/Reserved"))
			Expect(gatewayTranslations("full")-full).To(BeZero(), "lease %s: the shard Gateway was assembled again in full", name)
			Expect(gatewayTranslations("patched")-patched).To(BeNumerically(">", 0), "lease %s: the shard Gateway was never patched", name)
		}
	})
})
