package controllers_test

import (
	"context"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/testenv"
)

// The CA ConfigMaps a Gateway's spec.tls.frontend names reach the
// translator through the manager's cache (which holds every ConfigMap, ca.crt
// only), and a change to one re-translates the Gateway.
var _ = Describe("Gateway client certificate validation on the real apiserver", Ordered, func() {
	ctx := context.Background()
	var c client.Client
	var gwNS, tenantNS string
	var crt, key []byte

	gwStatus := func(g Gomega, listener, typ string) string {
		var gw gatewayv1.Gateway
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: gwNS, Name: "mtls"}, &gw)).To(Succeed())
		return listenerCondition(&gw, listener, typ)
	}

	BeforeAll(func() {
		env, err := testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		c = env.Client
		env.RunManager(manager.Options{MetricsAddress: "0", HealthAddress: "0", XDSAddress: "127.0.0.1:0", Log: GinkgoLogr})
		Expect(c.Create(ctx, &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "shardgate"},
			Spec: gatewayv1.GatewayClassSpec{ControllerName: "shardgate.io/gateway-controller"}})).To(Succeed())
		crt, err = os.ReadFile("../internal/gatewayapi/testdata/tls.crt")
		Expect(err).NotTo(HaveOccurred())
		key, err = os.ReadFile("../internal/gatewayapi/testdata/tls.key")
		Expect(err).NotTo(HaveOccurred())
		gwNS = ownedFixture(ctx, c, "mtls", "").ns // the provider's
		tenantNS = newFixture(ctx, c, "tenant").ns
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "cert"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": crt, "tls.key": key}})).To(Succeed())
		// A tenant's ConfigMap holding a CA bundle: no ReferenceGrant yet.
		Expect(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "tenant-ca"},
			Data: map[string]string{"ca.crt": string(crt)}})).To(Succeed())
		https := func(name string, port int32) gatewayv1.Listener {
			return gatewayv1.Listener{Name: gatewayv1.SectionName(name), Port: gatewayv1.PortNumber(port), Protocol: gatewayv1.HTTPSProtocolType,
				TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "cert"}}}}
		}
		gw := hostileGateway(gwNS, "mtls", https("own", 443), https("tenant", 8443))
		gw.Spec.TLS = &gatewayv1.GatewayTLSConfig{Frontend: &gatewayv1.FrontendTLSConfig{
			Default: gatewayv1.TLSConfig{Validation: &gatewayv1.FrontendTLSValidation{
				CACertificateRefs: []gatewayv1.ObjectReference{{Kind: "ConfigMap", Name: "client-ca"}}}},
			PerPort: []gatewayv1.TLSPortConfig{{Port: 8443, TLS: gatewayv1.TLSConfig{Validation: &gatewayv1.FrontendTLSValidation{
				CACertificateRefs: []gatewayv1.ObjectReference{{Kind: "ConfigMap", Name: "tenant-ca", Namespace: new(gatewayv1.Namespace(tenantNS))}}}}}},
		}}
		Expect(c.Create(ctx, gw)).To(Succeed())
	})

	It("reports a missing CA ConfigMap, then accepts the listener when it appears, and notices a bad update", func() {
		Eventually(func(g Gomega) {
			g.Expect(gwStatus(g, "own", "ResolvedRefs")).To(Equal("False/InvalidCACertificateRef"))
			g.Expect(gwStatus(g, "own", "Accepted")).To(Equal("False/NoValidCACertificate"))
		}).Should(Succeed())

		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "client-ca"}, Data: map[string]string{"ca.crt": string(crt)}}
		Expect(c.Create(ctx, cm)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(gwStatus(g, "own", "ResolvedRefs")).To(Equal("True/ResolvedRefs"))
			g.Expect(gwStatus(g, "own", "Accepted")).To(Equal("True/Accepted"))
		}).Should(Succeed())

		update(ctx, c, cm, func(cm *corev1.ConfigMap) { cm.Data["ca.crt"] = "not a certificate" })
		Eventually(func(g Gomega) string { return gwStatus(g, "own", "ResolvedRefs") }).Should(Equal("False/InvalidCACertificateRef"))
	})

	It("does not let the Gateway read a tenant's ConfigMap without a ReferenceGrant, and does with one", func() {
		Eventually(func(g Gomega) {
			g.Expect(gwStatus(g, "tenant", "ResolvedRefs")).To(Equal("False/RefNotPermitted"))
			g.Expect(gwStatus(g, "tenant", "Accepted")).To(Equal("False/NoValidCACertificate"))
		}).Should(Succeed())
		grant := &gatewayv1beta1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "ca"}}
		grant.Spec.From = []gatewayv1beta1.ReferenceGrantFrom{{Group: gatewayv1.GroupName, Kind: "Gateway", Namespace: gatewayv1beta1.Namespace(gwNS)}}
		grant.Spec.To = []gatewayv1beta1.ReferenceGrantTo{{Group: "", Kind: "ConfigMap", Name: new(gatewayv1beta1.ObjectName("tenant-ca"))}}
		Expect(c.Create(ctx, grant)).To(Succeed())
		Eventually(func(g Gomega) string { return gwStatus(g, "tenant", "ResolvedRefs") }).Should(Equal("True/ResolvedRefs"))
	})
})
