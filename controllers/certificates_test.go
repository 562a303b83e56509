package controllers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/akash"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
	"github.com/shardgate/shardgate/internal/autotls"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/pki"
	"github.com/shardgate/shardgate/internal/testenv"
)

// The certificate controller with the real cert-manager controller and
// Pebble. No data plane runs here, so nothing could answer an HTTP-01
// challenge: Pebble is told to skip validation (PEBBLE_VA_ALWAYS_VALID) and
// the issuer's solver skips cert-manager's own reachability check
// (waitInsteadOfSelfCheck: 0s). What is tested is the controller: which
// Certificates it writes and deletes, how fast, and what it reports.
var _ = Describe("automatic HTTPS: the certificate controller with cert-manager and Pebble", Ordered, func() {
	ctx := context.Background()
	const (
		infra  = "certs-infra"
		domain = "edge.provider.test"
	)
	var (
		env     *testenv.Env
		c       client.Client
		stop    func() error
		cfgFile string
		f       *fixture
	)
	writeCfg := func(blocked ...string) {
		data := "certificates:\n  ordersPerIssuer: 2\n  ordersWindow: 1h\nblockedHostnames:\n"
		for _, b := range blocked {
			data += fmt.Sprintf("  - %q\n", b)
		}
		Expect(os.WriteFile(cfgFile+".tmp", []byte(data), 0o644)).To(Succeed())
		Expect(os.Rename(cfgFile+".tmp", cfgFile)).To(Succeed())
	}
	certificate := func(ns, host string) func() (*unstructured.Unstructured, error) {
		return func() (*unstructured.Unstructured, error) {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(autotls.CertificateGVK)
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: autotls.SecretName(host)}, u)
			return u, err
		}
	}
	gone := func(get func() (*unstructured.Unstructured, error)) func() bool {
		return func() bool { _, err := get(); return apierrors.IsNotFound(err) }
	}
	certReady := func(name string) func(Gomega) string { return shardCertReady(ctx, f, name, "edge") }
	certReadyMessage := func(name string) string {
		for _, e := range f.get(ctx, name).Status.Shards {
			if cond := meta.FindStatusCondition(e.Conditions, shardgatev1alpha1.ConditionCertificateReady); cond != nil {
				return cond.Message
			}
		}
		return ""
	}

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{CertManager: &testenv.CertManagerOptions{PebbleAlwaysValid: true}})
		Expect(err).NotTo(HaveOccurred())
		c = env.Client
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: infra}})).To(Succeed())
		pebbleIssuer(ctx, env, infra, "edge")
		tlsShard(ctx, c, infra, "edge", domain, "pebble")
		cfgFile = filepath.Join(GinkgoT().TempDir(), "config.yaml")
		writeCfg()
		stop = env.RunManager(manager.Options{ConfigPath: cfgFile, Log: GinkgoLogr})
		f = newFixture(ctx, c, "certs")
		f.service(ctx, "web")
	})
	AfterAll(func() { stopManagerAndEnv(stop, env) })

	It("writes a held name's Certificate, which cert-manager issues, and reports CertificateReady=True Issued", func() {
		lh := f.leaseHost(ctx, "shop", "shop.tenant-one.test")
		var cert *unstructured.Unstructured
		Eventually(func() error {
			var err error
			cert, err = certificate(f.ns, "shop.tenant-one.test")()
			return err
		}).Should(Succeed())
		Expect(cert.GetLabels()).To(HaveKeyWithValue(autotls.LabelManaged, "true"))
		Expect(cert.GetLabels()).To(HaveKeyWithValue(shardgatev1alpha1.LabelLeaseOwner, defaultOwner))
		Expect(cert.GetAnnotations()).To(HaveKeyWithValue(autotls.AnnotationHostname, "shop.tenant-one.test"))
		Expect(cert.GetOwnerReferences()).To(ConsistOf(HaveField("UID", lh.UID)))
		spec, _, _ := unstructured.NestedMap(cert.Object, "spec")
		Expect(spec).To(HaveKeyWithValue("dnsNames", []any{"shop.tenant-one.test"}))
		Expect(spec).To(HaveKeyWithValue("secretName", "shardgate-tls.shop.tenant-one.test"))
		Expect(spec["issuerRef"]).To(SatisfyAll(HaveKeyWithValue("name", "pebble"), HaveKeyWithValue("kind", "ClusterIssuer")))

		Eventually(certReady("shop"), 2*time.Minute).Should(Equal("True/Issued"))
		var secret corev1.Secret
		Expect(c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "shardgate-tls.shop.tenant-one.test"}, &secret)).To(Succeed())
		Expect(secret.Type).To(Equal(corev1.SecretTypeTLS))
		Expect(secret.Labels).To(HaveKeyWithValue(autotls.LabelManaged, "true"))
		Eventually(eventsAbout(ctx, c, f.ns, "LeaseHost", "shop")).Should(SatisfyAll(
			HaveKey("Normal/Issuing/Certify"), HaveKey("Normal/Issued/Certify")))
	})

	It("gives a name under the shard's domain ShardCertificate and writes it no Certificate", func() {
		lh := &shardgatev1alpha1.LeaseHost{
			ObjectMeta: metav1.ObjectMeta{Name: "sub", Namespace: f.ns},
			Spec: shardgatev1alpha1.LeaseHostSpec{
				Lease:     shardgatev1alpha1.LeaseRef{Owner: defaultOwner, DSeq: 2, GSeq: 1, OSeq: 1},
				Subdomain: "sub",
				Service:   shardgatev1alpha1.ServiceRef{Name: "web", Port: 80},
			},
		}
		Expect(c.Create(ctx, lh)).To(Succeed())
		Eventually(certReady("sub")).Should(Equal("True/ShardCertificate"))
		Consistently(gone(certificate(f.ns, "sub."+domain)), 2*time.Second).Should(BeTrue())

		// Two labels under the domain: the shard's *.<domain> certificate
		// does not cover them, and none is issued either.
		deep := lh.DeepCopy()
		deep.ObjectMeta = metav1.ObjectMeta{Name: "deep", Namespace: f.ns}
		deep.Spec.Lease.DSeq = 3
		deep.Spec.Subdomain = "api.deep"
		Expect(c.Create(ctx, deep)).To(Succeed())
		Eventually(certReady("deep")).Should(Equal("False/" + shardgatev1alpha1.ReasonNoShardCertificate))
		Expect(gone(certificate(f.ns, "api.deep."+domain))()).To(BeTrue())
	})

	It("leaves a tenant's own Certificate of the name alone and reports CertificateConflict", func() {
		mine := &unstructured.Unstructured{Object: map[string]any{
			"spec": map[string]any{
				"secretName": "mine-tls",
				"dnsNames":   []any{"mine.tenant-one.test"},
				"issuerRef":  map[string]any{"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "no-such-issuer"},
			},
		}}
		mine.SetGroupVersionKind(autotls.CertificateGVK)
		mine.SetNamespace(f.ns)
		mine.SetName(autotls.SecretName("mine.tenant-one.test"))
		Expect(c.Create(ctx, mine)).To(Succeed())
		f.leaseHost(ctx, "mine", "mine.tenant-one.test", owner(defaultOwner, 3))
		Eventually(certReady("mine")).Should(Equal("False/CertificateConflict"))
		got, err := certificate(f.ns, "mine.tenant-one.test")()
		Expect(err).NotTo(HaveOccurred())
		Expect(got.GetLabels()).NotTo(HaveKey(autotls.LabelManaged))
		Expect(got.GetUID()).To(Equal(mine.GetUID()))
		Expect(nestedString(got, "spec", "secretName")).To(Equal("mine-tls"))
	})

	It("paces new Certificates: with 2 per hour, of two more names one is written and the other waits Queued", func() {
		f.leaseHost(ctx, "one", "one.tenant-two.test", owner("akash1bob", 4))
		f.leaseHost(ctx, "two", "two.tenant-two.test", owner("akash1bob", 4))
		// The issuer's budget had room for one (shop took the other).
		reason := func(g Gomega, name string) string {
			_, r, _ := strings.Cut(certReady(name)(g), "/")
			return r
		}
		var states map[string]string
		Eventually(func(g Gomega) {
			states = map[string]string{"one": reason(g, "one"), "two": reason(g, "two")}
			g.Expect([]string{states["one"], states["two"]}).To(ConsistOf(Equal("Queued"), BeElementOf("Issuing", "Issued")))
		}).Should(Succeed())
		queued, written := "two", "one"
		if states["one"] == "Queued" {
			queued, written = "one", "two"
		}
		Expect(certReadyMessage(queued)).To(ContainSubstring("allows 2 new certificates per 1h0m0s; queued until"))
		Expect(gone(certificate(f.nsOf(queued), queued+".tenant-two.test"))()).To(BeTrue())
		Eventually(certReady(written), 2*time.Minute).Should(Equal("True/Issued"))
		Eventually(eventsAbout(ctx, c, f.nsOf(queued), "LeaseHost", queued)).Should(HaveKey("Normal/Queued/Certify"))
	})

	It("keeps the issuer's budget across a restart: the windows are rebuilt from the Certificates' creation times", func() {
		var queued string
		for _, n := range []string{"one", "two"} {
			if certReady(n)(Default) == "False/Queued" {
				queued = n
			}
		}
		Expect(queued).NotTo(BeEmpty())
		Expect(stop()).To(Succeed())
		stop = env.RunManager(manager.Options{ConfigPath: cfgFile, Log: GinkgoLogr})
		// A new name after the restart: with the budget reset it and the
		// queued name would both be written.
		f.leaseHost(ctx, "three", "three.tenant-two.test", owner("akash1bob", 5))
		Eventually(certReady("three")).Should(Equal("False/Queued"))
		Expect(gone(certificate(f.nsOf(queued), queued+".tenant-two.test"))()).To(BeTrue())
		Expect(gone(certificate(f.nsOf("three"), "three.tenant-two.test"))()).To(BeTrue())
	})

	It("deletes a blocked name's Certificate and Secret, and its CertificateReady goes", func() {
		ns := f.nsOf("shop")
		writeCfg("shop.tenant-one.test")
		Eventually(f.reserved(ctx, "shop")).Should(Equal("False/Blocked"))
		Eventually(gone(certificate(ns, "shop.tenant-one.test"))).Should(BeTrue())
		Eventually(func() bool {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shardgate-tls.shop.tenant-one.test"}, &corev1.Secret{}))
		}).Should(BeTrue())
		Eventually(certReady("shop")).Should(Equal("none"))
		Eventually(eventsAbout(ctx, c, ns, "LeaseHost", "shop")).Should(HaveKey("Normal/CertificateRevoked/Certify"))
		// The tenant's own Certificate is still there, untouched.
		_, err := certificate(f.ns, "mine.tenant-one.test")()
		Expect(err).NotTo(HaveOccurred())
	})
})

