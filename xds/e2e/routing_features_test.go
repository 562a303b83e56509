package e2e_test

import (
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	xdsserver "github.com/shardgate/shardgate/xds/server"
)

var _ = Describe("grpc-go xDS client and the routing features", func() {
	It("accepts a retry policy with a per-try timeout and routes by it", func(ctx SpecContext) {
		ns := namespace(ctx, "retry")
		gw := gateway(ctx, ns, "gw")
		backendService(ctx, ns, "svc", startBackend("retried"))
		r := rule(prefix("/"), to("svc"))
		r.Timeouts = &gatewayv1.HTTPRouteTimeouts{BackendRequest: ptr.To(gatewayv1.Duration("2s"))}
		r.Retry = &gatewayv1.HTTPRouteRetry{Codes: []gatewayv1.HTTPRouteRetryStatusCode{503}, Attempts: ptr.To(2),
			Backoff: ptr.To(gatewayv1.Duration("50ms"))}
		httpRoute(ctx, gw, "r", "retry", r)

		By("the published route carries the retry policy")
		Eventually(func(g Gomega) {
			rc, ok := resources(g, gw, resourcev3.RouteType)[httpRouteTable].(*routev3.RouteConfiguration)
			g.Expect(ok).To(BeTrue())
			var action *routev3.RouteAction
			for _, vh := range rc.GetVirtualHosts() {
				for _, rt := range vh.GetRoutes() {
					if rt.GetRoute().GetRetryPolicy() != nil {
						action = rt.GetRoute()
					}
				}
			}
			g.Expect(action).NotTo(BeNil())
			p := action.GetRetryPolicy()
			g.Expect(p.GetRetryOn()).To(Equal("connect-failure,refused-stream,reset,retriable-status-codes"))
			g.Expect(p.GetPerTryTimeout().AsDuration()).To(Equal(2 * time.Second))
			g.Expect(p.GetNumRetries().GetValue()).To(Equal(uint32(2)))
			// The retry budget: 3 attempts of 2 s, 2 backoffs of at most 10 × 50 ms.
			g.Expect(action.GetTimeout().AsDuration()).To(Equal(7 * time.Second))
		}).Should(Succeed())

		By("grpc-go accepts the route table and routes RPCs by it")
		c, _ := xdsClient(gw, "retry")
		Eventually(answeredBy(ctx, c, methodEmpty)).Should(Equal("retried"))
		for range 20 {
			Expect(call(ctx, c, methodUnary)).To(Equal("retried"))
		}
	})

	It("answers a Host outside the HTTPS listener's hostname with 421, not with the listener's routes", func(ctx SpecContext) {
		ns := namespace(ctx, "misdirected")
		certPEM, keyPEM, err := xdsCA.Issue("e2e", []string{"*." + domain}, nil, time.Hour, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cert"},
			Type: corev1.SecretTypeTLS, Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM}})).To(Succeed())
		https := func(name, host string) gatewayv1.Listener {
			return gatewayv1.Listener{Name: gatewayv1.SectionName(name), Protocol: gatewayv1.HTTPSProtocolType, Port: 443,
				Hostname: ptr.To(gatewayv1.Hostname(host)),
				TLS: &gatewayv1.ListenerTLSConfig{Mode: ptr.To(gatewayv1.TLSModeTerminate),
					CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "cert"}}}}
		}
		// grpc-go's target picks the API listener, and its authority the
		// virtual host. Two Gateways with the same HTTPS listener "a"
		// (a.e2e.test): on each, the API listener a.e2e.test names the
		// route table of that listener's TLS server. Host a on a's table;
		// Host b on a's table (the authority b.e2e.test on target
		// a.e2e.test), as if it came on a connection made for SNI a.
		gws := map[string]types.NamespacedName{}
		var parents []gatewayv1.ParentReference
		for _, host := range []string{"a", "b"} {
			nn := types.NamespacedName{Namespace: ns, Name: "gw-" + host}
			gws[host] = nn
			Expect(env.Client.Create(ctx, &gatewayv1.Gateway{ObjectMeta: objectMeta(nn), Spec: gatewayv1.GatewaySpec{
				GatewayClassName: "shardgate", Listeners: []gatewayv1.Listener{https("a", "a."+domain)}}})).To(Succeed())
			parents = append(parents, gatewayv1.ParentReference{Name: gatewayv1.ObjectName(nn.Name)})
		}
		backendService(ctx, ns, "svc-a", startBackend("a"))
		route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}, Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: parents},
			Rules:           []gatewayv1.HTTPRouteRule{rule(prefix("/"), to("svc-a"))}}}
		Expect(env.Client.Create(ctx, route)).To(Succeed())
		for _, nn := range gws {
			Eventually(func(g Gomega) {
				g.Expect(srv.PublishErrors()).NotTo(HaveKey(nn), "publish errors")
				rc, ok := resources(g, nn, resourcev3.RouteType)["https-443/a"].(*routev3.RouteConfiguration)
				g.Expect(ok).To(BeTrue())
				var hosts []string
				for _, vh := range rc.GetVirtualHosts() {
					hosts = append(hosts, vh.GetName())
				}
				g.Expect(hosts).To(ContainElement("a." + domain))
			}).Should(Succeed(), "Gateway %s published with the route", nn)
		}

		a, _ := xdsClient(gws["a"], "a")
		Eventually(answeredBy(ctx, a, methodEmpty)).Should(Equal("a"))

		By("Host b on listener a's chain matches the 421 route, which grpc-go cannot forward")
		_, bs := bootstrap(xdsserver.NodeGroup(gws["b"]), writeCerts(xdsCA, gws["b"]))
		b := dialXDS(bs, "a", grpc.WithAuthority("b."+domain))
		misdirected := func(g Gomega) {
			_, err := call(ctx, b, methodEmpty)
			g.Expect(status.Code(err)).To(Equal(codes.Unavailable), "err %v", err)
			g.Expect(err.Error()).To(ContainSubstring("matched route does not have a supported route action type"))
		}
		Eventually(misdirected).Should(Succeed())
		Consistently(misdirected, "2s").Should(Succeed())
		rc, ok := resources(Default, gws["b"], resourcev3.RouteType)["https-443/a"].(*routev3.RouteConfiguration)
		Expect(ok).To(BeTrue())
		var star *routev3.VirtualHost
		for _, vh := range rc.GetVirtualHosts() {
			if vh.GetName() == "*" {
				star = vh
			}
		}
		Expect(star).NotTo(BeNil())
		Expect(star.GetRoutes()).To(HaveLen(1))
		Expect(star.GetRoutes()[0].GetDirectResponse().GetStatus()).To(Equal(uint32(421)))
	})
})
