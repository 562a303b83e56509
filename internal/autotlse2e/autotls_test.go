package autotlse2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/akash"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
	"github.com/shardgate/shardgate/internal/autotls"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/pki"
	"github.com/shardgate/shardgate/internal/statuscli"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/internal/xdstest"
	xdsserver "github.com/shardgate/shardgate/xds/server"
)

const (
	alice = "akash1alice"
	bob   = "akash1bob"

	tenantA = "tenant-a"
	tenantB = "tenant-b"
	shardNS = testenv.SystemNamespace
	shardGW = "shard-a"
	domain  = "shard-a.apps.example.test"

	// appHost is tenant A's own domain: not under the shard's domain, so
	// it gets a certificate of its own.
	appHost = "app.tenant-a.example"
	// bobHost is tenant B's own domain.
	bobHost = "bob.tenant-b.example"
	// blockedHost is under a block list entry from the start.
	blockedHost = "evil.blocked.example"

	// phHost is held by an Akash ProviderHost of a third tenant.
	phHost = "ph.tenant-c.example"
	// akashNS is the provider's manifest namespace, of the ProviderHosts.
	akashNS = "lease"

	solverLabel     = "acme.cert-manager.io/http01-solver"
	challengePrefix = "/.well-known/acme-challenge/"

	// issuance bounds a wait for cert-manager to issue a certificate.
	// cert-manager retries a step that failed (a conflict, an object its
	// cache has not seen yet) after 5 s, doubling to 5 min for each
	// further failure in a row; on a loaded machine a few in a row
	// outlast the suite's default wait.
	issuance = 6 * time.Minute
)

var (
	// carolLease is tenant C's lease; Akash's operators take only bech32
	// account addresses ("akash" prefix, 20 bytes).
	carolLease = akash.Lease{Owner: "akash1vfhkyqqqqqqqqqqqqqqqqqqqqqqqqqqqmzrs9e", DSeq: 7, GSeq: 1, OSeq: 1,
		Provider: "akash1wpex7anfv3jhyqqqqqqqqqqqqqqqqqqqg92yhj"}

	clusterIssuerGVK = metav1.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "ClusterIssuer"}
	certificateGVK   = metav1.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}
)

// listOf is an empty list of gvk's objects, for List and Watch.
func listOf(gvk metav1.GroupVersionKind) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion(gvk.Group + "/" + gvk.Version)
	l.SetKind(gvk.Kind + "List")
	return l
}

func unstructuredOf(gvk metav1.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(gvk.Group + "/" + gvk.Version)
	u.SetKind(gvk.Kind)
	return u
}

