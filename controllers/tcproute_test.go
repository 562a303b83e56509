package controllers_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/internal/testenv"
	xdsserver "github.com/shardgate/shardgate/xds/server"
	"github.com/shardgate/shardgate/xds/translate"
)

// TCPRoutes carry a provider's own ports through a Gateway: the
// akash-gateway chart's shape (a Gateway in akash-gateway whose TCP
// listeners 8443 and 8444 admit TCPRoutes from every namespace; v1alpha2
// TCPRoutes in akash-services to the akash-provider Service). On a shard a
// tenant's TCPRoute is refused whatever the listener admits, and the
// provider's is served.
var _ = Describe("TCPRoute: a provider's ports through a Gateway", Ordered, func() {
	ctx := context.Background()
	var env *testenv.Env
	var c client.Client
	var xds *xdsserver.Server
	const gwNS, svcNS, tenantNS = "akash-gateway", "akash-services", "tenant-tcp"
	gw := types.NamespacedName{Namespace: gwNS, Name: "akash-gateway"}
	shard := types.NamespacedName{Namespace: gwNS, Name: "shard"}

	tcpListener := func(name string, port gatewayv1.PortNumber) gatewayv1.Listener {
		return gatewayv1.Listener{Name: gatewayv1.SectionName(name), Protocol: gatewayv1.TCPProtocolType, Port: port,
			AllowedRoutes: &gatewayv1.AllowedRoutes{
				Namespaces: &gatewayv1.RouteNamespaces{From: new(gatewayv1.NamespacesFromAll)},
				Kinds:      []gatewayv1.RouteGroupKind{{Group: new(gatewayv1.Group(gatewayv1.GroupName)), Kind: "TCPRoute"}},
			}}
	}
	// tcpRoute is a TCPRoute of ns on listener section of g to ns's
	// Service svc port.
	tcpRoute := func(ns, name string, g types.NamespacedName, section, svc string, port gatewayv1.PortNumber) *gatewayv1.TCPRoute {
		return &gatewayv1.TCPRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: gatewayv1.TCPRouteSpec{
				CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{
					Namespace: new(gatewayv1.Namespace(g.Namespace)), Name: gatewayv1.ObjectName(g.Name), SectionName: new(gatewayv1.SectionName(section))}}},
				Rules: []gatewayv1.TCPRouteRule{{BackendRefs: []gatewayv1.BackendRef{{BackendObjectReference: gatewayv1.BackendObjectReference{
					Name: gatewayv1.ObjectName(svc), Port: new(port)}}}}},
			},
		}
	}
	// parentOn is the route's Accepted and ResolvedRefs (Status/Reason) on g.
	parentOn := func(ns, name string, g types.NamespacedName) func(Gomega) []string {
		return func(gm Gomega) []string {
			var r gatewayv1.TCPRoute
			gm.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &r)).To(Succeed())
			for _, p := range r.Status.Parents {
				if string(p.ControllerName) == shardgatev1alpha1.ControllerName && string(p.ParentRef.Name) == g.Name {
					return []string{condition(p.Conditions, "Accepted"), condition(p.Conditions, "ResolvedRefs")}
				}
			}
			return nil
		}
	}
	// tcpProxyOf is the tcp_proxy of g's listener name in the published
	// snapshot (nil: no such listener).
	tcpProxyOf := func(g types.NamespacedName, name string) func(Gomega) *tcpproxyv3.TcpProxy {
		return func(gm Gomega) *tcpproxyv3.TcpProxy {
			gm.Expect(xds).NotTo(BeNil())
			snap, err := xds.Snapshot(g)
			if err != nil {
				return nil
			}
			res, ok := snap.GetResources(resourcev3.ListenerType)[name]
			if !ok {
				return nil
			}
			l := res.(*listenerv3.Listener)
			gm.Expect(l.FilterChains).To(HaveLen(1))
			gm.Expect(l.FilterChains[0].FilterChainMatch).To(BeNil(), "the chain takes every connection")
			gm.Expect(l.FilterChains[0].Filters).To(HaveLen(1))
			var p tcpproxyv3.TcpProxy
			gm.Expect(l.FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(&p)).To(Succeed())
			return &p
		}
	}
	clusterOf := func(g types.NamespacedName, name string) func(Gomega) *clusterv3.Cluster {
		return func(gm Gomega) *clusterv3.Cluster {
			snap, err := xds.Snapshot(g)
			if err != nil {
				return nil
			}
			res, ok := snap.GetResources(resourcev3.ClusterType)[name]
			if !ok {
				return nil
			}
			// The published cluster may be its wire form.
			m, err := translate.Decode(res)
			gm.Expect(err).NotTo(HaveOccurred())
			return m.(*clusterv3.Cluster)
		}
	}

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		c = env.Client
		Expect(client.IgnoreAlreadyExists(c.Create(ctx, &gatewayv1.GatewayClass{
			ObjectMeta: metav1.ObjectMeta{Name: "shardgate"},
			Spec:       gatewayv1.GatewayClassSpec{ControllerName: shardgatev1alpha1.ControllerName},
		}))).To(Succeed())
		for _, ns := range []string{gwNS, svcNS} {
			Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		}
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS,
			Annotations: map[string]string{tenancy.OwnerKey: "akash1bob"}}})).To(Succeed())
		for _, ns := range []string{svcNS, tenantNS} {
			Expect(c.Create(ctx, &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "akash-provider"},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
					{Name: "grpc", Port: 8443, Protocol: corev1.ProtocolTCP},
					{Name: "rest", Port: 8444, Protocol: corev1.ProtocolTCP},
					{Name: "api", Port: 5002, Protocol: corev1.ProtocolTCP},
				}},
			})).To(Succeed())
		}
		all := &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: new(gatewayv1.NamespacesFromAll)}}
		Expect(c.Create(ctx, &gatewayv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: gw.Namespace, Name: gw.Name},
			Spec: gatewayv1.GatewaySpec{GatewayClassName: "shardgate", Listeners: []gatewayv1.Listener{
				{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80, AllowedRoutes: all},
				tcpListener("tcp-8443", 8443), tcpListener("tcp-8444", 8444),
			}},
		})).To(Succeed())
		Expect(c.Create(ctx, &shardgatev1alpha1.GatewayParameters{
			ObjectMeta: metav1.ObjectMeta{Namespace: shard.Namespace, Name: shard.Name},
			Spec:       shardgatev1alpha1.GatewayParametersSpec{Shard: &shardgatev1alpha1.ShardSpec{Domain: "tcp.test"}},
		})).To(Succeed())
		Expect(c.Create(ctx, &gatewayv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: shard.Namespace, Name: shard.Name},
			Spec: gatewayv1.GatewaySpec{
				GatewayClassName: "shardgate",
				Infrastructure: &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{
					Group: "shardgate.io", Kind: "GatewayParameters", Name: shard.Name}},
				Listeners: []gatewayv1.Listener{
					{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80, AllowedRoutes: all},
					tcpListener("tcp-5002", 5002),
				},
			},
		})).To(Succeed())
		env.RunManager(manager.Options{MetricsAddress: "0", HealthAddress: "0", Log: GinkgoLogr,
			OnXDSServer: func(s *xdsserver.Server) { xds = s }})
	})

	It("carries 8443 and 8444 to the provider's Service, from v1alpha2 TCPRoutes as the akash-gateway chart writes them", func() {
		for _, port := range []string{"8443", "8444"} {
			// The chart's apiVersion: the CRD serves v1alpha2 and v1 alike.
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "gateway.networking.k8s.io/v1alpha2",
				"kind":       "TCPRoute",
				"metadata":   map[string]any{"name": "akash-provider-" + port, "namespace": svcNS},
				"spec": map[string]any{
					"parentRefs": []any{map[string]any{"name": gw.Name, "namespace": gw.Namespace, "sectionName": "tcp-" + port}},
					"rules": []any{map[string]any{"backendRefs": []any{map[string]any{
						"name": "akash-provider", "namespace": svcNS, "port": map[string]int64{"8443": 8443, "8444": 8444}[port]}}}},
				},
			}}
			Expect(c.Create(ctx, u)).To(Succeed())
		}
		for _, port := range []string{"8443", "8444"} {
			Eventually(parentOn(svcNS, "akash-provider-"+port, gw)).Should(Equal([]string{"True/Accepted", "True/ResolvedRefs"}))
			Eventually(func(g Gomega) string {
				p := tcpProxyOf(gw, "tcp-"+port)(g)
				g.Expect(p).NotTo(BeNil(), "listener tcp-%s", port)
				return p.GetCluster()
			}).Should(Equal(svcNS + "/akash-provider/" + port))
			Eventually(func(g Gomega) clusterv3.Cluster_DiscoveryType {
				cl := clusterOf(gw, svcNS+"/akash-provider/"+port)(g)
				g.Expect(cl).NotTo(BeNil())
				return cl.GetType()
			}).Should(Equal(clusterv3.Cluster_EDS))
		}
		Eventually(func(g Gomega) map[string]int32 {
			var got gatewayv1.Gateway
			g.Expect(c.Get(ctx, gw, &got)).To(Succeed())
			out := map[string]int32{}
			for _, l := range got.Status.Listeners {
				out[string(l.Name)] = l.AttachedRoutes
				if l.Name != "http" {
					g.Expect(l.SupportedKinds).To(ConsistOf(gatewayv1.RouteGroupKind{Group: new(gatewayv1.Group(gatewayv1.GroupName)), Kind: "TCPRoute"}))
				}
			}
			return out
		}).Should(Equal(map[string]int32{"http": 0, "tcp-8443": 1, "tcp-8444": 1}))
	})

	It("refuses a tenant's TCPRoute on a shard's TCP listener that admits every namespace, and serves the provider's", func() {
		Expect(c.Create(ctx, tcpRoute(tenantNS, "grab", shard, "tcp-5002", "akash-provider", 5002))).To(Succeed())
		Eventually(parentOn(tenantNS, "grab", shard)).Should(Equal([]string{"False/" + shardgatev1alpha1.ReasonPortNotOwned, "True/ResolvedRefs"}))
		Consistently(tcpProxyOf(shard, "tcp-5002"), "1s", "100ms").Should(BeNil(), "the port serves nothing of the tenant's route")

		Expect(c.Create(ctx, tcpRoute(svcNS, "api", shard, "tcp-5002", "akash-provider", 5002))).To(Succeed())
		Eventually(parentOn(svcNS, "api", shard)).Should(Equal([]string{"True/Accepted", "True/ResolvedRefs"}))
		Eventually(func(g Gomega) string {
			p := tcpProxyOf(shard, "tcp-5002")(g)
			g.Expect(p).NotTo(BeNil())
			return p.GetCluster()
		}).Should(Equal(svcNS + "/akash-provider/5002"))
		Expect(parentOn(tenantNS, "grab", shard)(Default)).To(Equal([]string{"False/" + shardgatev1alpha1.ReasonPortNotOwned, "True/ResolvedRefs"}))
	})
})