// A name whose issuance fails (Pebble refuses it by policy, as an ACME
// server refuses a name it will not issue for) backs off, and does not
// keep another tenant's name from being issued.
var _ = Describe("automatic HTTPS: a failing name backs off", Ordered, func() {
	ctx := context.Background()
	const infra = "certs-fail-infra"
	var (
		env  *testenv.Env
		stop func() error
		f    *fixture
	)
	BeforeAll(func() {
		var err error
		// Cluster mode: its garbage collector deletes a deleted
		// Certificate's CertificateRequest and Order, as in any cluster,
		// before the Certificate is written again under the same name.
		env, err = testenv.Start(ctx, testenv.Options{Mode: testenv.Cluster, CertManager: &testenv.CertManagerOptions{
			PebbleAlwaysValid: true, PebbleDomainBlocklist: []string{"refused.test"}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: infra}})).To(Succeed())
		pebbleIssuer(ctx, env, infra, "edge")
		tlsShard(ctx, env.Client, infra, "edge", "edge.provider.test", "pebble")
		cfg, err := config.Parse([]byte("certificates: {backoff: 2s, maxBackoff: 1h}\n"))
		Expect(err).NotTo(HaveOccurred())
		stop = env.RunManager(manager.Options{Config: cfg, Log: GinkgoLogr})
		f = newFixture(ctx, env.Client, "certs-fail")
		f.service(ctx, "web")
	})
	AfterAll(func() { stopManagerAndEnv(stop, env) })

	It("deletes the failed Certificate, reports Backoff, writes it again after the backoff, and issues the other tenant's name", func() {
		f.leaseHost(ctx, "bad", "app.refused.test")
		f.leaseHost(ctx, "good", "www.bob-shop.test", owner("akash1bob", 7))
		Eventually(shardCertReady(ctx, f, "good", "edge"), 2*time.Minute).Should(Equal("True/Issued"))
		Eventually(shardCertReady(ctx, f, "bad", "edge"), 2*time.Minute).Should(Equal("False/Backoff"))
		message := func(g Gomega) string {
			var lh shardgatev1alpha1.LeaseHost
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.nsOf("bad"), Name: "bad"}, &lh)).To(Succeed())
			for _, e := range lh.Status.Shards {
				if c := meta.FindStatusCondition(e.Conditions, shardgatev1alpha1.ConditionCertificateReady); c != nil {
					return c.Message
				}
			}
			return ""
		}
		Eventually(message).Should(SatisfyAll(ContainSubstring("issuance failed"), ContainSubstring("next attempt at")))
		// Written again after the backoff, failing again: the count
		// grows. It can pass 2 unseen: the backoff runs from cert-manager's
		// failure time, and on a loaded machine the failure can be seen
		// after the 4 s of the second backoff have passed, so the name is
		// written again at once, with no Backoff status to show between.
		Eventually(message, 2*time.Minute).Should(MatchRegexp(`\((\d{2,}|[2-9]) attempts\)`))
		Eventually(eventsAbout(ctx, env.Client, f.nsOf("bad"), "LeaseHost", "bad")).Should(HaveKey("Warning/Backoff/Certify"))
	})
})

