package controllers_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/controllers"
	"github.com/shardgate/shardgate/internal/akash"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/testenv"
	xdsserver "github.com/shardgate/shardgate/xds/server"
)

// dropRetryFromHTTPRouteCRD makes the installed (experimental) HTTPRoute
// CRD look like a Standard-channel one older than v1.7: no rules[].retry
// in any version's schema, so the apiserver prunes the field.
func dropRetryFromHTTPRouteCRD(ctx context.Context, c client.Client) {
	Eventually(func() error {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, types.NamespacedName{Name: "httproutes.gateway.networking.k8s.io"}, &crd); err != nil {
			return err
		}
		dropped := 0
		for i := range crd.Spec.Versions {
			s := crd.Spec.Versions[i].Schema
			if s == nil || s.OpenAPIV3Schema == nil {
				continue
			}
			spec := s.OpenAPIV3Schema.Properties["spec"]
			rules := spec.Properties["rules"]
			if rules.Items == nil || rules.Items.Schema == nil {
				continue
			}
			if _, ok := rules.Items.Schema.Properties["retry"]; ok {
				delete(rules.Items.Schema.Properties, "retry")
				dropped++
			}
			spec.Properties["rules"] = rules
			s.OpenAPIV3Schema.Properties["spec"] = spec
		}
		if dropped == 0 {
			return fmt.Errorf("no version of %s has rules[].retry", crd.Name)
		}
		return c.Update(ctx, &crd)
	}).Should(Succeed())
	// The apiserver serves the new schema once a route written with the
	// field reads back without it.
	Eventually(func(g Gomega) {
		probe := &gatewayv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: "default"},
			Spec: gatewayv1.HTTPRouteSpec{Rules: []gatewayv1.HTTPRouteRule{{
				BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
					Name: "x", Port: new(gatewayv1.PortNumber(80))}}}},
				Retry: &gatewayv1.HTTPRouteRetry{Attempts: new(1)},
			}}},
		}
		g.Expect(c.Create(ctx, probe, client.DryRunAll, client.FieldValidation(metav1.FieldValidationIgnore))).To(Succeed())
		g.Expect(probe.Spec.Rules[0].Retry).To(BeNil())
	}).Should(Succeed())
}

// routeWrites counts the writes to one route's spec, labels and
// annotations (status writes and managed fields aside), from a watch.
type routeWrites struct {
	mu     sync.Mutex
	n      int
	last   *gatewayv1.HTTPRoute
	cancel context.CancelFunc
}

func watchRouteWrites(ctx context.Context, cfg *Env, ns, name string) *routeWrites {
	wc, err := client.NewWithWatch(cfg.Config, client.Options{Scheme: cfg.Scheme})
	Expect(err).NotTo(HaveOccurred())
	wctx, cancel := context.WithCancel(ctx)
	w, err := wc.Watch(wctx, &gatewayv1.HTTPRouteList{}, client.InNamespace(ns))
	Expect(err).NotTo(HaveOccurred())
	rw := &routeWrites{cancel: cancel}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				r, isRoute := ev.Object.(*gatewayv1.HTTPRoute)
				if !isRoute || r.Name != name || (ev.Type != watch.Added && ev.Type != watch.Modified) {
					continue
				}
				rw.mu.Lock()
				if rw.last == nil || !equality.Semantic.DeepEqual(rw.last.Spec, r.Spec) ||
					!equality.Semantic.DeepEqual(rw.last.Labels, r.Labels) || !equality.Semantic.DeepEqual(rw.last.Annotations, r.Annotations) {
					rw.n++
				}
				rw.last = r.DeepCopy()
				rw.mu.Unlock()
			}
		}
	}()
	return rw
}

func (rw *routeWrites) count() int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.n
}

// Env is the harness, named for the helper above.
type Env = testenv.Env

