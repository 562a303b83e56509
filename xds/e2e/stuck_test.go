package e2e_test

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
)

// pushDeadline is how soon a healthy client must see each route change
// while stuck clients of the same Gateway are connected. A client held up
// behind a stuck one would never see the change, so the bound only has to
// separate "delivered" from "blocked"; it is generous so that a loaded
// machine's scheduling delays do not count as blocking (the latencies
// measured are reported beside it).
const pushDeadline = 10 * time.Second

var _ = Describe("Stuck xDS clients", func() {
	It("do not delay pushes to the other clients of their Gateway", func(ctx SpecContext) {
		ns := namespace(ctx, "stuck")
		gw := gateway(ctx, ns, "gw", "stuck")
		service(ctx, ns, "web")
		// A route table of about 256 KiB: four times the 64 KiB window of
		// the client that never reads.
		h.setPad(gw, 256<<10)
		DeferCleanup(h.setPad, gw, 0)
		route := httpRoute(ctx, gw, "r", "stuck", rule(prefix("/stuck0"), to("web")))
		state0 := srv.State()

		healthy, err := dialADS(ctx, gw, "stuck-healthy", adsOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(healthy.close)
		Expect(healthy.wait("/stuck0", 30*time.Second)).To(Succeed())
		Expect(healthy.has("x-e2e-pad-15")).To(BeTrue(), "the route table is padded")

		By("connecting a client that never ACKs and one that never reads")
		noACK, err := dialADS(ctx, gw, "stuck-no-ack", adsOptions{noACK: true})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(noACK.close)
		Expect(noACK.wait("/stuck0", 30*time.Second)).To(Succeed())
		noRead, err := dialADS(ctx, gw, "stuck-no-read", adsOptions{noRead: true, dial: []grpc.DialOption{
			// Fixed 64 KiB windows (no BDP growth): unread data fills them.
			grpc.WithInitialWindowSize(64 << 10), grpc.WithInitialConnWindowSize(64 << 10),
		}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(noRead.close)
		// Prove the server's stream for it is stuck in flow control: a
		// go-control-plane send blocked waiting for write quota.
		Eventually(blockedSends).Should(BeNumerically(">=", 1), "a server stream blocked on the client that does not read")

		By("changing the route 10 times; the healthy client must see each within " + pushDeadline.String())
		var latencies []time.Duration
		for i := 1; i <= 10; i++ {
			marker := fmt.Sprintf("/stuck%d", i)
			Expect(setPath(ctx, route, marker)).To(Succeed())
			start := time.Now()
			Expect(healthy.wait(marker, pushDeadline)).To(Succeed(), "change %d", i)
			latencies = append(latencies, time.Since(start))
		}
		Expect(blockedSends()).To(BeNumerically(">=", 1), "the stuck stream was stuck throughout")
		Expect(noACK.alive()).To(BeTrue())
		Expect(noACK.routeTables()).To(Equal(1), "without an ACK the server sends no further route table")
		slices.Sort(latencies)
		GinkgoWriter.Printf("push latency to the healthy client with two stuck clients connected: min %s, median %s, max %s\n",
			latencies[0], latencies[len(latencies)/2], latencies[len(latencies)-1])
		AddReportEntry("push latency with stuck clients", map[string]any{
			"min": latencies[0].String(), "median": latencies[len(latencies)/2].String(), "max": latencies[len(latencies)-1].String(),
			"deadline": pushDeadline.String(),
		})

		By("releasing the server's state when the stuck clients go")
		noRead.close()
		noACK.close()
		healthy.close()
		Eventually(srv.State).Should(Equal(state0))
		Eventually(blockedSends).Should(BeZero())
	})
})

// blockedSends counts goroutines of this process that are go-control-plane
// stream sends waiting for gRPC write quota (the peer's flow-control window
// is full).
func blockedSends() int {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "(*writeQuota).get") && strings.Contains(g, "go-control-plane/pkg/server/sotw/v3.(*streamWrapper).send") {
			n++
		}
	}
	return n
}