// Without cert-manager's CRDs every name is CertManagerNotInstalled; once
// they are installed the controller starts writing Certificates, with no
// restart.
var _ = Describe("automatic HTTPS: cert-manager installed after shardgate", Ordered, func() {
	ctx := context.Background()
	const infra = "certs-late-infra"
	var (
		env  *testenv.Env
		stop func() error
		f    *fixture
	)
	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: infra}})).To(Succeed())
		tlsShard(ctx, env.Client, infra, "edge", "edge.provider.test", "letsencrypt")
		stop = env.RunManager(manager.Options{Log: GinkgoLogr})
		f = newFixture(ctx, env.Client, "certs-late")
		f.service(ctx, "web")
	})
	AfterAll(func() { stopManagerAndEnv(stop, env) })

	It("reports CertManagerNotInstalled, then writes the Certificate once the CRDs are served", func() {
		f.leaseHost(ctx, "shop", "shop.late.test")
		Eventually(shardCertReady(ctx, f, "shop", "edge")).Should(Equal("False/CertManagerNotInstalled"))
		root, err := testenv.Root()
		Expect(err).NotTo(HaveOccurred())
		_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "bin", "crds", "cert-manager")}, MaxTime: 2 * time.Minute})
		Expect(err).NotTo(HaveOccurred())
		// The controller looks again every CertManagerRecheck (30 s).
		Eventually(func() error {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(autotls.CertificateGVK)
			return env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: autotls.SecretName("shop.late.test")}, u)
		}, 2*time.Minute).Should(Succeed())
		// No cert-manager controller runs: the Certificate stays Issuing.
		Eventually(shardCertReady(ctx, f, "shop", "edge")).Should(Equal("False/Issuing"))
	})
})

