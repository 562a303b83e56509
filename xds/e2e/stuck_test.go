package e2e_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
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
		gw := gateway(ctx, ns, "gw")
		service(ctx, ns, "web")
		// A route table of about 256 KiB: four times the 64 KiB window of
		// the client that never reads.
		padRoute(ctx, gw, "stuck", 256<<10)
		route := httpRoute(ctx, gw, "r", "stuck", rule(prefix("/stuck0"), to("web")))
		state0 := srv.State()

		healthy, err := dialADS(ctx, gw, "stuck-healthy", adsOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(healthy.Close)
		Expect(healthy.wait("/stuck0", 30*time.Second)).To(Succeed())
		Expect(healthy.has("x-e2e-pad-3-15")).To(BeTrue(), "the route table is padded")

		By("connecting a client that never ACKs and one that never reads")
		noACK, err := dialADS(ctx, gw, "stuck-no-ack", adsOptions{noACK: true})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(noACK.Close)
		Expect(noACK.wait("/stuck0", 30*time.Second)).To(Succeed())
		noRead, err := dialADS(ctx, gw, "stuck-no-read", adsOptions{noRead: true, dial: []grpc.DialOption{
			// Fixed 64 KiB windows (no BDP growth): unread data fills them.
			grpc.WithInitialWindowSize(64 << 10), grpc.WithInitialConnWindowSize(64 << 10),
		}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(noRead.Close)
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
		Expect(noACK.Alive()).To(BeTrue())
		Expect(noACK.routeTables()).To(Equal(1), "without an ACK the server sends no further route table")
		slices.Sort(latencies)
		GinkgoWriter.Printf("push latency to the healthy client with two stuck clients connected: min %s, median %s, max %s\n",
			latencies[0], latencies[len(latencies)/2], latencies[len(latencies)-1])
		AddReportEntry("push latency with stuck clients", map[string]any{
			"min": latencies[0].String(), "median": latencies[len(latencies)/2].String(), "max": latencies[len(latencies)-1].String(),
			"deadline": pushDeadline.String(),
		})

		By("releasing the server's state when the stuck clients go")
		noRead.Close()
		noACK.Close()
		healthy.Close()
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

// padRoute creates an HTTPRoute for "<host>.e2e.test" on gw whose rules set
// response headers (which no request here sees) of about size bytes in
// all, so that gw's route table is at least that big. Gateway API allows 16
// headers of up to 4096 bytes per filter.
func padRoute(ctx context.Context, gw types.NamespacedName, host string, size int) {
	GinkgoHelper()
	const perHeader, perRule = 4096, 16
	var rules []gatewayv1.HTTPRouteRule
	for i := 0; len(rules)*perRule*perHeader < size; i++ {
		var set []gatewayv1.HTTPHeader
		for j := range perRule {
			set = append(set, gatewayv1.HTTPHeader{
				Name:  gatewayv1.HTTPHeaderName(fmt.Sprintf("x-e2e-pad-%d-%d", i, j)),
				Value: padValue(i*perRule+j, perHeader),
			})
		}
		r := rule(prefix(fmt.Sprintf("/pad%d", i)), to("web"))
		r.Filters = []gatewayv1.HTTPRouteFilter{{
			Type:                   gatewayv1.HTTPRouteFilterResponseHeaderModifier,
			ResponseHeaderModifier: &gatewayv1.HTTPHeaderFilter{Set: set},
		}}
		rules = append(rules, r)
	}
	httpRoute(ctx, gw, "pad", host, rules...)
}

// padValue is n bytes that do not compress to nothing.
func padValue(seed, n int) string {
	b := make([]byte, n)
	x := uint32(seed*2654435761 + 1)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = 'a' + byte(x%26)
	}
	return string(b)
}
