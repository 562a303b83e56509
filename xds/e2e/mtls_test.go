package e2e_test

import (
	"context"
	"crypto/tls"
	"math/big"
	"strings"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/pki"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/internal/xdstest"
	xdsserver "github.com/shardgate/shardgate/xds/server"
)

var _ = Describe("xDS mTLS", func() {
	var gwA, gwB types.NamespacedName
	var ra *gatewayv1.HTTPRoute

	BeforeEach(func(ctx SpecContext) {
		ns := namespace(ctx, "mtls")
		gwA = gateway(ctx, ns, "a")
		gwB = gateway(ctx, ns, "b")
		backendService(ctx, ns, "web", startBackend("web"))
		ra = httpRoute(ctx, gwA, "ra", "mtls-a", rule(prefix("/"), to("web")))
		httpRoute(ctx, gwB, "rb", "mtls-b", rule(prefix("/"), to("web")))
		servesHost(gwA, "mtls-a")
		servesHost(gwB, "mtls-b")
	})

	It("serves a Gateway's config to a client with that Gateway's certificate", func(ctx SpecContext) {
		resp, err := adsFetch(ctx, clientTLS(xdsCA, gwA), gwA, "mtls-a."+domain)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Names).To(HaveLen(1))
		c, _ := xdsClient(gwA, "mtls-a")
		Eventually(answeredBy(ctx, c, methodEmpty)).Should(Equal("web"))
	})

	It("refuses a client without a client certificate", func(ctx SpecContext) {
		_, err := adsFetch(ctx, clientTLS(nil, gwA), gwA, "mtls-a."+domain)
		Expect(err).To(HaveOccurred())
		GinkgoWriter.Printf("ADS without a client certificate: %v\n", err)
		Expect(err.Error()).To(MatchRegexp(tlsRefusal))

		_, bs := bootstrap(xdsserver.NodeGroup(gwA), writeCerts(nil, gwA))
		expectNoService(ctx, dialXDS(bs, "mtls-a"))
	})

	It("refuses a client certificate from another CA", func(ctx SpecContext) {
		other, err := pki.NewCA("not-the-xds-ca")
		Expect(err).NotTo(HaveOccurred())
		_, err = adsFetch(ctx, clientTLS(other, gwA), gwA, "mtls-a."+domain)
		Expect(err).To(HaveOccurred())
		GinkgoWriter.Printf("ADS with a certificate from another CA: %v\n", err)
		Expect(err.Error()).To(MatchRegexp(tlsRefusal))

		_, bs := bootstrap(xdsserver.NodeGroup(gwA), writeCerts(other, gwA))
		expectNoService(ctx, dialXDS(bs, "mtls-a"))
	})

	It("gives nothing to a Gateway's certificate asking for another Gateway", func(ctx SpecContext) {
		_, err := adsFetch(ctx, clientTLS(xdsCA, gwA), gwB, "mtls-b."+domain)
		Expect(err).To(HaveOccurred())
		GinkgoWriter.Printf("ADS as %s with a certificate for %s: %v\n", gwB, gwA, err)
		Expect(err.Error()).To(ContainSubstring("does not match the client certificate's Gateway"))

		// The same through grpc-go: a certificate for A, node.cluster B.
		_, bs := bootstrap(xdsserver.NodeGroup(gwB), writeCerts(xdsCA, gwA))
		expectNoService(ctx, dialXDS(bs, "mtls-b"))
	})

	It("rotates the server certificate without dropping connected clients, and honours new client certificates and CA bundles", func(ctx SpecContext) {
		connected, err := dialADS(ctx, gwA, "mtls-rotate-connected", adsOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(connected.Close)
		Expect(connected.wait("mtls-a."+domain, 30*time.Second)).To(Succeed())
		grpcClient, _ := xdsClient(gwA, "mtls-a")
		Eventually(answeredBy(ctx, grpcClient, methodEmpty)).Should(Equal("web"))

		By("rotating the server certificate on demand")
		before := serverSerial(clientTLS(xdsCA, gwA))
		Expect(before).To(Equal(xdsCreds.Certificate().Leaf.SerialNumber))
		Expect(xdsCreds.Rotate(ctx)).To(Succeed())
		after := serverSerial(clientTLS(xdsCA, gwA))
		Expect(after).NotTo(Equal(before), "a new handshake gets the new certificate")
		Expect(after).To(Equal(xdsCreds.Certificate().Leaf.SerialNumber))
		GinkgoWriter.Printf("server certificate serial %s → %s\n", before, after)

		By("keeping the stream opened before the rotation, which still receives updates")
		// A path the grpc-go client's calls still match, whether or not
		// the update has reached it when it calls.
		rotated := strings.TrimSuffix(servicePath, "/")
		Expect(setPath(ctx, ra, rotated)).To(Succeed())
		Expect(connected.wait(rotated, 30*time.Second)).To(Succeed())
		Expect(connected.Alive()).To(BeTrue())
		Expect(call(ctx, grpcClient, methodEmpty)).To(Equal("web"), "the grpc-go client connected before the rotation still works")

		By("accepting a client that reconnects with a newly issued certificate, bound to the same Gateway")
		cfg := clientTLS(xdsCA, gwA) // a new key and certificate
		var seen *big.Int
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			seen = cs.PeerCertificates[0].SerialNumber
			return nil
		}
		reconnected, err := dialADS(ctx, gwA, "mtls-rotate-connected", adsOptions{tls: cfg})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(reconnected.Close)
		Expect(reconnected.wait(rotated, 30*time.Second)).To(Succeed())
		Expect(seen).To(Equal(after), "the reconnect saw the rotated server certificate")
		_, err = adsFetch(ctx, clientTLS(xdsCA, gwA), gwB, "mtls-b."+domain)
		Expect(err).To(MatchError(ContainSubstring("does not match the client certificate's Gateway")))

		By("honouring a CA added to the CA Secret's trust bundle, and dropping it again")
		other, err := pki.NewCA("next-xds-ca")
		Expect(err).NotTo(HaveOccurred())
		_, err = adsFetch(ctx, clientTLS(other, gwA), gwA, "mtls-a."+domain)
		Expect(err).To(MatchError(MatchRegexp(tlsRefusal)))
		setTrustBundle(ctx, other.CertPEM())
		DeferCleanup(func() {
			setTrustBundle(context.Background(), nil)
			Expect(xdsCreds.Reload(context.Background())).To(Succeed())
		})
		Expect(xdsCreds.Reload(ctx)).To(Succeed())
		Expect(serverSerial(clientTLS(xdsCA, gwA))).To(Equal(after), "a CA reload does not re-issue a certificate that is not due")
		resp, err := adsFetch(ctx, clientTLS(other, gwA), gwA, "mtls-a."+domain)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Names).To(HaveLen(1))
		setTrustBundle(ctx, nil)
		Expect(xdsCreds.Reload(ctx)).To(Succeed())
		_, err = adsFetch(ctx, clientTLS(other, gwA), gwA, "mtls-a."+domain)
		Expect(err).To(MatchError(MatchRegexp(tlsRefusal)))
		Expect(connected.Alive()).To(BeTrue())
	})
})

