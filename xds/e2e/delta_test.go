package e2e_test

import (
	"encoding/json"
	"fmt"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/xdstest"
	xdsserver "github.com/shardgate/shardgate/xds/server"
)

// quiet is how long a delta stream must stay silent to show that the server
// sends nothing: a resend loop (go-control-plane's state-of-the-world
// server resends a NACKed version thousands of times a second) or a resend
// of unchanged resources would show up well within it.
const quiet = 2 * time.Second

// Envoy speaks the incremental protocol. The Gateway here has no API
// listeners: the client gets the translated listeners.
var _ = Describe("Delta ADS", func() {
	It("orders clusters before routes, guards NACKs, removes, and resumes from initial resource versions", func(ctx SpecContext) {
		ns := namespace(ctx, "delta")
		gwName := gateway(ctx, ns, "gw")
		service(ctx, ns, "svc-0")
		cluster := func(i int) string { return fmt.Sprintf("%s/svc-%d/80", ns, i) }
		r := httpRoute(ctx, gwName, "r", "delta", rule(prefix("/"), to("svc-0")))
		Eventually(func(g Gomega) { g.Expect(routeTableText(g, gwName)).To(ContainSubstring(cluster(0))) }).Should(Succeed())

		c, err := dialDelta(ctx, gwName, "delta-envoy", deltaOptions{reject: "/delta-nack"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Close)
		holds := func(typeURL string) func() []string { return func() []string { return c.Names(typeURL) } }
		Eventually(holds(resourcev3.ListenerType)).Should(ContainElement("http-80"))
		Eventually(func() string { return c.Text(resourcev3.RouteType, httpRouteTable) }).Should(ContainSubstring(cluster(0)))
		Expect(c.Names(resourcev3.EndpointType)).To(ContainElement(cluster(0)))

		By("sending each new cluster before the route configuration that uses it")
		const flips = 5
		for i := 1; i <= flips; i++ {
			service(ctx, ns, fmt.Sprintf("svc-%d", i))
			Expect(setBackend(ctx, r, fmt.Sprintf("svc-%d", i))).To(Succeed())
			Eventually(func() string { return c.Text(resourcev3.RouteType, httpRouteTable) }).Should(ContainSubstring(cluster(i)))
		}
		Expect(c.Dangling()).To(BeEmpty(), "responses in order: %v", c.Log())
		Expect(c.Err()).NotTo(HaveOccurred())
		GinkgoWriter.Printf("delta responses, in order: %v\n", c.Log())

		By("removing what leaves the config: a listener and its route configuration")
		setListeners := func(ls ...gatewayv1.Listener) {
			GinkgoHelper()
			patch, err := json.Marshal(map[string]any{"spec": map[string]any{"listeners": ls}})
			Expect(err).NotTo(HaveOccurred())
			gw := &gatewayv1.Gateway{ObjectMeta: objectMeta(gwName)}
			Expect(env.Client.Patch(ctx, gw, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		}
		setListeners(httpListener("http", 80), httpListener("http-alt", 8080))
		Eventually(holds(resourcev3.ListenerType)).Should(ConsistOf("http-80", "http-8080"))
		Eventually(holds(resourcev3.RouteType)).Should(ConsistOf("http-80", "http-8080"))
		setListeners(httpListener("http", 80))
		Eventually(holds(resourcev3.ListenerType)).Should(ConsistOf("http-80"))
		Eventually(holds(resourcev3.RouteType)).Should(ConsistOf("http-80"))
		Expect(removed(c.Log(), resourcev3.ListenerType)).To(ContainElement("http-8080"))
		Expect(removed(c.Log(), resourcev3.RouteType)).To(ContainElement("http-8080"))

		By("removing the clusters (and load assignments) the route left, once their retention ends")
		Eventually(holds(resourcev3.ClusterType)).WithTimeout(xdsserver.DefaultRetainRemoved + time.Minute).Should(ConsistOf(cluster(flips)))
		Eventually(holds(resourcev3.EndpointType)).Should(ConsistOf(cluster(flips)))
		for i := 0; i < flips; i++ {
			Expect(removed(c.Log(), resourcev3.ClusterType)).To(ContainElement(cluster(i)))
			Expect(removed(c.Log(), resourcev3.EndpointType)).To(ContainElement(cluster(i)))
		}
		Expect(c.Dangling()).To(BeEmpty(), "responses in order: %v", c.Log())

		By("not resending a route configuration the client refused")
		nacksBefore := nackMetric(resourcev3.RouteType)
		Expect(setRules(ctx, r, rule(prefix("/"), to(fmt.Sprintf("svc-%d", flips))), rule(prefix("/delta-nack"), to(fmt.Sprintf("svc-%d", flips))))).To(Succeed())
		Eventually(c.Refused).Should(Equal(1))
		sent := len(c.Log())
		Consistently(func() int { return len(c.Log()) }).WithTimeout(quiet).WithPolling(50*time.Millisecond).Should(Equal(sent),
			"responses after the NACK")
		Expect(c.Refused()).To(Equal(1))
		Expect(nackMetric(resourcev3.RouteType) - nacksBefore).To(Equal(1.0))
		Expect(c.Text(resourcev3.RouteType, httpRouteTable)).NotTo(ContainSubstring("/delta-nack"), "the client keeps the last configuration it accepted")

		By("sending the next configuration after a NACK")
		Expect(setRules(ctx, r, rule(prefix("/"), to(fmt.Sprintf("svc-%d", flips))), rule(prefix("/delta-fixed"), to(fmt.Sprintf("svc-%d", flips))))).To(Succeed())
		Eventually(func() string { return c.Text(resourcev3.RouteType, httpRouteTable) }).Should(ContainSubstring("/delta-fixed"))
		Expect(c.Refused()).To(Equal(1))
		Expect(c.Err()).NotTo(HaveOccurred())

		By("reconnecting with initial resource versions: only what changed is sent")
		held := c.Held()
		c.Close()
		initial := map[string]map[string]string{}
		for typeURL, m := range held {
			initial[typeURL] = m
		}
		// One route configuration at a version the server never sent,
		// and one cluster that no longer exists.
		initial[resourcev3.RouteType][httpRouteTable] = "stale"
		gone := ns + "/gone/80"
		initial[resourcev3.ClusterType][gone] = "old"
		again, err := dialDelta(ctx, gwName, "delta-envoy", deltaOptions{initial: initial})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(again.Close)
		Eventually(func() string { return again.Text(resourcev3.RouteType, httpRouteTable) }).Should(ContainSubstring("/delta-fixed"))
		Eventually(func() []string { return removed(again.Log(), resourcev3.ClusterType) }).Should(ConsistOf(gone))
		// Each subscription is answered once, in the order they were
		// made (the route configurations last); a new wildcard
		// subscription is answered even when it brings nothing, so that
		// the client knows it is up to date. None of the answers may carry
		// an unchanged resource.
		got := again.Log()
		Consistently(func() []*xdstest.DeltaResponse { return again.Log() }).WithTimeout(quiet).WithPolling(50 * time.Millisecond).Should(HaveLen(len(got)))
		GinkgoWriter.Printf("after reconnecting with initial resource versions: %v\n", got)
		AddReportEntry("delta resume", fmt.Sprint(got))
		sentAgain, removedAgain := map[string][]string{}, map[string][]string{}
		for _, resp := range got {
			Expect(resp.Nacked).To(BeFalse())
			if len(resp.Added) > 0 {
				sentAgain[xdstest.ShortType(resp.TypeURL)] = append(sentAgain[xdstest.ShortType(resp.TypeURL)], resp.Added...)
			}
			if len(resp.Removed) > 0 {
				removedAgain[xdstest.ShortType(resp.TypeURL)] = append(removedAgain[xdstest.ShortType(resp.TypeURL)], resp.Removed...)
			}
		}
		// Only the stale route configuration: no unchanged cluster, load
		// assignment or listener.
		Expect(sentAgain).To(Equal(map[string][]string{xdstest.ShortType(resourcev3.RouteType): {httpRouteTable}}), "resources sent again: %v", got)
		Expect(removedAgain).To(Equal(map[string][]string{xdstest.ShortType(resourcev3.ClusterType): {gone}}), "resources removed: %v", got)

		By("sending only the route configuration for a route change")
		Expect(setRules(ctx, r, rule(prefix("/"), to(fmt.Sprintf("svc-%d", flips))), rule(prefix("/delta-resumed"), to(fmt.Sprintf("svc-%d", flips))))).To(Succeed())
		Eventually(func() string { return again.Text(resourcev3.RouteType, httpRouteTable) }).Should(ContainSubstring("/delta-resumed"))
		Consistently(func() []*xdstest.DeltaResponse { return again.Log() }).WithTimeout(quiet).WithPolling(50 * time.Millisecond).Should(HaveLen(len(got) + 1))
		last := again.Log()[len(got)]
		Expect([]any{last.TypeURL, last.Added, last.Removed, last.Nacked}).To(Equal([]any{resourcev3.RouteType, []string{httpRouteTable}, []string(nil), false}))
		Expect(again.Err()).NotTo(HaveOccurred())
	})
})

// removed lists every resource of one type that responses removed.
func removed(log []*xdstest.DeltaResponse, typeURL string) []string {
	var out []string
	for _, r := range log {
		if r.TypeURL == typeURL {
			out = append(out, r.Removed...)
		}
	}
	return out
}
