package e2e_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// twoPhasePublishes reads shardgate_xds_two_phase_publishes_total by
// outcome from the manager's metrics registry.
func twoPhasePublishes() map[string]float64 {
	GinkgoHelper()
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "shardgate_xds_two_phase_publishes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	Expect(out).To(HaveKey("acknowledged"), "the metric is exported")
	return out
}

var _ = Describe("Two-phase publish for grpc-go clients", func() {
	It("publishes each new cluster before the route table that uses it, released by the client's acknowledgement", func(ctx SpecContext) {
		// The suite's phase-two timeout (30 s) is long enough that only
		// the client's acknowledgement of phase one, never the timeout,
		// releases phase two.
		ns := namespace(ctx, "phases")
		gw := gateway(ctx, ns, "gw")
		const moves = 3
		for i := range moves + 1 {
			name := fmt.Sprintf("v%d", i)
			backendService(ctx, ns, name, startBackend(name))
		}
		r := httpRoute(ctx, gw, "r", "phases", rule(prefix("/"), to("v0")))
		c, _ := xdsClient(gw, "phases")
		Eventually(answeredBy(ctx, c, methodEmpty)).Should(Equal("v0"))

		before := twoPhasePublishes()
		for i := 1; i <= moves; i++ {
			// Each move sends the host to a cluster new to the Gateway.
			next := fmt.Sprintf("v%d", i)
			Expect(setBackend(ctx, r, next)).To(Succeed())
			Eventually(answeredOnlyBy(ctx, c, methodEmpty, 5)).Should(Equal(next))
			Eventually(func() float64 { return twoPhasePublishes()["acknowledged"] }).
				Should(BeNumerically(">=", before["acknowledged"]+float64(i)), "move %d went out in two phases", i)
		}
		after := twoPhasePublishes()
		Expect(after["timeout"]).To(Equal(before["timeout"]), "no phase two waited for the timeout")
		GinkgoWriter.Printf("two-phase publishes: before %v, after %v\n", before, after)
	})
})