// serverSerial is the serial of the certificate the xDS server presents to
// a new TLS connection.
func serverSerial(cfg *tls.Config) *big.Int {
	GinkgoHelper()
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"h2"}
	c, err := tls.Dial("tcp", xdsTarget, cfg)
	Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber
}

// setTrustBundle sets (or, with nil, removes) the CA Secret's trust bundle.
func setTrustBundle(ctx context.Context, bundle []byte) {
	GinkgoHelper()
	Eventually(func() error {
		var sec corev1.Secret
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: testenv.SystemNamespace, Name: manager.XDSCASecret}, &sec); err != nil {
			return err
		}
		if bundle == nil {
			delete(sec.Data, pki.KeyTrustBundle)
		} else {
			sec.Data[pki.KeyTrustBundle] = bundle
		}
		return env.Client.Update(ctx, &sec)
	}).Should(Succeed())
}

// tlsRefusal matches how a refused TLS 1.3 client learns of it: usually the
// server's alert ("certificate required", "unknown certificate authority"),
// sometimes only the connection closing under its first write.
const tlsRefusal = `(?i)certificate|unknown authority|broken pipe|connection reset|EOF`

// clientTLS is a TLS config trusting the xDS CA, with a client certificate
// for gw signed by ca (none when ca is nil).
func clientTLS(ca *pki.CA, gw types.NamespacedName) *tls.Config {
	GinkgoHelper()
	cfg := &tls.Config{RootCAs: xdsCA.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12}
	if ca != nil {
		certPEM, keyPEM, err := ca.IssueGateway(gw)
		Expect(err).NotTo(HaveOccurred())
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		Expect(err).NotTo(HaveOccurred())
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

// adsFetch asks the xDS server, as a gRPC client of node.cluster gw, for one
// API listener on the shared client, and returns the first response.
func adsFetch(ctx context.Context, cfg *tls.Config, gw types.NamespacedName, listener string) (*xdstest.Response, error) {
	GinkgoHelper()
	c, err := xdstest.DialSotw(ctx, xdsTarget, cfg, xdstest.SotwOptions{
		Node:          &core.Node{Id: "e2e-ads-" + GinkgoT().Name(), Cluster: xdsserver.NodeGroup(gw), UserAgentName: "gRPC Go"},
		Subscriptions: []xdstest.Subscription{{TypeURL: resourcev3.ListenerType, Names: []string{listener}}},
		NoACK:         true, CallOptions: []grpc.CallOption{grpc.WaitForReady(false)},
	})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Next(10 * time.Second)
}

// expectNoService checks that an xDS client that the server refuses gets
// no working channel: its RPC fails within its deadline.
func expectNoService(ctx context.Context, c testgrpc.TestServiceClient) {
	GinkgoHelper()
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := c.EmptyCall(rctx, &testgrpc.Empty{})
	Expect(err).To(HaveOccurred())
	GinkgoWriter.Printf("RPC through a refused xDS client failed after %s: %v\n", time.Since(start).Round(time.Millisecond), err)
}