var _ = Describe("Akash mode on a Standard-channel HTTPRoute CRD without rules[].retry", Ordered, func() {
	ctx := context.Background()
	var (
		env  *testenv.Env
		c    client.Client
		stop func() error
		xds  *xdsserver.Server
	)
	BeforeAll(func() {
		root, err := testenv.Root()
		Expect(err).NotTo(HaveOccurred())
		env, err = testenv.Start(ctx, testenv.Options{ExtraCRDPaths: []string{filepath.Join(root, "crds", "akash")}})
		Expect(err).NotTo(HaveOccurred())
		c = env.Client
		dropRetryFromHTTPRouteCRD(ctx, c)
		cfg, err := config.Parse([]byte("akash:\n  enabled: true\n  apiAddress: \"0\"\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lease"}})).To(Succeed())
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "akash-edge"}})).To(Succeed())
		shard(ctx, c, "akash-edge", "edge", "example.com")
		stop = env.RunManager(manager.Options{Config: cfg, Log: GinkgoLogr, OnXDSServer: func(s *xdsserver.Server) { xds = s }})
	})
	AfterAll(func() {
		if stop != nil {
			Expect(stop()).To(Succeed())
		}
		if env != nil {
			Expect(env.Stop()).To(Succeed())
		}
	})

	It("writes the retry policy as an annotation once, says so, and Envoy still retries", func() {
		l := akash.Lease{Owner: akashAlice, DSeq: 11, GSeq: 1, OSeq: 1, Provider: akashProvider}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.Namespace(), Labels: l.Labels()}}
		ns.Labels[akash.LabelManaged] = "true"
		Expect(c.Create(ctx, ns)).To(Succeed())
		Expect(c.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns.Name},
			Spec: corev1.ServiceSpec{Selector: map[string]string{akash.LabelManifestService: "web"},
				Ports: []corev1.ServicePort{{Port: 80}}},
		})).To(Succeed())
		writes := watchRouteWrites(ctx, env, ns.Name, "web.example.com")
		defer writes.cancel()
		Expect(c.Create(ctx, &akashv1.ProviderHost{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "lease"},
			Spec: akashv1.ProviderHostSpec{Owner: l.Owner, Provider: l.Provider, Hostname: "web.example.com",
				Dseq: l.DSeq, Gseq: l.GSeq, Oseq: l.OSeq, ServiceName: "web", ExternalPort: 80},
		})).To(Succeed())

		// Akash's defaults (3 tries, a 60 s next_timeout and idle timeout): one retry, in the annotation.
		Eventually(func(g Gomega) {
			var r gatewayv1.HTTPRoute
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: "web.example.com"}, &r)).To(Succeed())
			g.Expect(r.Spec.Rules).To(HaveLen(1))
			g.Expect(r.Spec.Rules[0].Retry).To(BeNil())
			g.Expect(r.Annotations).To(HaveKeyWithValue(shardgatev1alpha1.AnnotationRetry, `{"attempts":1}`))
			g.Expect(r.Annotations).To(HaveKeyWithValue(shardgatev1alpha1.AnnotationRetryIdempotentOnly, "true"))
		}).Should(Succeed())

		// The shard's Envoy config retries: one retry, idempotent
		// requests only.
		Eventually(func(g Gomega) {
			routes := vhostRoutes(xds, types.NamespacedName{Namespace: "akash-edge", Name: "edge"}, "web.example.com")
			g.Expect(routes).NotTo(BeEmpty())
			for _, rt := range routes {
				p := rt.GetRoute().GetRetryPolicy()
				g.Expect(p).NotTo(BeNil())
				g.Expect(p.GetNumRetries().GetValue()).To(Equal(uint32(1)))
				g.Expect(p.GetRetriableRequestHeaders()).To(HaveLen(1))
			}
		}).Should(Succeed())

		// Said once, and the route is written a bounded number of times:
		// no write loop against the pruning apiserver.
		Eventually(eventsAbout(ctx, c, "lease", "ProviderHost", "web")).Should(HaveKey("Normal/" + controllers.ReasonRetryAsAnnotation + "/Route"))
		Eventually(writes.count).Should(BeNumerically(">=", 1), "the watch sees the route's first write")
		Consistently(writes.count, "5s").Should(BeNumerically("<=", 2))
	})

	It("creates later routes in the annotation form at once, in one write", func() {
		l := akash.Lease{Owner: akashAlice, DSeq: 12, GSeq: 1, OSeq: 1, Provider: akashProvider}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.Namespace(), Labels: l.Labels()}}
		ns.Labels[akash.LabelManaged] = "true"
		Expect(c.Create(ctx, ns)).To(Succeed())
		Expect(c.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns.Name},
			Spec: corev1.ServiceSpec{Selector: map[string]string{akash.LabelManifestService: "web"},
				Ports: []corev1.ServicePort{{Port: 80}}},
		})).To(Succeed())
		writes := watchRouteWrites(ctx, env, ns.Name, "second.example.com")
		defer writes.cancel()
		Expect(c.Create(ctx, &akashv1.ProviderHost{
			ObjectMeta: metav1.ObjectMeta{Name: "second", Namespace: "lease"},
			Spec: akashv1.ProviderHostSpec{Owner: l.Owner, Provider: l.Provider, Hostname: "second.example.com",
				Dseq: l.DSeq, Gseq: l.GSeq, Oseq: l.OSeq, ServiceName: "web", ExternalPort: 80},
		})).To(Succeed())
		Eventually(func(g Gomega) {
			var r gatewayv1.HTTPRoute
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: "second.example.com"}, &r)).To(Succeed())
			g.Expect(r.Annotations).To(HaveKeyWithValue(shardgatev1alpha1.AnnotationRetry, `{"attempts":1}`))
		}).Should(Succeed())
		// The watch delivers the create after the Get above may already
		// have read it: wait for it before counting.
		Eventually(writes.count).Should(BeNumerically(">=", 1), "the watch sees the route's first write")
		Consistently(writes.count, "3s").Should(Equal(1), "created in the annotation form at once: the probe said so")
	})

	It("finds the dropped field from the write itself when the probe cannot run, and writes once more", func() {
		// An admission policy refuses the probe (a dry run): a restarted
		// controller writes the field, sees it dropped, and moves the
		// policy to the annotation.
		Expect(c.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "no-retry-probes"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: new(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{"gateway.networking.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"httproutes"}},
					},
				}}},
				Validations: []admissionregistrationv1.Validation{{
					Expression: "!(has(object.metadata.generateName) && object.metadata.generateName == 'shardgate-retry-probe-')",
					Message:    "no probes here",
				}},
			},
		})).To(Succeed())
		Expect(c.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "no-retry-probes"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName: "no-retry-probes", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			},
		})).To(Succeed())
		Eventually(func() error {
			probe := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{GenerateName: "shardgate-retry-probe-", Namespace: "default"}}
			return c.Create(ctx, probe, client.DryRunAll)
		}).Should(MatchError(ContainSubstring("no probes here")))
		Expect(stop()).To(Succeed())
		cfg, err := config.Parse([]byte("akash:\n  enabled: true\n  apiAddress: \"0\"\n"))
		Expect(err).NotTo(HaveOccurred())
		stop = env.RunManager(manager.Options{Config: cfg, Log: GinkgoLogr, OnXDSServer: func(s *xdsserver.Server) { xds = s }})

		l := akash.Lease{Owner: akashAlice, DSeq: 13, GSeq: 1, OSeq: 1, Provider: akashProvider}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.Namespace(), Labels: l.Labels()}}
		ns.Labels[akash.LabelManaged] = "true"
		Expect(c.Create(ctx, ns)).To(Succeed())
		Expect(c.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns.Name},
			Spec: corev1.ServiceSpec{Selector: map[string]string{akash.LabelManifestService: "web"},
				Ports: []corev1.ServicePort{{Port: 80}}},
		})).To(Succeed())
		writes := watchRouteWrites(ctx, env, ns.Name, "third.example.com")
		defer writes.cancel()
		Expect(c.Create(ctx, &akashv1.ProviderHost{
			ObjectMeta: metav1.ObjectMeta{Name: "third", Namespace: "lease"},
			Spec: akashv1.ProviderHostSpec{Owner: l.Owner, Provider: l.Provider, Hostname: "third.example.com",
				Dseq: l.DSeq, Gseq: l.GSeq, Oseq: l.OSeq, ServiceName: "web", ExternalPort: 80},
		})).To(Succeed())
		Eventually(func(g Gomega) {
			var r gatewayv1.HTTPRoute
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: "third.example.com"}, &r)).To(Succeed())
			g.Expect(r.Spec.Rules[0].Retry).To(BeNil())
			g.Expect(r.Annotations).To(HaveKeyWithValue(shardgatev1alpha1.AnnotationRetry, `{"attempts":1}`))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			routes := vhostRoutes(xds, types.NamespacedName{Namespace: "akash-edge", Name: "edge"}, "third.example.com")
			g.Expect(routes).NotTo(BeEmpty())
			for _, rt := range routes {
				g.Expect(rt.GetRoute().GetRetryPolicy().GetNumRetries().GetValue()).To(Equal(uint32(1)))
			}
		}).Should(Succeed())
		Consistently(writes.count, "5s").Should(BeNumerically("<=", 2), "the field, then the annotation: no loop")
	})
})

