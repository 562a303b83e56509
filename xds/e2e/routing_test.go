package e2e_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"k8s.io/utils/ptr"

	xdsserver "github.com/shardgate/shardgate/xds/server"
)

var _ = Describe("grpc-go xDS client routing", func() {
	It("serves each host of a Gateway to its own client, as xds:///<host> and xds:///<host>:<port>", func(ctx SpecContext) {
		ns := namespace(ctx, "hosts")
		gw := gateway(ctx, ns, "gw")
		backendService(ctx, ns, "one", startBackend("one"))
		backendService(ctx, ns, "two", startBackend("two"))
		httpRoute(ctx, gw, "r1", "one", rule(prefix("/"), to("one")))
		httpRoute(ctx, gw, "r2", "two", rule(prefix("/"), to("two")))
		// Each client asks for its own host's listener and cluster only,
		// of a Gateway that has two of each.
		one, _ := xdsClient(gw, "one")
		two, _ := xdsClient(gw, "two")
		Eventually(answeredOnlyBy(ctx, one, methodEmpty, 5)).Should(Equal("one"))
		Eventually(answeredOnlyBy(ctx, two, methodEmpty, 5)).Should(Equal("two"))

		By("the port-qualified listener, with the bare host as authority")
		_, bs := bootstrap(xdsserver.NodeGroup(gw), writeCerts(xdsCA, gw))
		ported := dialTarget(bs, "xds:///two."+domain+":80", grpc.WithAuthority("two."+domain))
		Eventually(answeredOnlyBy(ctx, ported, methodEmpty, 5)).Should(Equal("two"))

		By("a host no route serves has no listener")
		expectNoService(ctx, dialXDS(bs, "three"))
	})

	It("routes RPCs by exact path, path prefix, header and weight", func(ctx SpecContext) {
		ns := namespace(ctx, "routing")
		gw := gateway(ctx, ns, "gw")
		bs := map[string]*backend{}
		for _, n := range []string{"a", "b", "c", "d", "e"} {
			bs[n] = startBackend(n)
			backendService(ctx, ns, "svc-"+n, bs[n])
		}
		// Four HTTPRoutes, so Gateway API precedence across routes is
		// what decides.
		httpRoute(ctx, gw, "exact", "routing", rule(exact(methodEmpty), to("svc-a")))
		httpRoute(ctx, gw, "prefix", "routing", rule(prefix(servicePath), to("svc-b")))
		httpRoute(ctx, gw, "header", "routing", rule(withHeader(prefix(servicePath), "x-variant", "canary"), to("svc-c")))
		httpRoute(ctx, gw, "weighted", "routing", rule(withHeader(exact(methodUnary), "x-variant", "weighted"),
			weighted("svc-d", 80), weighted("svc-e", 20)))

		c, _ := xdsClient(gw, "routing")
		// The last route to arrive decides when the table is complete.
		Eventually(answeredBy(ctx, c, methodUnary, "x-variant", "weighted")).Should(Or(Equal("d"), Equal("e")))
		Eventually(answeredBy(ctx, c, methodUnary, "x-variant", "canary")).Should(Equal("c"))

		By("exact path")
		Expect(call(ctx, c, methodEmpty)).To(Equal("a"))
		Expect(call(ctx, c, methodEmpty, "x-variant", "canary")).To(Equal("a"), "an exact path beats a prefix with a header")
		By("path prefix")
		Expect(call(ctx, c, methodUnary)).To(Equal("b"))
		Expect(call(ctx, c, methodUnary, "x-variant", "other")).To(Equal("b"))
		By("header match")
		Expect(call(ctx, c, methodUnary, "x-variant", "canary")).To(Equal("c"))

		By("weights 80/20 over 2000 RPCs")
		counts := map[string]int{}
		const n = 2000
		for range n {
			who, err := call(ctx, c, methodUnary, "x-variant", "weighted")
			Expect(err).NotTo(HaveOccurred())
			counts[who]++
		}
		AddReportEntry("weighted split over 2000 RPCs", counts)
		GinkgoWriter.Printf("weighted split over %d RPCs: %v\n", n, counts)
		Expect(counts).To(HaveLen(2))
		Expect(counts["d"]).To(BeNumerically("~", n*80/100, n*5/100))
		Expect(counts["e"]).To(BeNumerically("~", n*20/100, n*5/100))
	})

	It("follows an HTTPRoute change in the apiserver", func(ctx SpecContext) {
		ns := namespace(ctx, "change")
		gw := gateway(ctx, ns, "gw")
		backendService(ctx, ns, "old", startBackend("old"))
		backendService(ctx, ns, "new", startBackend("new"))
		r := httpRoute(ctx, gw, "r", "change", rule(prefix("/"), to("old")))
		c, _ := xdsClient(gw, "change")
		Eventually(answeredBy(ctx, c, methodEmpty)).Should(Equal("old"))

		start := time.Now()
		Expect(setBackend(ctx, r, "new")).To(Succeed())
		Eventually(answeredBy(ctx, c, methodEmpty)).Should(Equal("new"))
		GinkgoWriter.Printf("route change reached the client in %s\n", time.Since(start))
		for range 50 {
			Expect(call(ctx, c, methodEmpty)).To(Equal("new"))
		}
	})

	It("moves traffic when the Service's EndpointSlices change", func(ctx SpecContext) {
		ns := namespace(ctx, "endpoints")
		gw := gateway(ctx, ns, "gw")
		one, two, three := startBackend("pod-1"), startBackend("pod-2"), startBackend("pod-3")
		svc := service(ctx, ns, "web")
		slice := endpointSlice(svc, "web-1", one.port, true)
		Expect(env.Client.Create(ctx, slice)).To(Succeed())
		httpRoute(ctx, gw, "r", "endpoints", rule(prefix("/"), to("web")))
		c, _ := xdsClient(gw, "endpoints")
		Eventually(answeredBy(ctx, c, methodEmpty)).Should(Equal("pod-1"))

		By("replacing the endpoint in the apiserver")
		start := time.Now()
		slice.Ports[0].Port = ptr.To(two.port)
		Expect(env.Client.Update(ctx, slice)).To(Succeed())
		Eventually(answeredBy(ctx, c, methodEmpty)).Should(Equal("pod-2"))
		GinkgoWriter.Printf("endpoint change reached the client in %s\n", time.Since(start))
		for range 50 {
			Expect(call(ctx, c, methodEmpty)).To(Equal("pod-2"))
		}

		By("adding a slice with a ready endpoint and marking the first one not ready")
		Expect(env.Client.Create(ctx, endpointSlice(svc, "web-2", three.port, true))).To(Succeed())
		slice.Endpoints[0].Conditions.Ready = ptr.To(false)
		Expect(env.Client.Update(ctx, slice)).To(Succeed())
		// Two changes: while only the first has reached the client, it
		// balances over pod-2 and pod-3.
		Eventually(answeredOnlyBy(ctx, c, methodEmpty, 20)).Should(Equal("pod-3"))
		for range 50 {
			Expect(call(ctx, c, methodEmpty)).To(Equal("pod-3"))
		}

		By("deleting that slice: the first endpoint, ready again, takes over")
		slice.Endpoints[0].Conditions.Ready = ptr.To(true)
		Expect(env.Client.Update(ctx, slice)).To(Succeed())
		Expect(env.Client.Delete(ctx, endpointSlice(svc, "web-2", three.port, true))).To(Succeed())
		Eventually(answeredOnlyBy(ctx, c, methodEmpty, 20)).Should(Equal("pod-2"))
		for range 50 {
			Expect(call(ctx, c, methodEmpty)).To(Equal("pod-2"))
		}
	})
})