// Akash mode: a ProviderHost's name gets its Certificate in the lease
// namespace, with no owner (the ProviderHost lives in the provider's
// namespace), and the Events go to the ProviderHost.
var _ = Describe("automatic HTTPS in Akash drop-in mode", Ordered, func() {
	ctx := context.Background()
	const infra = "certs-akash-infra"
	var (
		env  *testenv.Env
		stop func() error
	)
	BeforeAll(func() {
		root, err := testenv.Root()
		Expect(err).NotTo(HaveOccurred())
		env, err = testenv.Start(ctx, testenv.Options{ExtraCRDPaths: []string{filepath.Join(root, "crds", "akash"), filepath.Join(root, "bin", "crds", "cert-manager")}})
		Expect(err).NotTo(HaveOccurred())
		for _, ns := range []string{infra, "lease"} {
			Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		}
		tlsShard(ctx, env.Client, infra, "edge", "edge.provider.test", "letsencrypt")
		cfg, err := config.Parse([]byte("akash:\n  enabled: true\n  apiAddress: \"0\"\n"))
		Expect(err).NotTo(HaveOccurred())
		stop = env.RunManager(manager.Options{Config: cfg, Log: GinkgoLogr})
	})
	AfterAll(func() { stopManagerAndEnv(stop, env) })

	It("writes the Certificate in the lease namespace without an owner, with the lease's labels, and reports on the ProviderHost", func() {
		c := env.Client
		l := akash.Lease{Owner: akashAlice, DSeq: 31, GSeq: 1, OSeq: 1, Provider: akashProvider}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.Namespace(), Labels: l.Labels()}}
		ns.Labels[akash.LabelManaged] = "true"
		Expect(c.Create(ctx, ns)).To(Succeed())
		dumps.Add(c, ns.Name)
		Expect(c.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns.Name},
			Spec: corev1.ServiceSpec{Selector: map[string]string{akash.LabelManifestService: "web"},
				Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}})).To(Succeed())
		Expect(c.Create(ctx, &akashv1.ProviderHost{
			ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "lease"},
			Spec: akashv1.ProviderHostSpec{Owner: l.Owner, Provider: l.Provider, Hostname: "shop.akash-tenant.test",
				Dseq: l.DSeq, Gseq: l.GSeq, Oseq: l.OSeq, ServiceName: "web", ExternalPort: 80},
		})).To(Succeed())
		cert := &unstructured.Unstructured{}
		cert.SetGroupVersionKind(autotls.CertificateGVK)
		Eventually(func() error {
			return c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: autotls.SecretName("shop.akash-tenant.test")}, cert)
		}).Should(Succeed())
		Expect(cert.GetOwnerReferences()).To(BeEmpty())
		Expect(cert.GetLabels()).To(SatisfyAll(HaveKeyWithValue(autotls.LabelManaged, "true"),
			HaveKeyWithValue(shardgatev1alpha1.LabelLeaseOwner, akashAlice), HaveKeyWithValue(shardgatev1alpha1.LabelLeaseDSeq, "31")))
		Eventually(eventsAbout(ctx, c, "lease", "ProviderHost", "shop")).Should(HaveKey("Normal/Issuing/Certify"))
	})
})