// TestRetryPrunedReadBack: a route that reads back as desired minus its
// retry field is recognised as pruned (and switches to the annotation);
// any other difference is not.
func TestRetryPrunedReadBack(t *testing.T) {
	desired := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "n", Labels: map[string]string{"akash.network": "true"},
			Annotations: map[string]string{shardgatev1alpha1.AnnotationRetryIdempotentOnly: "true"}},
		Spec: gatewayv1.HTTPRouteSpec{Rules: []gatewayv1.HTTPRouteRule{{Retry: &gatewayv1.HTTPRouteRetry{Attempts: new(2)}}}},
	}
	pruned := desired.DeepCopy()
	pruned.Spec.Rules[0].Retry = nil
	if !controllers.RetryPruned(pruned, desired) {
		t.Error("a read-back without rules[].retry is not recognised as pruned")
	}
	if controllers.RetryPruned(desired.DeepCopy(), desired) {
		t.Error("a read-back with the field counts as pruned")
	}
	other := pruned.DeepCopy()
	other.Spec.Hostnames = []gatewayv1.Hostname{"x.example.com"}
	if controllers.RetryPruned(other, desired) {
		t.Error("a read-back that differs in more than the retry field counts as pruned")
	}
	annotated := pruned.DeepCopy()
	annotated.Annotations[shardgatev1alpha1.AnnotationRetry] = `{"attempts":2}`
	if controllers.RetryPruned(annotated, desired) {
		t.Error("a route in the annotation form counts as pruned")
	}
	if !controllers.IsRetrySchemaError(fmt.Errorf(`apply HTTPRoute n/r: failed to create typed patch object: .spec.rules[0].retry: field not declared in schema`)) ||
		controllers.IsRetrySchemaError(fmt.Errorf("conflict")) {
		t.Error("IsRetrySchemaError")
	}
}
