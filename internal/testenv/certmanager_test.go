package testenv_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/testenv"
)

var (
	clusterIssuerGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "ClusterIssuer"}
	certificateGVK   = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}
	challengeGVK     = schema.GroupVersionKind{Group: "acme.cert-manager.io", Version: "v1", Kind: "Challenge"}
)

// TestCertManagerIssuesFromPebble runs the real ACME issuance path:
// cert-manager's controller, a ClusterIssuer for Pebble with an HTTP-01
// solver that makes Gateway API HTTPRoutes, and one Certificate. It checks
// the certificate (exactly the name, chaining to Pebble's root) and the
// solver objects cert-manager makes on the way, which is what a data plane
// must admit for an HTTP-01 challenge to pass.
//
// No data plane runs here, so nothing can answer the challenge: Pebble is
// told to skip validation (PEBBLE_VA_ALWAYS_VALID), and the solver sets
// waitInsteadOfSelfCheck: 0s, so cert-manager skips its own reachability
// check of http://<name>/.well-known/acme-challenge/<token> too.
func TestCertManagerIssuesFromPebble(t *testing.T) {
	start := time.Now()
	env := testenv.StartT(t, testenv.Options{
		Mode:        testenv.Envtest,
		CertManager: &testenv.CertManagerOptions{PebbleAlwaysValid: true},
	})
	t.Logf("harness with Pebble and cert-manager up in %s", time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	g := NewWithT(t)

	const (
		ns       = "tenant-a"
		hostname = "app.tenant-a.example"
	)
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())

	// cert-manager deletes the solver Pod and Service as soon as the
	// challenge is valid, so they are recorded from watches started before
	// anything exists rather than looked up afterwards.
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	challengeList := &unstructured.UnstructuredList{}
	challengeList.SetGroupVersionKind(challengeGVK.GroupVersion().WithKind("ChallengeList"))
	challenges := record(ctx, t, wc, challengeList, ns)
	routes := record(ctx, t, wc, &gwapiv1.HTTPRouteList{}, ns)
	services := record(ctx, t, wc, &corev1.ServiceList{}, ns)
	pods := record(ctx, t, wc, &corev1.PodList{}, ns)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for name, o := range challenges.all() {
			st, _, _ := unstructured.NestedMap(o.(*unstructured.Unstructured).Object, "status")
			t.Logf("Challenge %s status: %v", name, st)
		}
		for _, p := range env.Processes() {
			if p.Name == "cert-manager-controller" || p.Name == "pebble" {
				t.Logf("%s log tail:\n%s", p.Name, p.Tail(30))
			}
		}
	})

	issuer := env.Pebble.ClusterIssuer("pebble", testenv.SystemNamespace, "shard-a")
	// What the Challenge must carry from the issuer's solver.
	parentRef := map[string]any{
		"group": "gateway.networking.k8s.io", "kind": "Gateway",
		"name": "shard-a", "namespace": testenv.SystemNamespace, "sectionName": "http",
	}
	g.Expect(env.Client.Create(ctx, issuer)).To(Succeed())
	// Ready=True means cert-manager registered an ACME account with Pebble
	// over TLS it verified with caBundle.
	waitReady(ctx, t, env.Client, clusterIssuerGVK, client.ObjectKey{Name: "pebble"})
	t.Logf("ClusterIssuer Ready after %s", time.Since(start).Round(time.Millisecond))

	cert := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "app", "namespace": ns},
		"spec": map[string]any{
			"secretName": "app-tls",
			"dnsNames":   []any{hostname},
			"issuerRef":  map[string]any{"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "pebble"},
			"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256)},
		},
	}}
	cert.SetGroupVersionKind(certificateGVK)
	g.Expect(env.Client.Create(ctx, cert)).To(Succeed())
	waitReady(ctx, t, env.Client, certificateGVK, client.ObjectKey{Namespace: ns, Name: "app"})
	t.Logf("Certificate Ready after %s", time.Since(start).Round(time.Millisecond))

	// The Secret: a key pair for exactly the hostname, chaining to the root
	// Pebble issues from.
	var secret corev1.Secret
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-tls"}, &secret)).To(Succeed())
	g.Expect(secret.Type).To(Equal(corev1.SecretTypeTLS))
	_, err = tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	g.Expect(err).NotTo(HaveOccurred(), "tls.key does not match tls.crt")
	chain := parseCerts(t, secret.Data[corev1.TLSCertKey])
	g.Expect(chain).NotTo(BeEmpty())
	leaf := chain[0]
	g.Expect(leaf.DNSNames).To(Equal([]string{hostname}))
	g.Expect(leaf.IPAddresses).To(BeEmpty())
	g.Expect(leaf.URIs).To(BeEmpty())
	rootPEM, err := env.Pebble.Roots(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	roots, intermediates := x509.NewCertPool(), x509.NewCertPool()
	g.Expect(roots.AppendCertsFromPEM(rootPEM)).To(BeTrue(), "Pebble's root:\n%s", rootPEM)
	for _, c := range chain[1:] {
		intermediates.AddCert(c)
	}
	_, err = leaf.Verify(x509.VerifyOptions{
		DNSName: hostname, Roots: roots, Intermediates: intermediates,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	g.Expect(err).NotTo(HaveOccurred(), "the certificate does not chain to Pebble's root for %s", hostname)
	harnessCA := x509.NewCertPool()
	harnessCA.AppendCertsFromPEM(env.Pebble.CABundle)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: harnessCA, Intermediates: intermediates})
	g.Expect(err).To(HaveOccurred(), "issued by the harness's serving CA, not by Pebble")

	// The HTTP-01 challenge: one, for the hostname, with the solver the
	// ClusterIssuer names.
	chs := challenges.all()
	g.Expect(chs).To(HaveLen(1), "Challenges seen: %v", keys(chs))
	var ch *unstructured.Unstructured
	for _, o := range chs {
		ch = o.(*unstructured.Unstructured)
	}
	g.Expect(nested(ch, "spec", "type")).To(Equal("HTTP-01"))
	g.Expect(nested(ch, "spec", "dnsName")).To(Equal(hostname))
	token, _ := nested(ch, "spec", "token").(string)
	g.Expect(token).NotTo(BeEmpty())
	gotParents, _, _ := unstructured.NestedSlice(ch.Object, "spec", "solver", "http01", "gatewayHTTPRoute", "parentRefs")
	g.Expect(gotParents).To(Equal([]any{parentRef}))
	g.Expect(challenges.lastState(ch.GetName())).To(Equal("valid"))

	// The solver Service: port 8089, selecting the solver Pod.
	svcs := services.all()
	g.Expect(svcs).To(HaveLen(1), "Services seen: %v", keys(svcs))
	var svc *corev1.Service
	for _, o := range svcs {
		svc = o.(*corev1.Service)
	}
	g.Expect(svc.Name).To(HavePrefix("cm-acme-http-solver-"))
	g.Expect(svc.Labels).To(HaveKeyWithValue("acme.cert-manager.io/http01-solver", "true"))
	g.Expect(svc.Spec.Ports).To(HaveLen(1))
	g.Expect(svc.Spec.Ports[0].Port).To(Equal(int32(8089)))
	g.Expect(metav1.IsControlledBy(svc, ch)).To(BeTrue(), "Service %s is not controlled by the Challenge", svc.Name)

	// The solver Pod: never runs here (no scheduler, no kubelet).
	ps := pods.all()
	g.Expect(ps).To(HaveLen(1), "Pods seen: %v", keys(ps))
	for _, o := range ps {
		pod := o.(*corev1.Pod)
		g.Expect(pod.Spec.Containers).To(HaveLen(1))
		g.Expect(pod.Spec.Containers[0].Image).To(Equal(testenv.CertManagerSolverImage))
		g.Expect(pod.Labels).To(Equal(svc.Spec.Selector))
	}

	// The solver HTTPRoute: the parentRefs of the ClusterIssuer's solver,
	// exactly the hostname, one rule for exactly the token's path, to the
	// solver Service in the Certificate's namespace.
	rs := routes.all()
	g.Expect(rs).To(HaveLen(1), "HTTPRoutes seen: %v", keys(rs))
	var route *gwapiv1.HTTPRoute
	for _, o := range rs {
		route = o.(*gwapiv1.HTTPRoute)
	}
	g.Expect(route.Namespace).To(Equal(ns))
	g.Expect(route.Name).To(HavePrefix("cm-acme-http-solver-"))
	g.Expect(metav1.IsControlledBy(route, ch)).To(BeTrue(), "HTTPRoute %s is not controlled by the Challenge", route.Name)
	g.Expect(route.Labels).To(Equal(svc.Spec.Selector))
	g.Expect(route.Spec.ParentRefs).To(HaveLen(1))
	pr := route.Spec.ParentRefs[0]
	g.Expect([]any{string(*pr.Group), string(*pr.Kind), string(pr.Name), string(*pr.Namespace), string(*pr.SectionName)}).
		To(Equal([]any{"gateway.networking.k8s.io", "Gateway", "shard-a", testenv.SystemNamespace, "http"}))
	g.Expect(route.Spec.Hostnames).To(Equal([]gwapiv1.Hostname{hostname}))
	g.Expect(route.Spec.Rules).To(HaveLen(1))
	rule := route.Spec.Rules[0]
	g.Expect(rule.Matches).To(HaveLen(1))
	m := rule.Matches[0]
	g.Expect(*m.Path.Type).To(Equal(gwapiv1.PathMatchExact))
	g.Expect(*m.Path.Value).To(Equal("/.well-known/acme-challenge/" + token))
	g.Expect(m.Headers).To(BeEmpty())
	g.Expect(m.QueryParams).To(BeEmpty())
	g.Expect(m.Method).To(BeNil())
	g.Expect(rule.Filters).To(BeEmpty())
	g.Expect(rule.BackendRefs).To(HaveLen(1))
	br := rule.BackendRefs[0]
	g.Expect([]any{string(*br.Group), string(*br.Kind), string(br.Name), string(*br.Namespace), int32(*br.Port)}).
		To(Equal([]any{"", "Service", svc.Name, ns, int32(8089)}))

	// Once the challenge is valid cert-manager deletes the solver Pod and
	// Service itself, and the Challenge once the order is valid. It never
	// deletes the HTTPRoute: that goes with the Challenge it is controlled
	// by, through the garbage collector (which envtest mode does not run).
	g.Eventually(func() []string { return services.deletedNames() }).WithContext(ctx).
		WithTimeout(time.Minute).Should(ConsistOf(svc.Name))
	g.Eventually(func() int { return len(pods.deletedNames()) }).WithContext(ctx).
		WithTimeout(time.Minute).Should(Equal(1))
	g.Eventually(func() []string { return challenges.deletedNames() }).WithContext(ctx).
		WithTimeout(time.Minute).Should(ConsistOf(ch.GetName()))
	g.Expect(routes.deletedNames()).To(BeEmpty())
	t.Logf("done in %s", time.Since(start).Round(time.Millisecond))
}