// stopManagerAndEnv stops a Describe's own manager (stop) and harness
// (env), each when it was started.
func stopManagerAndEnv(stop func() error, env *testenv.Env) {
	if stop != nil {
		Expect(stop()).To(Succeed())
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
}

// pebbleIssuer creates the ClusterIssuer "pebble": ACME from the harness's
// Pebble, with an HTTP-01 solver routed through the shard Gateway
// ns/gateway, and no self check (nothing serves the challenge here).
func pebbleIssuer(ctx context.Context, env *testenv.Env, ns, gateway string) {
	Expect(env.Client.Create(ctx, env.Pebble.ClusterIssuer("pebble", ns, gateway))).To(Succeed())
}

// shardCertReady is the CertificateReady of the LeaseHost's entry for the
// shard: "status/reason", or "none".
func shardCertReady(ctx context.Context, f *fixture, name, shard string) func(Gomega) string {
	return func(g Gomega) string {
		var lh shardgatev1alpha1.LeaseHost
		g.Expect(f.c.Get(ctx, client.ObjectKey{Namespace: f.nsOf(name), Name: name}, &lh)).To(Succeed())
		for _, e := range lh.Status.Shards {
			if e.Name == shard {
				if cond := meta.FindStatusCondition(e.Conditions, shardgatev1alpha1.ConditionCertificateReady); cond != nil {
					return string(cond.Status) + "/" + cond.Reason
				}
				return "none"
			}
		}
		return "no entry"
	}
}

// tlsShard is shard with automatic HTTPS from the ClusterIssuer issuer, a
// listener for every name on 80, and the provider's own HTTPS listener for
// *.<domain> with a certificate for it.
func tlsShard(ctx context.Context, c client.Client, ns, name, domain, issuer string) {
	ca, err := pki.NewCA("provider")
	Expect(err).NotTo(HaveOccurred())
	crt, key, err := ca.Issue("*."+domain, []string{"*." + domain}, nil, time.Hour, true)
	Expect(err).NotTo(HaveOccurred())
	Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-wildcard", Namespace: ns}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}})).To(Succeed())
	ourGatewayClass(ctx, c)
	Expect(c.Create(ctx, &shardgatev1alpha1.GatewayParameters{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: shardgatev1alpha1.GatewayParametersSpec{Shard: &shardgatev1alpha1.ShardSpec{Domain: domain,
			TLS: &shardgatev1alpha1.ShardTLS{IssuerRef: shardgatev1alpha1.IssuerReference{Name: issuer}}}},
	})).To(Succeed())
	Expect(c.Create(ctx, &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: "shardgate",
			Infrastructure: &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{
				Group: "shardgate.io", Kind: "GatewayParameters", Name: name,
			}},
			Listeners: []gatewayv1.Listener{{
				Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80,
				AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: new(gatewayv1.NamespacesFromAll)}},
			}, {
				Name: "https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443, Hostname: new(gatewayv1.Hostname("*." + domain)),
				AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: new(gatewayv1.NamespacesFromAll)}},
				TLS:           &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: gatewayv1.ObjectName(name + "-wildcard")}}},
			}},
		},
	})).To(Succeed())
}

func nestedString(u *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, fields...)
	return s
}