// One harness for every case: the apiserver, Pebble, cert-manager's
// controller and the shardgate manager start once, and the cases run in
// order on one shard with automatic HTTPS (and redirectHTTP). A failing
// case does not skip the later ones (ContinueOnFailure): each adversarial
// case stands on its own.
var _ = Describe("automatic HTTPS with cert-manager and Pebble", Ordered, ContinueOnFailure, func() {
	ctx := context.Background()
	var (
		env       *testenv.Env
		c         client.Client
		cfgPath   string
		certs     *recorder // cert-manager Certificates, every namespace, the whole run
		routes    *recorder // HTTPRoutes, every namespace, the whole run
		secrets   *recorder // Secrets, every namespace, the whole run
		proxy     *xdstest.Delta
		srvMu     sync.Mutex
		srv       *xdsserver.Server
		gwKey     = types.NamespacedName{Namespace: shardNS, Name: shardGW}
		subHost   = "site." + domain
		appCert   = autotls.SecretName(appHost)
		tokenFor  string // the HTTP-01 challenge path cert-manager's solver route served for appHost
		solverOf  string // the name of that solver route (envtest has no garbage collector: it stays)
		forgedCrt []byte // tenant B's self-signed certificate for appHost, in B's Secret named for it
	)

	leaseHost := func(ns, name, host, sub, owner string) {
		GinkgoHelper()
		Expect(c.Create(ctx, &shardgatev1alpha1.LeaseHost{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: shardgatev1alpha1.LeaseHostSpec{
				Lease:    shardgatev1alpha1.LeaseRef{Owner: owner, DSeq: 1, GSeq: 1, OSeq: 1},
				Hostname: host, Subdomain: sub,
				Service: shardgatev1alpha1.ServiceRef{Name: "web", Port: 80},
			},
		})).To(Succeed())
	}
	reserved := func(ns, name string) func(Gomega) string {
		return func(g Gomega) string {
			var lh shardgatev1alpha1.LeaseHost
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &lh)).To(Succeed())
			g.Expect(lh.Status.ObservedGeneration).To(Equal(lh.Generation))
			r := meta.FindStatusCondition(lh.Status.Conditions, shardgatev1alpha1.ConditionReserved)
			g.Expect(r).NotTo(BeNil())
			return string(r.Status) + "/" + r.Reason
		}
	}
	// certReady is the CertificateReady condition of the LeaseHost's
	// shard-a entry, "" when the entry has none.
	certReady := func(ns, name string) func(Gomega) string {
		return func(g Gomega) string {
			var lh shardgatev1alpha1.LeaseHost
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &lh)).To(Succeed())
			for _, s := range lh.Status.Shards {
				if s.Name == shardGW {
					if cr := meta.FindStatusCondition(s.Conditions, shardgatev1alpha1.ConditionCertificateReady); cr != nil {
						return string(cr.Status) + "/" + cr.Reason
					}
				}
			}
			return ""
		}
	}
	// eventsAbout lists "type/reason" of the Events about an object.
	eventsAbout := func(kind, ns, name string) func(Gomega) []string {
		return func(g Gomega) []string {
			var list eventsv1.EventList
			g.Expect(c.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			var out []string
			for _, ev := range list.Items {
				if ev.Regarding.Kind == kind && ev.Regarding.Name == name {
					out = append(out, ev.Type+"/"+ev.Reason)
				}
			}
			return out
		}
	}
	eventReasons := func(ns, name string) func(Gomega) []string { return eventsAbout("LeaseHost", ns, name) }
	// routeAccepted is the Accepted condition shardgate wrote for shard-a
	// in a version of an HTTPRoute, "" when it wrote none.
	routeAccepted := func(r *gatewayv1.HTTPRoute) string {
		for _, p := range r.Status.Parents {
			if p.ControllerName == shardgatev1alpha1.ControllerName && string(p.ParentRef.Name) == shardGW {
				if a := meta.FindStatusCondition(p.Conditions, string(gatewayv1.RouteConditionAccepted)); a != nil {
					return string(a.Status) + "/" + a.Reason
				}
			}
		}
		return ""
	}
	accepted := func(ns, name string) func(Gomega) string {
		return func(g Gomega) string {
			var r gatewayv1.HTTPRoute
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &r)).To(Succeed())
			return routeAccepted(&r)
		}
	}
	// solverRoute makes an HTTPRoute shaped as cert-manager's HTTP-01
	// solver makes them: its label, the name, one Exact match for a
	// challenge path to a Service on port 8089, parented to the shard's
	// http listener.
	solverRoute := func(ns, name, host, path string, exact bool, svc string) *gatewayv1.HTTPRoute {
		pt := gatewayv1.PathMatchExact
		if !exact {
			pt = gatewayv1.PathMatchPathPrefix
		}
		return &gatewayv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{solverLabel: "true"}},
			Spec: gatewayv1.HTTPRouteSpec{
				CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{
					Name: shardGW, Namespace: new(gatewayv1.Namespace(shardNS)), SectionName: new(gatewayv1.SectionName("http")),
				}}},
				Hostnames: []gatewayv1.Hostname{gatewayv1.Hostname(host)},
				Rules: []gatewayv1.HTTPRouteRule{{
					Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &pt, Value: new(path)}}},
					BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(svc), Port: new(gatewayv1.PortNumber(8089))}}}},
				}},
			},
		}
	}
	service := func(ns, name string, port int32) {
		GinkgoHelper()
		Expect(c.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
				Ports: []corev1.ServicePort{{Name: "http", Port: port, TargetPort: intstr.FromInt32(8080)}}},
		})).To(Succeed())
	}
	// noCertificateFor asserts that no Certificate for host was ever
	// created, in any namespace.
	noCertificateFor := func(host string) {
		GinkgoHelper()
		for _, k := range certs.keys() {
			Expect(k).NotTo(HaveSuffix("/"+autotls.SecretName(host)), "a Certificate for %s was created", host)
		}
	}

	// neverServedForged: of everything the shard was ever sent, no Secret
	// is tenant B's forged certificate for A's name (or its Secret), and
	// no filter chain for A's name presents a certificate of B's
	// namespace. (B's own name's chain presents B's own certificate.)
	neverServedForged := func() {
		GinkgoHelper()
		everSecret(proxy, func(name string, s *tlsv3.Secret) {
			Expect(len(forgedCrt) > 0 && bytes.Equal(certChain(s), forgedCrt)).To(BeFalse(), "tenant B's forged certificate was served as %s", name)
			Expect(name).NotTo(Equal(tenantB+"/"+appCert), "tenant B's Secret for %s was served", appHost)
		})
		everListener(proxy, func(l *listenerv3.Listener) {
			for _, fc := range l.GetFilterChains() {
				for _, n := range sdsNames(fc) {
					Expect(n).NotTo(Equal(tenantB+"/"+appCert), "listener %s serves tenant B's Secret for %s", l.GetName(), appHost)
					if slices.Contains(fc.GetFilterChainMatch().GetServerNames(), appHost) {
						Expect(n).NotTo(HavePrefix(tenantB+"/"), "the chain of %s serves a certificate of tenant B's namespace", appHost)
					}
				}
			}
		})
	}
	// neverRoutedForged: of everything the shard was ever sent, no route
	// goes to the forged solver's Service, and nothing serves the name
	// nobody holds.
	neverRoutedForged := func() {
		GinkgoHelper()
		everRouteConfig(proxy, func(rc *routev3.RouteConfiguration) {
			for _, vh := range rc.GetVirtualHosts() {
				Expect(clustersOf(vh)).NotTo(ContainElement(ContainSubstring("forged-solver")), "virtual host %v", vh.GetDomains())
			}
			Expect(vhostsFor(rc, "nobody.example")).To(BeEmpty())
		})
	}

	AfterEach(func() {
		if CurrentSpecReport().Failed() && env != nil {
			diagnose(ctx, c, env)
		}
	})

	BeforeAll(func() {
		var err error
		// Nothing here can serve an HTTP-01 challenge to Pebble: no Envoy
		// runs, only the xDS it would be served. So Pebble skips
		// validation (PEBBLE_VA_ALWAYS_VALID), the ClusterIssuer below
		// skips cert-manager's self check, and the tests assert the
		// solver route in the xDS the shard serves instead.
		root, err := testenv.Root()
		Expect(err).NotTo(HaveOccurred())
		env, err = testenv.Start(ctx, testenv.Options{CertManager: &testenv.CertManagerOptions{PebbleAlwaysValid: true},
			ExtraCRDPaths: []string{filepath.Join(root, "crds", "akash")}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		c = env.Client

		// Watches over the whole run (stopped before the harness: they
		// are cleaned up first).
		wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
		Expect(err).NotTo(HaveOccurred())
		certs = record(ctx, wc, listOf(certificateGVK))
		routes = record(ctx, wc, &gatewayv1.HTTPRouteList{})
		secrets = record(ctx, wc, &corev1.SecretList{})

		cfgPath = filepath.Join(GinkgoT().TempDir(), "config.yaml")
		writeConfig(cfgPath, ".blocked.example")
		env.RunManager(manager.Options{ConfigPath: cfgPath, MetricsAddress: "0", HealthAddress: "0", Log: GinkgoLogr,
			OnXDSServer: func(s *xdsserver.Server) { srvMu.Lock(); srv = s; srvMu.Unlock() }})

		for ns, owner := range map[string]string{tenantA: alice, tenantB: bob} {
			Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
				Annotations: map[string]string{tenancy.OwnerKey: owner}}})).To(Succeed())
			service(ns, "web", 80)
		}
		// Akash: the provider's manifest namespace holds the ProviderHosts;
		// the lease namespace the workload.
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: akashNS}})).To(Succeed())
		leaseNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: carolLease.Namespace(), Labels: carolLease.Labels()}}
		leaseNS.Labels[akash.LabelManaged] = "true"
		Expect(c.Create(ctx, leaseNS)).To(Succeed())
		Expect(c.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: leaseNS.Name},
			Spec: corev1.ServiceSpec{Selector: map[string]string{akash.LabelManifestService: "web"},
				Ports: []corev1.ServicePort{{Port: 80}}},
		})).To(Succeed())
		service(tenantB, "forged-solver", 8089)
		service(tenantB, "bob-solver", 8089)

		// The ClusterIssuer: Pebble, with an HTTP-01 solver that writes
		// HTTPRoutes on the shard's http listener.
		issuer := env.Pebble.ClusterIssuer("pebble", shardNS, shardGW)
		Expect(c.Create(ctx, issuer)).To(Succeed())
		Eventually(func(g Gomega) string {
			u := unstructuredOf(clusterIssuerGVK)
			g.Expect(c.Get(ctx, client.ObjectKey{Name: "pebble"}, u)).To(Succeed())
			return condition(u, "Ready", "status", "conditions")
		}).Should(HavePrefix("True/"))

		// The shard: an http listener for every name, and the provider's
		// HTTPS listener for its own domain with its wildcard certificate.
		Expect(c.Create(ctx, &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "shardgate"},
			Spec: gatewayv1.GatewayClassSpec{ControllerName: shardgatev1alpha1.ControllerName}})).To(Succeed())
		wcrt, wkey := selfSigned("*." + domain)
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: shardNS, Name: "wildcard"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: wcrt, corev1.TLSPrivateKeyKey: wkey}})).To(Succeed())
		Expect(c.Create(ctx, &shardgatev1alpha1.GatewayParameters{
			ObjectMeta: metav1.ObjectMeta{Namespace: shardNS, Name: shardGW},
			Spec: shardgatev1alpha1.GatewayParametersSpec{Shard: &shardgatev1alpha1.ShardSpec{
				Domain: domain,
				TLS: &shardgatev1alpha1.ShardTLS{
					IssuerRef:    shardgatev1alpha1.IssuerReference{Group: "cert-manager.io", Kind: "ClusterIssuer", Name: "pebble"},
					RedirectHTTP: true,
				},
			}},
		})).To(Succeed())
		all := &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: new(gatewayv1.NamespacesFromAll)}}
		Expect(c.Create(ctx, &gatewayv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: shardNS, Name: shardGW},
			Spec: gatewayv1.GatewaySpec{
				GatewayClassName: "shardgate",
				Infrastructure: &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{
					Group: "shardgate.io", Kind: "GatewayParameters", Name: shardGW}},
				Listeners: []gatewayv1.Listener{
					{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80, AllowedRoutes: all},
					{Name: "https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443, Hostname: new(gatewayv1.Hostname("*." + domain)),
						AllowedRoutes: all, TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "wildcard"}}}},
				},
			},
		})).To(Succeed())

		// An xDS client of the shard, with the shard's own client
		// certificate, subscribed to everything as Envoy is.
		var target string
		Eventually(func(g Gomega) {
			srvMu.Lock()
			s := srv
			srvMu.Unlock()
			g.Expect(s).NotTo(BeNil())
			g.Expect(s.Serving()).To(BeTrue())
			_, port, err := net.SplitHostPort(s.Addr().String())
			g.Expect(err).NotTo(HaveOccurred())
			target = net.JoinHostPort("127.0.0.1", port)
		}).Should(Succeed())
		var caSecret corev1.Secret
		Eventually(func() error {
			return c.Get(ctx, client.ObjectKey{Namespace: testenv.SystemNamespace, Name: manager.XDSCASecret}, &caSecret)
		}).Should(Succeed())
		ca, err := pki.ParseCA(caSecret.Data[pki.KeyCert], caSecret.Data[pki.KeyKey])
		Expect(err).NotTo(HaveOccurred())
		tlsCfg, err := xdstest.GatewayTLS(ca, gwKey)
		Expect(err).NotTo(HaveOccurred())
		proxy, err = xdstest.DialDelta(ctx, target, tlsCfg, xdstest.DeltaOptions{
			Node:  &core.Node{Id: "autotlse2e", Cluster: xdsserver.NodeGroup(gwKey)},
			Types: append(append([]string(nil), xdstest.DeltaTypes...), resourcev3.SecretType),
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(proxy.Close)
	})

	It("issues a certificate for a held name outside the shard's domain and serves it on 443 in a filter chain of its own", func() {
		leaseHost(tenantA, "app", appHost, "", alice)
		Eventually(reserved(tenantA, "app")).Should(Equal("True/Reserved"))

		By("writing one Certificate, named for the host, in the lease namespace")
		Eventually(func(g Gomega) {
			u := unstructuredOf(certificateGVK)
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: tenantA, Name: appCert}, u)).To(Succeed())
			dns, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "dnsNames")
			g.Expect(dns).To(Equal([]string{appHost}))
			sn, _, _ := unstructured.NestedString(u.Object, "spec", "secretName")
			g.Expect(sn).To(Equal(appCert))
			ref, _, _ := unstructured.NestedStringMap(u.Object, "spec", "issuerRef")
			g.Expect(ref).To(HaveKeyWithValue("name", "pebble"))
			g.Expect(ref).To(HaveKeyWithValue("kind", "ClusterIssuer"))
			g.Expect(ref).To(HaveKeyWithValue("group", "cert-manager.io"))
		}).Should(Succeed())

		By("cert-manager and Pebble issuing it into the Secret of the same name")
		var secret corev1.Secret
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: tenantA, Name: appCert}, &secret)).To(Succeed())
			g.Expect(secret.Data).To(HaveKey(corev1.TLSCertKey))
			g.Expect(secret.Data[corev1.TLSCertKey]).NotTo(BeEmpty())
		}).WithTimeout(issuance).Should(Succeed())
		Expect(secret.Type).To(Equal(corev1.SecretTypeTLS))
		Expect(leaf(secret.Data[corev1.TLSCertKey]).DNSNames).To(Equal([]string{appHost}))

		By("serving that certificate for exactly the name on port 443")
		Eventually(func(g Gomega) {
			s := held(proxy)
			chains := s.chainsFor(443, appHost)
			g.Expect(chains).To(HaveLen(1), "filter chains on 443 for %s", appHost)
			g.Expect(chains[0].GetFilterChainMatch().GetServerNames()).To(Equal([]string{appHost}))
			names := sdsNames(chains[0])
			g.Expect(names).To(HaveLen(1))
			g.Expect(s.secrets).To(HaveKey(names[0]))
			g.Expect(certChain(s.secrets[names[0]])).To(Equal(secret.Data[corev1.TLSCertKey]),
				"the chain's certificate is not the issued Secret's")
		}).Should(Succeed())
		// The provider's wildcard listener is still there, beside it.
		Expect(held(proxy).chainsFor(443, "*."+domain)).To(HaveLen(1))

		By("reporting CertificateReady=True Issued in the LeaseHost's shard entry")
		Eventually(certReady(tenantA, "app")).Should(Equal("True/" + shardgatev1alpha1.ReasonCertificateIssued))

		By("having admitted cert-manager's solver route on the shard while it existed")
		var solver *gatewayv1.HTTPRoute
		acceptedOnce := false
		for k, versions := range routes.all() {
			if !strings.HasPrefix(k, tenantA+"/") {
				continue
			}
			for _, o := range versions {
				r := o.(*gatewayv1.HTTPRoute)
				if r.Labels[solverLabel] != "true" {
					continue
				}
				solver = r
				if routeAccepted(r) == "True/Accepted" {
					acceptedOnce = true
				}
			}
		}
		Expect(solver).NotTo(BeNil(), "no solver HTTPRoute was recorded in %s; routes: %v", tenantA, routes.keys())
		Expect(acceptedOnce).To(BeTrue(), "the solver route %s was never Accepted on %s", solver.Name, shardGW)
		Expect(solver.Spec.Hostnames).To(Equal([]gatewayv1.Hostname{appHost}))
		Expect(solver.Spec.Rules).To(HaveLen(1))
		tokenFor, solverOf = *solver.Spec.Rules[0].Matches[0].Path.Value, solver.Name
		Expect(tokenFor).To(HavePrefix(challengePrefix))
		solverSvc := string(solver.Spec.Rules[0].BackendRefs[0].Name)
		// ... and the shard's proxies were sent a route for exactly that
		// path on the http listener, to the solver's Service.
		servedChallenge := false
		everRouteConfig(proxy, func(rc *routev3.RouteConfiguration) {
			for _, vh := range vhostsFor(rc, appHost) {
				for _, r := range vh.GetRoutes() {
					if r.GetMatch().GetPath() == tokenFor && r.GetRoute() != nil && strings.Contains(r.GetRoute().GetCluster(), solverSvc) {
						servedChallenge = true
					}
				}
			}
		})
		Expect(servedChallenge).To(BeTrue(), "the shard was never served %s for %s to %s", tokenFor, appHost, solverSvc)

		By("telling the tenant in an Event on the LeaseHost")
		Eventually(eventReasons(tenantA, "app")).Should(ContainElement("Normal/" + shardgatev1alpha1.ReasonCertificateIssued))

		By("showing it in `shardgate status`")
		var out bytes.Buffer
		_, err := statuscli.Run(ctx, c, statuscli.Options{Namespace: tenantA, Format: statuscli.FormatJSON}, &out)
		Expect(err).NotTo(HaveOccurred())
		var doc statuscli.Document
		Expect(json.Unmarshal(out.Bytes(), &doc)).To(Succeed())
		Expect(doc.Items).To(ContainElement(SatisfyAll(
			HaveField("LeaseHost", "app"), HaveField("Shard", shardGW),
			HaveField("Certificate", "True"), HaveField("CertificateReason", shardgatev1alpha1.ReasonCertificateIssued))))
	})

	It("redirects plain HTTP for the name to HTTPS once it is served there, except ACME challenges", func() {
		Expect(tokenFor).NotTo(BeEmpty(), "needs the issuance of the spec before")
		Eventually(func(g Gomega) {
			vh := held(proxy).vhost(80, appHost)
			g.Expect(vh).NotTo(BeNil(), "no virtual host for %s on port 80", appHost)
			for _, p := range []string{"/", "/index.html", "/.well-known/other"} {
				r := firstRoute(vh, p)
				g.Expect(r).NotTo(BeNil(), "nothing answers %s:\n%s", p, routeText(vh))
				rd := r.GetRedirect()
				g.Expect(rd).NotTo(BeNil(), "%s is not redirected:\n%s", p, routeText(vh))
				g.Expect(rd.GetSchemeRedirect() == "https" || rd.GetHttpsRedirect()).To(BeTrue(), "%s: %s", p, xdstest.Text(r))
				g.Expect(rd.GetResponseCode()).To(Equal(routev3.RedirectAction_MOVED_PERMANENTLY), "%s: %s", p, xdstest.Text(r))
			}
			g.Expect(firstRoute(vh, tokenFor).GetRedirect()).To(BeNil(), "the challenge path %s is redirected:\n%s", tokenFor, routeText(vh))
			// The challenge's own path is still the solver route's (its
			// Service is gone once the challenge is valid, and the route
			// then answers 500, as Gateway API says for a missing backend).
			g.Expect(firstRoute(vh, tokenFor).GetName()).To(ContainSubstring(tenantA+"/cm-acme-http-solver-"), "%s:\n%s", tokenFor, routeText(vh))
		}).Should(Succeed())
		// Every path under the challenge prefix is exempt, not only those
		// of a live solver route: a request for one the solver does not
		// serve is answered as without redirectHTTP, never with a 301.
		vh := held(proxy).vhost(80, appHost)
		p := challengePrefix + "another-token"
		if r := firstRoute(vh, p); r != nil {
			Expect(r.GetRedirect()).To(BeNil(), "the challenge path %s is redirected:\n%s", p, routeText(vh))
		}
	})

	It("gives a name under the shard's domain the shard's own certificate and issues none", func() {
		leaseHost(tenantA, "site", "", "site", alice)
		Eventually(reserved(tenantA, "site")).Should(Equal("True/Reserved"))
		Eventually(certReady(tenantA, "site")).Should(Equal("True/" + shardgatev1alpha1.ReasonShardCertificate))
		Eventually(func(g Gomega) {
			g.Expect(held(proxy).vhost(80, subHost)).NotTo(BeNil())
		}).Should(Succeed())
		Expect(held(proxy).chainsFor(443, subHost)).To(BeEmpty(), "a filter chain of its own for %s", subHost)
		noCertificateFor(subHost)
	})

	It("refuses another tenant's name, and never issues or serves it for that tenant", func() {
		leaseHost(tenantB, "steal", appHost, "", bob)
		Eventually(reserved(tenantB, "steal")).Should(Equal("False/" + shardgatev1alpha1.ReasonHostnameInUse))
		// Tenant B also writes the Secret the name's certificate would be
		// stored in, in its own namespace, valid for exactly that name.
		var forgedKey []byte
		forgedCrt, forgedKey = selfSigned(appHost)
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantB, Name: appCert}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: forgedCrt, corev1.TLSPrivateKeyKey: forgedKey}})).To(Succeed())
		// A later change B is entitled to, seen in xDS: everything
		// before it has been translated by then.
		leaseHost(tenantB, "bob", bobHost, "", bob)
		Eventually(func(g Gomega) { g.Expect(held(proxy).vhost(80, bobHost)).NotTo(BeNil()) }).Should(Succeed())

		neverServedForged()
		// A's chain still serves A's certificate.
		s := held(proxy)
		chains := s.chainsFor(443, appHost)
		Expect(chains).To(HaveLen(1))
		Expect(certChain(s.secrets[sdsNames(chains[0])[0]])).NotTo(Equal(forgedCrt))
		// B's own name gets its Certificate; A's name never gets one in
		// B's namespace.
		Eventually(func() []string { return certs.keys() }).Should(ContainElement(tenantB + "/" + autotls.SecretName(bobHost)))
		Expect(certs.keys()).NotTo(ContainElement(tenantB+"/"+appCert), "a Certificate for %s in tenant B's namespace", appHost)
	})

	It("refuses solver-shaped routes for names the tenant does not hold, and only admits the challenge path of a held one", func() {
		forged := map[string]*gatewayv1.HTTPRoute{
			// another tenant's name
			"forged-other": solverRoute(tenantB, "cm-acme-http-solver-forged-other", appHost, challengePrefix+"x", true, "forged-solver"),
			// a name nobody holds
			"forged-nobody": solverRoute(tenantB, "cm-acme-http-solver-forged-nobody", "nobody.example", challengePrefix+"x", true, "forged-solver"),
			// its own name, but not only the challenge path
			"forged-root": solverRoute(tenantB, "cm-acme-http-solver-forged-root", bobHost, "/", false, "forged-solver"),
		}
		for _, r := range forged {
			Expect(c.Create(ctx, r)).To(Succeed())
		}
		// The control: the same shape for its own held name and a
		// challenge path is admitted, so the refusals above are about
		// the names and the paths.
		ok := solverRoute(tenantB, "cm-acme-http-solver-own", bobHost, challengePrefix+"y", true, "bob-solver")
		Expect(c.Create(ctx, ok)).To(Succeed())

		for _, r := range forged {
			Eventually(accepted(tenantB, r.Name)).Should(Equal("False/"+shardgatev1alpha1.ReasonHostnameNotOwned), "route %s", r.Name)
		}
		Eventually(accepted(tenantB, ok.Name)).Should(Equal("True/Accepted"))
		Eventually(func(g Gomega) {
			vh := held(proxy).vhost(80, bobHost)
			g.Expect(vh).NotTo(BeNil())
			r := firstRoute(vh, challengePrefix+"y")
			g.Expect(r).NotTo(BeNil())
			g.Expect(r.GetRoute().GetCluster()).To(ContainSubstring("bob-solver"), "%s", routeText(vh))
		}).Should(Succeed())

		neverRoutedForged()
	})

	It("does the same for an Akash ProviderHost: its Certificate in the lease namespace, served on 443, Events on it, shown by `shardgate status`", func() {
		// The other names' chains on 443, before: adding a name must leave
		// them exactly as they are, so that Envoy drains none of their
		// connections.
		before := held(proxy)
		others := map[string]*listenerv3.FilterChain{}
		for _, h := range []string{appHost, "*." + domain} {
			chains := before.chainsFor(443, h)
			Expect(chains).To(HaveLen(1), "the chain of %s", h)
			others[h] = chains[0]
		}
		// `shardgate status --watch`, from before the ProviderHost exists:
		// its row must follow the Certify Events too.
		wctx, cancel := context.WithCancel(ctx)
		watched := &lockedBuffer{}
		done := make(chan error, 1)
		go func() {
			done <- statuscli.Execute(wctx, statuscli.Config{Kubeconfig: env.Kubeconfig, Namespace: akashNS, Watch: true, Output: "wide"}, watched, io.Discard)
		}()
		defer func() {
			cancel()
			Eventually(done).Should(Receive(BeNil()))
		}()
		Expect(c.Create(ctx, &akashv1.ProviderHost{
			ObjectMeta: metav1.ObjectMeta{Namespace: akashNS, Name: "ph"},
			Spec: akashv1.ProviderHostSpec{Owner: carolLease.Owner, Provider: carolLease.Provider, Hostname: phHost,
				Dseq: carolLease.DSeq, Gseq: carolLease.GSeq, Oseq: carolLease.OSeq, ServiceName: "web", ExternalPort: 80},
		})).To(Succeed())
		ns := carolLease.Namespace()
		Eventually(accepted(ns, akash.RouteName(phHost))).Should(Equal("True/Accepted"), "events: %v", eventsAbout("ProviderHost", akashNS, "ph")(Default))
		Eventually(func(g Gomega) {
			u := unstructuredOf(certificateGVK)
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: autotls.SecretName(phHost)}, u)).To(Succeed())
			g.Expect(condition(u, "Ready", "status", "conditions")).To(HavePrefix("True/"))
		}).WithTimeout(issuance).Should(Succeed(), "events: %v", eventsAbout("ProviderHost", akashNS, "ph")(Default))
		var secret corev1.Secret
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: autotls.SecretName(phHost)}, &secret)).To(Succeed())
			g.Expect(secret.Data[corev1.TLSCertKey]).NotTo(BeEmpty())
		}).Should(Succeed())
		Expect(leaf(secret.Data[corev1.TLSCertKey]).DNSNames).To(Equal([]string{phHost}))
		Eventually(func(g Gomega) {
			s := held(proxy)
			chains := s.chainsFor(443, phHost)
			g.Expect(chains).To(HaveLen(1))
			names := sdsNames(chains[0])
			g.Expect(names).To(HaveLen(1))
			g.Expect(certChain(s.secrets[names[0]])).To(Equal(secret.Data[corev1.TLSCertKey]))
		}).Should(Succeed())
		after := held(proxy)
		for h, fc := range others {
			chains := after.chainsFor(443, h)
			Expect(chains).To(HaveLen(1))
			Expect(proto.Equal(chains[0], fc)).To(BeTrue(), "the chain of %s changed when %s was added:\nbefore %s\nafter %s", h, phHost, xdstest.Text(fc), xdstest.Text(chains[0]))
		}
		Eventually(eventsAbout("ProviderHost", akashNS, "ph")).Should(ContainElement("Normal/" + shardgatev1alpha1.ReasonCertificateIssued))
		// A ProviderHost has no status: `shardgate status` reads its Events.
		Eventually(func(g Gomega) {
			var out bytes.Buffer
			_, err := statuscli.Run(ctx, c, statuscli.Options{Namespace: akashNS, Format: statuscli.FormatJSON}, &out)
			g.Expect(err).NotTo(HaveOccurred())
			var doc statuscli.Document
			g.Expect(json.Unmarshal(out.Bytes(), &doc)).To(Succeed())
			g.Expect(doc.Items).To(ContainElement(SatisfyAll(
				HaveField("Source", statuscli.SourceProviderHost), HaveField("LeaseHost", "ph"), HaveField("Shard", shardGW),
				HaveField("Certificate", "True"), HaveField("CertificateReason", shardgatev1alpha1.ReasonCertificateIssued))))
		}).Should(Succeed())
		Eventually(func() []string {
			for _, l := range strings.Split(watched.String(), "\n") {
				if f := strings.Fields(l); len(f) > 3 && f[0] == statuscli.SourceProviderHost && f[2] == "ph" {
					if f[len(f)-2] == "True" && f[len(f)-1] == shardgatev1alpha1.ReasonCertificateIssued {
						return nil
					}
				}
			}
			return strings.Split(watched.String(), "\n")
		}).Should(BeEmpty(), "no watched row of ph ends in CERT True, CERT-REASON Issued")
	})

	It("never attempts a certificate for a blocked name", func() {
		leaseHost(tenantB, "evil", blockedHost, "", bob)
		Eventually(reserved(tenantB, "evil")).Should(Equal("False/" + shardgatev1alpha1.ReasonBlocked))
		noCertificateFor(blockedHost)
	})

	It("takes the name's listener, Certificate and Secret away when the name is revoked", func() {
		phChains := held(proxy).chainsFor(443, phHost)
		Expect(phChains).To(HaveLen(1))
		writeConfig(cfgPath, ".blocked.example", appHost)
		Eventually(reserved(tenantA, "app")).Should(Equal("False/" + shardgatev1alpha1.ReasonBlocked))
		Eventually(func(g Gomega) {
			g.Expect(held(proxy).chainsFor(443, appHost)).To(BeEmpty())
		}).Should(Succeed())
		// Another name's chain is untouched by the removal.
		now := held(proxy).chainsFor(443, phHost)
		Expect(now).To(HaveLen(1))
		Expect(proto.Equal(now[0], phChains[0])).To(BeTrue(), "the chain of %s changed when %s was revoked", phHost, appHost)
		Eventually(func() bool {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: tenantA, Name: appCert}, unstructuredOf(certificateGVK)))
		}).Should(BeTrue(), "the Certificate is still there")
		Eventually(func() bool {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: tenantA, Name: appCert}, &corev1.Secret{}))
		}).Should(BeTrue(), "the Secret is still there")
		Expect(certs.wasDeleted(tenantA + "/" + appCert)).To(BeTrue())
		Eventually(func() bool { return secrets.wasDeleted(tenantA + "/" + appCert) }).Should(BeTrue())
		Eventually(eventReasons(tenantA, "app")).Should(ContainElement(HaveSuffix("/" + shardgatev1alpha1.ReasonCertificateRevoked)))
		// Tenant B's forged Secret is not shardgate's to delete.
		Expect(c.Get(ctx, client.ObjectKey{Namespace: tenantB, Name: appCert}, &corev1.Secret{})).To(Succeed())
		// Nothing is served for the name any more, the leftover solver
		// route included.
		Eventually(func(g Gomega) { g.Expect(held(proxy).vhost(80, appHost)).To(BeNil()) }).Should(Succeed())
		if solverOf != "" {
			Eventually(accepted(tenantA, solverOf)).Should(Equal("False/" + shardgatev1alpha1.ReasonHostnameNotOwned))
		}
	})

	It("never served tenant B's forged certificate or solver routes, over the whole run", func() {
		Expect(forgedCrt).NotTo(BeEmpty(), "needs the spec that forges them")
		neverServedForged()
		neverRoutedForged()
	})

	It("created Certificates only for the names held outside the shard's domain, each in its holder's namespace", func() {
		Expect(certs.keys()).To(ConsistOf(tenantA+"/"+appCert, tenantB+"/"+autotls.SecretName(bobHost),
			carolLease.Namespace()+"/"+autotls.SecretName(phHost)))
	})
})
