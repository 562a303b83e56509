package e2e_test

import (
	"sort"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"net"
	"strconv"

	"github.com/shardgate/shardgate/internal/manager"
	xdsserver "github.com/shardgate/shardgate/xds/server"
)

// This test sends no traffic: the addresses are Pod IPs in 10.244.0.0/16,
// which nothing here may dial.
var _ = Describe("EndpointSlice → ClusterLoadAssignment", func() {
	It("publishes the ready endpoints of the apiserver's EndpointSlices", func(ctx SpecContext) {
		ns := namespace(ctx, "cla")
		gw := gateway(ctx, ns, "gw")
		service(ctx, ns, "web")
		cluster := ns + "/web/80"
		ready := discoveryv1.EndpointConditions{Ready: ptr.To(true)}
		notReady := discoveryv1.EndpointConditions{Ready: ptr.To(false)}
		slice := func(name string, port int32, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
			return &discoveryv1.EndpointSlice{
				ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
				AddressType: discoveryv1.AddressTypeIPv4,
				Endpoints:   eps,
				Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(port)}},
			}
		}
		ep := func(c discoveryv1.EndpointConditions, addrs ...string) discoveryv1.Endpoint {
			return discoveryv1.Endpoint{Addresses: addrs, Conditions: c}
		}
		s1 := slice("web-1", 8080, ep(ready, "10.244.1.10"), ep(ready, "10.244.1.11"), ep(notReady, "10.244.1.12"))
		s2 := slice("web-2", 8080, ep(ready, "10.244.2.20"), ep(discoveryv1.EndpointConditions{}, "10.244.2.21"))
		other := slice("web-other-port", 9090, ep(ready, "10.244.3.30"))
		other.Ports[0].Name = ptr.To("metrics")
		for _, s := range []*discoveryv1.EndpointSlice{s1, s2, other} {
			Expect(env.Client.Create(ctx, s)).To(Succeed())
		}
		httpRoute(ctx, gw, "r", "cla", rule(prefix("/"), to("web")))

		By("ready endpoints of the port named like the Service port, from every slice")
		Eventually(func(g Gomega) []string { return claEndpoints(g, gw, cluster) }).Should(Equal([]string{
			"10.244.1.10:8080", "10.244.1.11:8080", "10.244.2.20:8080", "10.244.2.21:8080",
		}))

		By("following an update")
		s1.Endpoints = []discoveryv1.Endpoint{ep(notReady, "10.244.1.10"), ep(ready, "10.244.1.12")}
		s1.Ports[0].Port = ptr.To(int32(8081))
		Expect(env.Client.Update(ctx, s1)).To(Succeed())
		Eventually(func(g Gomega) []string { return claEndpoints(g, gw, cluster) }).Should(Equal([]string{
			"10.244.1.12:8081", "10.244.2.20:8080", "10.244.2.21:8080",
		}))

		By("following a deletion")
		Expect(env.Client.Delete(ctx, s2)).To(Succeed())
		Eventually(func(g Gomega) []string { return claEndpoints(g, gw, cluster) }).Should(Equal([]string{"10.244.1.12:8081"}))
		Expect(env.Client.Delete(ctx, s1)).To(Succeed())
		Eventually(func(g Gomega) []string { return claEndpoints(g, gw, cluster) }).Should(BeEmpty())
		_ = types.NamespacedName{}
	})

	// EndpointSlices reach the xDS server apart from the Gateway API
	// translation; a replica that starts must still serve a Gateway with
	// its endpoints from its very first config, not a config with empty
	// load assignments followed by the endpoints.
	It("gives a new replica's first config its endpoints", func(ctx SpecContext) {
		ns := namespace(ctx, "replica")
		gw := gateway(ctx, ns, "gw")
		service(ctx, ns, "web")
		cluster := ns + "/web/80"
		Expect(env.Client.Create(ctx, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "web-1", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.4.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(int32(8080))}},
		})).To(Succeed())
		httpRoute(ctx, gw, "r", "replica", rule(prefix("/"), to("web")))
		Eventually(func(g Gomega) []string { return claEndpoints(g, gw, cluster) }).Should(Equal([]string{"10.244.4.10:8080"}))

		By("a second replica, started with every object in place, and a delta client subscribed to it as soon as it listens")
		got := make(chan *xdsserver.Server, 1)
		stop := env.RunManager(manager.Options{OnXDSServer: func(s *xdsserver.Server) { got <- s }})
		DeferCleanup(stop)
		var replica *xdsserver.Server
		Eventually(got).Should(Receive(&replica))
		Eventually(replica.Addr).ShouldNot(BeNil())
		_, port, err := net.SplitHostPort(replica.Addr().String())
		Expect(err).NotTo(HaveOccurred())
		c, err := dialDelta(ctx, gw, "replica-proxy", deltaOptions{target: net.JoinHostPort("localhost", port)})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Close)

		By("the first load assignment of the cluster it sends has the endpoint")
		first := func() []string {
			for _, r := range c.Log() {
				if eps, ok := r.Endpoints()[cluster]; ok {
					return eps
				}
			}
			return nil
		}
		Eventually(first).ShouldNot(BeNil())
		Expect(first()).To(Equal([]string{"10.244.4.10:8080"}))
	})
})

// claEndpoints lists the addresses of a published ClusterLoadAssignment.
func claEndpoints(g Gomega, gw types.NamespacedName, cluster string) []string {
	eps := resources(g, gw, resourcev3.EndpointType)
	g.Expect(eps).To(HaveKey(cluster))
	cla := eps[cluster].(*endpointv3.ClusterLoadAssignment)
	out := []string{}
	for _, l := range cla.GetEndpoints() {
		for _, e := range l.GetLbEndpoints() {
			a := e.GetEndpoint().GetAddress().GetSocketAddress()
			out = append(out, net.JoinHostPort(a.GetAddress(), strconv.Itoa(int(a.GetPortValue()))))
		}
	}
	sort.Strings(out)
	return out
}