// waitReady waits for the object's Ready condition to be True, failing
// with its conditions when the context ends first.
func waitReady(ctx context.Context, t *testing.T, c client.Client, gvk schema.GroupVersionKind, key client.ObjectKey) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		g.Expect(c.Get(ctx, key, u)).To(Succeed())
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		ready := ""
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
				ready = fmt.Sprint(m["status"])
			}
		}
		g.Expect(ready).To(Equal("True"), "%s %s conditions: %v", gvk.Kind, key, conds)
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
}

func nested(u *unstructured.Unstructured, fields ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, fields...)
	return v
}

func parseCerts(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return out
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatalf("tls.crt: %v", err)
		}
		out = append(out, c)
	}
}

func keys(m map[string]client.Object) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// recorder keeps the last version of every object a watch reported, and
// the names of those it reported deleted.
type recorder struct {
	mu      sync.Mutex
	objs    map[string]client.Object
	states  map[string]string // status.state of unstructured objects
	deleted map[string]bool
}

func record(ctx context.Context, t *testing.T, wc client.WithWatch, list client.ObjectList, ns string) *recorder {
	t.Helper()
	w, err := wc.Watch(ctx, list, client.InNamespace(ns))
	if err != nil {
		t.Fatalf("watch %T: %v", list, err)
	}
	t.Cleanup(w.Stop)
	r := &recorder{objs: map[string]client.Object{}, states: map[string]string{}, deleted: map[string]bool{}}
	go func() {
		for ev := range w.ResultChan() {
			o, ok := ev.Object.(client.Object)
			if !ok {
				continue
			}
			r.mu.Lock()
			r.objs[o.GetName()] = o
			if u, ok := o.(*unstructured.Unstructured); ok {
				if s, ok := nested(u, "status", "state").(string); ok && s != "" {
					r.states[o.GetName()] = s
				}
			}
			if ev.Type == watch.Deleted {
				r.deleted[o.GetName()] = true
			}
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *recorder) all() map[string]client.Object {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]client.Object, len(r.objs))
	for k, v := range r.objs {
		out[k] = v
	}
	return out
}

func (r *recorder) lastState(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.states[name]
}

func (r *recorder) deletedNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k := range r.deleted {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
