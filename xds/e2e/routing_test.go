package e2e_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var _ = Describe("grpc-go xDS client routing", func() {
	It("routes RPCs by exact path, path prefix, header and weight", func(ctx SpecContext) {
		ns := namespace(ctx, "routing")
		gw := gateway(ctx, ns, "gw", "routing")
		bs := map[string]*backend{}
		for _, n := range []string{"a", "b", "c", "d", "e"} {
			bs[n] = startBackend(n)
			loopbackService(ctx, ns, "svc-"+n, bs[n])
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
		gw := gateway(ctx, ns, "gw", "change")
		loopbackService(ctx, ns, "old", startBackend("old"))
		loopbackService(ctx, ns, "new", startBackend("new"))
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

	It("moves traffic when the Service's EndpointSlice changes", func(ctx SpecContext) {
		ns := namespace(ctx, "endpoints")
		gw := gateway(ctx, ns, "gw", "endpoints")
		one, two := startBackend("pod-1"), startBackend("pod-2")
		// The EndpointSlice in the apiserver holds pod addresses that are
		// never dialled; the test maps each to a loopback backend.
		svc := types.NamespacedName{Namespace: ns, Name: "web"}
		h.mapPodIPs(svc, map[string]int32{"10.244.7.1": one.port, "10.244.7.2": two.port})
		service(ctx, ns, "web")
		slice := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "web-1", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.7.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(int32(8080))}},
		}
		Expect(env.Client.Create(ctx, slice)).To(Succeed())
		httpRoute(ctx, gw, "r", "endpoints", rule(prefix("/"), to("web")))
		c, _ := xdsClient(gw, "endpoints")
		Eventually(answeredBy(ctx, c, methodEmpty)).Should(Equal("pod-1"))

		By("replacing the endpoint in the apiserver")
		start := time.Now()
		slice.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"10.244.7.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}}
		Expect(env.Client.Update(ctx, slice)).To(Succeed())
		Eventually(answeredBy(ctx, c, methodEmpty)).Should(Equal("pod-2"))
		GinkgoWriter.Printf("endpoint change reached the client in %s\n", time.Since(start))
		for range 50 {
			Expect(call(ctx, c, methodEmpty)).To(Equal("pod-2"))
		}

		By("marking the endpoint not ready and adding a ready one")
		slice.Endpoints = []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.7.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"10.244.7.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
		}
		Expect(env.Client.Update(ctx, slice)).To(Succeed())
		Eventually(answeredBy(ctx, c, methodEmpty)).Should(Equal("pod-1"))
		for range 50 {
			Expect(call(ctx, c, methodEmpty)).To(Equal("pod-1"))
		}

		By("a loopback endpoint fed directly, after a touch of the Service")
		three := startBackend("direct")
		h.setEndpoints(svc, three.port)
		touch(ctx, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns}})
		Eventually(answeredBy(ctx, c, methodEmpty)).Should(Equal("direct"))
	})
})
