package shardgate_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/autotls"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/configdump"
	"github.com/shardgate/shardgate/internal/infra"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/testenv"
)

// --- against the harness apiserver --------------------------------------------

func TestChartOnAPIServer(t *testing.T) {
	testenv.Require(t)
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "chart on the apiserver")
}

// applyAll server-side applies objs as Helm's field manager would.
func applyAll(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) {
	GinkgoHelper()
	for _, u := range objs {
		ac := client.ApplyConfigurationFromUnstructured(u.DeepCopy())
		Expect(c.Apply(ctx, ac, client.FieldOwner("helm"), client.ForceOwnership)).
			To(Succeed(), "apply %s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
	}
}

// expectStored checks every object exists as applied (same generation of
// spec; at least the name and kind, plus the Deployment's replicas).
func expectStored(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) {
	GinkgoHelper()
	for _, u := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(u.GroupVersionKind())
		Expect(c.Get(ctx, client.ObjectKeyFromObject(u), got)).To(Succeed(), "%s %s", u.GetKind(), u.GetName())
		Expect(got.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"))
		if u.GetKind() == "Deployment" {
			// The rendered number decodes as float64, the stored one as int64.
			want, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "replicas")
			have, _, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "replicas")
			Expect(fmt.Sprint(have)).To(Equal(fmt.Sprint(want)))
		}
	}
}

var _ = Describe("the chart on the harness apiserver", Ordered, func() {
	const (
		ns     = "sg-release"
		tenant = "tenant-a"
		infraN = "providers"
	)
	var (
		ctx  context.Context
		env  *testenv.Env
		rel  *release
		logs *logRecorder
		reqs *requestRecorder
	)

	BeforeAll(func() {
		ctx = context.Background()
		var err error
		root, err := testenv.Root()
		Expect(err).NotTo(HaveOccurred())
		// cert-manager's CRDs (not its controller): the certificate
		// controller's Certificates are written under the chart's RBAC.
		env, err = testenv.Start(ctx, testenv.Options{ExtraCRDPaths: []string{filepath.Join(root, "bin", "crds", "cert-manager")}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		for _, n := range []string{ns, "sg-other", tenant, infraN} {
			obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}
			if n == tenant {
				// The tenant's namespace is marked as its lease owner's.
				obj.Annotations = map[string]string{"shardgate.io/owner": "akash1alice"}
			}
			Expect(env.Client.Create(ctx, obj)).To(Succeed())
		}
		rel, err = render("shardgate", ns, map[string]any{
			"config":          map[string]any{"blockedHostnames": []any{".blocked.example"}},
			"shardNamespaces": []any{infraN},
		})
		Expect(err).NotTo(HaveOccurred())
	})

	It("accepts every rendered object with the default values, CRDs included", func() {
		applyAll(ctx, env.Client, rel.crds)
		applyAll(ctx, env.Client, rel.objects)
		expectStored(ctx, env.Client, rel.objects)
	})

	It("accepts every rendered object with non-default values, the Gateway API CRDs included", func() {
		other, err := render("edge", "sg-other", map[string]any{
			"replicaCount":   3,
			"controllerName": "example.com/edge",
			"gatewayClass":   map[string]any{"name": "edge"},
			"gatewayAPI":     map[string]any{"installCRDs": true},
			"config":         map[string]any{"blockedHostnames": []any{"a.example", ".b.example"}},
			"ports":          map[string]any{"xds": 19000},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(len(other.crds)).To(BeNumerically(">", 10))
		applyAll(ctx, env.Client, other.crds)
		applyAll(ctx, env.Client, other.objects)
		expectStored(ctx, env.Client, other.objects)
		for _, u := range other.crds {
			Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(u), &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			}})).To(Succeed())
		}
	})

	It("accepts the Akash API's NetworkPolicy (port ranges with endPort), with the default and a configured port", func() {
		Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "akash-services"}})).To(Succeed())
		for _, port := range []int{8086, 1, 65535} {
			akashRel, err := render("shardgate", "akash-services", map[string]any{"akash": map[string]any{"enabled": true, "apiPort": port}})
			Expect(err).NotTo(HaveOccurred())
			var policies []*unstructured.Unstructured
			for _, o := range akashRel.objects {
				if o.GetKind() == "NetworkPolicy" {
					policies = append(policies, o)
				}
			}
			Expect(policies).To(HaveLen(1))
			applyAll(ctx, env.Client, policies)
			expectStored(ctx, env.Client, policies)
		}
	})

	It("accepts the scrape token Secret and grants the metrics and config readers their paths only", func() {
		mon, err := render("mon", "sg-other", map[string]any{
			"configReader": map[string]any{"name": "mon-config-reader"},
			"metrics":      map[string]any{"certSecret": "mon-metrics-tls", "serviceMonitor": map[string]any{"enabled": true}},
		})
		Expect(err).NotTo(HaveOccurred())
		var objs []*unstructured.Unstructured
		for _, u := range mon.objects {
			switch u.GetKind() {
			case "ServiceAccount", "Secret", "ClusterRole", "ClusterRoleBinding":
				objs = append(objs, u)
			}
		}
		Expect(names(objs)).To(ContainElements("Secret/mon-shardgate-metrics-reader-token", "ServiceAccount/mon-shardgate-metrics-reader",
			"ServiceAccount/mon-config-reader", "ClusterRoleBinding/mon-shardgate-metrics-reader", "ClusterRoleBinding/mon-shardgate-config-reader"))
		applyAll(ctx, env.Client, objs)
		expectStored(ctx, env.Client, objs)
		var sec corev1.Secret
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "sg-other", Name: "mon-shardgate-metrics-reader-token"}, &sec)).To(Succeed())
		Expect(sec.Type).To(Equal(corev1.SecretTypeServiceAccountToken))

		// What the metrics server's filter asks after the TokenReview.
		allowed := func(sa, path string) bool {
			GinkgoHelper()
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:                  "system:serviceaccount:sg-other:" + sa,
				Groups:                []string{"system:serviceaccounts", "system:serviceaccounts:sg-other", "system:authenticated"},
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: "get"},
			}}
			Expect(env.Client.Create(ctx, sar)).To(Succeed())
			return sar.Status.Allowed
		}
		dumpPath := manager.ConfigDumpPath + "/providers/shard-a"
		Eventually(func() bool { return allowed("mon-shardgate-metrics-reader", "/metrics") }).Should(BeTrue())
		Eventually(func() bool { return allowed("mon-config-reader", dumpPath) }).Should(BeTrue())
		Expect(allowed("mon-shardgate-metrics-reader", dumpPath)).To(BeFalse())
		Expect(allowed("mon-config-reader", "/metrics")).To(BeFalse())
		Expect(allowed("mon-config-reader", "/debug/pprof/heap")).To(BeFalse())
	})

	It("grants the controller exactly what it uses: it runs under the chart's ServiceAccount", func() {
		checkNoWildcards(GinkgoT(), rel)
		sa := find[corev1.ServiceAccount](GinkgoT(), rel, "ServiceAccount", "shardgate")
		user := fmt.Sprintf("system:serviceaccount:%s:%s", ns, sa.Name)

		logs = &logRecorder{}
		reqs = &requestRecorder{}
		log := logs.logger()
		// client-go (reflectors, leader election, event broadcasters) logs
		// through klog; controller-runtime's global logger is used by a few
		// of its packages. Both go to the recorder.
		klog.SetLogger(log)
		ctrl.SetLogger(log)

		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		cfg.Wrap(reqs.wrap)

		// Impersonation is in effect: the ServiceAccount may not list Pods.
		sac, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		Expect(err).NotTo(HaveOccurred())
		err = sac.List(ctx, &corev1.PodList{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected forbidden, got %v", err)
		reqs.reset()

		// The controller reads the chart's own config file.
		_, data := controllerConfig(GinkgoT(), rel)
		path := filepath.Join(GinkgoT().TempDir(), "config.yaml")
		Expect(os.WriteFile(path, []byte(data), 0o644)).To(Succeed())
		healthPort, err := testenv.FreePort()
		Expect(err).NotTo(HaveOccurred())
		metricsPort, err := testenv.FreePort()
		Expect(err).NotTo(HaveOccurred())

		mctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- manager.Run(mctx, manager.Options{
				RestConfig:     cfg,
				ConfigPath:     path,
				LeaderElect:    new(true),
				XDSAddress:     "127.0.0.1:0",
				MetricsAddress: fmt.Sprintf("127.0.0.1:%d", metricsPort), // secure: TokenReview + SubjectAccessReview
				HealthAddress:  fmt.Sprintf("127.0.0.1:%d", healthPort),
				Log:            log,
			})
		}()
		stopped := false
		stop := func() {
			if stopped {
				return
			}
			stopped = true
			cancel()
			Eventually(done, 30*time.Second).Should(Receive(BeNil()))
		}
		DeferCleanup(stop)

		// Ready: every informer synced (list + watch of every kind) and
		// xDS serving.
		Eventually(func() (int, error) {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort))
			if err != nil {
				return 0, err
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.StatusCode, nil
		}).Should(Equal(http.StatusOK))

		// eventually polls f and stops at once when the controller was
		// refused a request: waiting would only hide the RBAC gap.
		eventually := func(f func(g Gomega)) AsyncAssertion {
			return Eventually(func(g Gomega) {
				if d := reqs.denied(); len(d) > 0 {
					StopTrying(fmt.Sprintf("the controller was refused (403): %v; extend templates/rbac.yaml", d)).Now()
				}
				f(g)
			})
		}
		c := env.Client
		By("a scrape of the secure metrics endpoint with a token bound to the chart's metrics-reader role")
		find[rbacv1.ClusterRole](GinkgoT(), rel, "ClusterRole", "shardgate-metrics-reader")
		Expect(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus"}})).To(Succeed())
		Expect(c.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "prometheus-shardgate-metrics"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "shardgate-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "prometheus"}},
		})).To(Succeed())
		cs, err := kubernetes.NewForConfig(env.Config)
		Expect(err).NotTo(HaveOccurred())
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "prometheus", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		scraper := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed
		eventually(func(g Gomega) {
			req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", metricsPort), nil)
			g.Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Authorization", "Bearer "+tr.Status.Token)
			resp, err := scraper.Do(req)
			g.Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		}).Should(Succeed())
		By("leader election and the xDS CA in the release namespace")
		eventually(func(g Gomega) {
			var lease coordinationv1.Lease
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: config.DefaultLeaderElectionID}, &lease)).To(Succeed())
			g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		}).Should(Succeed())
		var ca corev1.Secret
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: manager.XDSCASecret}, &ca)).To(Succeed())

		By("a shard Gateway of the chart's GatewayClass")
		domain := "shard-a.example.net"
		Expect(c.Create(ctx, &shardgatev1alpha1.GatewayParameters{
			ObjectMeta: metav1.ObjectMeta{Name: "shard-a", Namespace: infraN},
			Spec: shardgatev1alpha1.GatewayParametersSpec{Shard: &shardgatev1alpha1.ShardSpec{Domain: domain,
				TLS: &shardgatev1alpha1.ShardTLS{IssuerRef: shardgatev1alpha1.IssuerReference{Name: "le"}}}},
		})).To(Succeed())
		all := &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: new(gatewayv1.NamespacesFromAll)}}
		gw := &gatewayv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Name: "shard-a", Namespace: infraN},
			Spec: gatewayv1.GatewaySpec{
				GatewayClassName: "shardgate",
				Infrastructure: &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{
					Group: "shardgate.io", Kind: "GatewayParameters", Name: "shard-a",
				}},
				Listeners: []gatewayv1.Listener{{
					Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80,
					Hostname: new(gatewayv1.Hostname("*." + domain)), AllowedRoutes: all,
				}, {
					Name: "tls", Protocol: gatewayv1.TLSProtocolType, Port: 443,
					Hostname: new(gatewayv1.Hostname("*." + domain)), AllowedRoutes: all,
					TLS: &gatewayv1.ListenerTLSConfig{Mode: new(gatewayv1.TLSModePassthrough)},
				}},
			},
		}
		Expect(c.Create(ctx, gw)).To(Succeed())

		By("tenant objects: a Service, LeaseHosts (one blocked by the chart's block list), a LeasedIP, a GRPCRoute, a TLSRoute and a BackendTLSPolicy")
		Expect(c.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: tenant},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": "web"},
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
			},
		})).To(Succeed())
		lease := shardgatev1alpha1.LeaseRef{Owner: "akash1alice", DSeq: 1, GSeq: 1, OSeq: 1}
		for name, spec := range map[string]shardgatev1alpha1.LeaseHostSpec{
			"app":     {Lease: lease, Subdomain: "app", Service: shardgatev1alpha1.ServiceRef{Name: "web", Port: 80}, Path: "/"},
			"blocked": {Lease: lease, Hostname: "x.blocked.example", Service: shardgatev1alpha1.ServiceRef{Name: "web", Port: 80}, Path: "/"},
		} {
			Expect(c.Create(ctx, &shardgatev1alpha1.LeaseHost{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tenant}, Spec: spec})).To(Succeed())
		}
		Expect(c.Create(ctx, &shardgatev1alpha1.LeasedIP{
			ObjectMeta: metav1.ObjectMeta{Name: "ip", Namespace: tenant},
			Spec: shardgatev1alpha1.LeasedIPSpec{
				Lease: lease, Endpoint: "web", Service: "web", Port: 80, ExternalPort: 8080, Protocol: "TCP",
			},
		})).To(Succeed())
		parent := []gatewayv1.ParentReference{{Namespace: new(gatewayv1.Namespace(infraN)), Name: "shard-a"}}
		backend := gatewayv1.BackendObjectReference{Name: "web", Port: new(gatewayv1.PortNumber(80))}
		Expect(c.Create(ctx, &gatewayv1.GRPCRoute{
			ObjectMeta: metav1.ObjectMeta{Name: "grpc", Namespace: tenant},
			Spec: gatewayv1.GRPCRouteSpec{
				CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: parent},
				Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname("grpc." + domain)},
				Rules:           []gatewayv1.GRPCRouteRule{{BackendRefs: []gatewayv1.GRPCBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: backend}}}}},
			},
		})).To(Succeed())
		Expect(c.Create(ctx, &gatewayv1.TLSRoute{
			ObjectMeta: metav1.ObjectMeta{Name: "tls", Namespace: tenant},
			Spec: gatewayv1.TLSRouteSpec{
				CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: parent},
				Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname("tls." + domain)},
				Rules:           []gatewayv1.TLSRouteRule{{BackendRefs: []gatewayv1.BackendRef{{BackendObjectReference: backend}}}},
			},
		})).To(Succeed())
		// A tenant's TCPRoute naming the shard: refused there (a shard
		// serves no tenant's TCPRoute), its status is written all the same.
		Expect(c.Create(ctx, &gatewayv1.TCPRoute{
			ObjectMeta: metav1.ObjectMeta{Name: "tcp", Namespace: tenant},
			Spec: gatewayv1.TCPRouteSpec{
				CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: parent},
				Rules:           []gatewayv1.TCPRouteRule{{BackendRefs: []gatewayv1.BackendRef{{BackendObjectReference: backend}}}},
			},
		})).To(Succeed())
		Expect(c.Create(ctx, &gatewayv1.BackendTLSPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "web-tls", Namespace: tenant},
			Spec: gatewayv1.BackendTLSPolicySpec{
				TargetRefs: []gatewayv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gatewayv1.LocalPolicyTargetReference{Kind: "Service", Name: "web"}}},
				Validation: gatewayv1.BackendTLSPolicyValidation{WellKnownCACertificates: new(gatewayv1.WellKnownCACertificatesSystem), Hostname: "web.example.com"},
			},
		})).To(Succeed())

		// A tenant's ListenerSet naming the shard, which does not allow
		// ListenerSets: its status (NotAllowed) is written all the same.
		Expect(c.Create(ctx, &gatewayv1.ListenerSet{
			ObjectMeta: metav1.ObjectMeta{Name: "ls", Namespace: tenant},
			Spec: gatewayv1.ListenerSetSpec{
				ParentRef: gatewayv1.ParentGatewayReference{Namespace: new(gatewayv1.Namespace(infraN)), Name: "shard-a"},
				Listeners: []gatewayv1.ListenerEntry{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80,
					Hostname: new(gatewayv1.Hostname("ls." + domain))}},
			},
		})).To(Succeed())

		By("the controller writes LeaseHost status and generates the HTTPRoute")
		var route string
		eventually(func(g Gomega) {
			var lh shardgatev1alpha1.LeaseHost
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "app"}, &lh)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(lh.Status.Conditions, shardgatev1alpha1.ConditionReserved)).To(BeTrue(), "%+v", lh.Status)
			g.Expect(lh.Status.Shards).To(HaveLen(1))
			g.Expect(lh.Status.Shards[0].Host).To(Equal("app." + domain))
			g.Expect(lh.Status.Route).NotTo(BeEmpty())
			route = lh.Status.Route
		}).Should(Succeed())
		eventually(func(g Gomega) {
			var lh shardgatev1alpha1.LeaseHost
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "blocked"}, &lh)).To(Succeed())
			cond := meta.FindStatusCondition(lh.Status.Conditions, shardgatev1alpha1.ConditionReserved)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(shardgatev1alpha1.ReasonBlocked))
		}).Should(Succeed())
		eventually(func(g Gomega) {
			var r gatewayv1.HTTPRoute
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: tenant, Name: route}, &r)).To(Succeed())
			g.Expect(r.Spec.Hostnames).To(ConsistOf(gatewayv1.Hostname("app." + domain)))
			g.Expect(ourParent(r.Status.Parents)).To(BeTrue(), "HTTPRoute status: %+v", r.Status)
		}).Should(Succeed())

		By("automatic HTTPS: a held name's Certificate written, updated with the shard's issuer, then deleted with its Secret")
		certKey := client.ObjectKey{Namespace: tenant, Name: autotls.SecretName("shop.example.org")}
		getCert := func(g Gomega) *unstructured.Unstructured {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(autotls.CertificateGVK)
			g.Expect(c.Get(ctx, certKey, u)).To(Succeed())
			return u
		}
		Expect(c.Create(ctx, &shardgatev1alpha1.LeaseHost{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: tenant},
			Spec: shardgatev1alpha1.LeaseHostSpec{Lease: lease, Hostname: "shop.example.org", Service: shardgatev1alpha1.ServiceRef{Name: "web", Port: 80}, Path: "/"}})).To(Succeed())
		eventually(func(g Gomega) {
			name, _, _ := unstructured.NestedString(getCert(g).Object, "spec", "issuerRef", "name")
			g.Expect(name).To(Equal("le"))
		}).Should(Succeed())
		// The Secret cert-manager would store the certificate in.
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: certKey.Name,
			Labels: map[string]string{autotls.LabelManaged: "true"}}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: nil, corev1.TLSPrivateKeyKey: nil}})).To(Succeed())
		shardParams := &shardgatev1alpha1.GatewayParameters{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: infraN, Name: "shard-a"}, shardParams)).To(Succeed())
		shardParams.Spec.Shard.TLS.IssuerRef.Name = "le-2"
		Expect(c.Update(ctx, shardParams)).To(Succeed())
		eventually(func(g Gomega) {
			name, _, _ := unstructured.NestedString(getCert(g).Object, "spec", "issuerRef", "name")
			g.Expect(name).To(Equal("le-2"))
		}).Should(Succeed())
		Expect(c.Delete(ctx, &shardgatev1alpha1.LeaseHost{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "shop"}})).To(Succeed())
		eventually(func(g Gomega) {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(autotls.CertificateGVK)
			g.Expect(apierrors.IsNotFound(c.Get(ctx, certKey, u))).To(BeTrue())
			g.Expect(apierrors.IsNotFound(c.Get(ctx, certKey, &corev1.Secret{}))).To(BeTrue())
		}).Should(Succeed())

		By("the status writer writes GatewayClass, Gateway, ListenerSet, route and BackendTLSPolicy status")
		eventually(func(g Gomega) {
			var gc gatewayv1.GatewayClass
			g.Expect(c.Get(ctx, client.ObjectKey{Name: "shardgate"}, &gc)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(gc.Status.Conditions, string(gatewayv1.GatewayClassConditionStatusAccepted))).To(BeTrue(), "%+v", gc.Status)
			var got gatewayv1.Gateway
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(gw), &got)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, string(gatewayv1.GatewayConditionAccepted))).To(BeTrue(), "%+v", got.Status)
			var gr gatewayv1.GRPCRoute
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "grpc"}, &gr)).To(Succeed())
			g.Expect(ourParent(gr.Status.Parents)).To(BeTrue(), "GRPCRoute status: %+v", gr.Status)
			var tr gatewayv1.TLSRoute
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "tls"}, &tr)).To(Succeed())
			g.Expect(ourParent(tr.Status.Parents)).To(BeTrue(), "TLSRoute status: %+v", tr.Status)
			var tcp gatewayv1.TCPRoute
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "tcp"}, &tcp)).To(Succeed())
			g.Expect(ourParent(tcp.Status.Parents)).To(BeTrue(), "TCPRoute status: %+v", tcp.Status)
			var btp gatewayv1.BackendTLSPolicy
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "web-tls"}, &btp)).To(Succeed())
			g.Expect(btp.Status.Ancestors).NotTo(BeEmpty(), "BackendTLSPolicy status: %+v", btp.Status)
			var ls gatewayv1.ListenerSet
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "ls"}, &ls)).To(Succeed())
			accepted := meta.FindStatusCondition(ls.Status.Conditions, string(gatewayv1.ListenerSetConditionAccepted))
			g.Expect(accepted).NotTo(BeNil())
			g.Expect(accepted.Reason).To(Equal(string(gatewayv1.ListenerSetReasonNotAllowed)), "ListenerSet status: %+v", ls.Status)
			var p shardgatev1alpha1.GatewayParameters
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: infraN, Name: "shard-a"}, &p)).To(Succeed())
			g.Expect(meta.FindStatusCondition(p.Status.Conditions, shardgatev1alpha1.ConditionValid)).NotTo(BeNil())
		}).Should(Succeed())

		By("shardgate config dump with a token of the chart's shardgate-config-reader ServiceAccount, as the CLI's help says")
		find[corev1.ServiceAccount](GinkgoT(), rel, "ServiceAccount", "shardgate-config-reader")
		readerToken, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "shardgate-config-reader", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		dump := func(token string) (string, error) {
			var out strings.Builder
			err := configdump.Execute(ctx, configdump.Config{
				Gateway: infraN + "/" + gw.Name, URL: fmt.Sprintf("https://127.0.0.1:%d", metricsPort),
				Token: token, InsecureSkipTLSVerify: true, Output: "json", RequestTimeout: 10 * time.Second,
			}, &out)
			return out.String(), err
		}
		eventually(func(g Gomega) {
			out, err := dump(readerToken.Status.Token)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out).To(ContainSubstring(domain))
		}).Should(Succeed())
		// The metrics reader may scrape, not read the config.
		_, err = dump(tr.Status.Token)
		Expect(err).To(MatchError(ContainSubstring("403")))

		By("the infra controller provisions the Gateway's Envoy objects")
		eventually(func(g Gomega) {
			key := client.ObjectKey{Namespace: infraN, Name: infra.Name(gw.Name)}
			g.Expect(c.Get(ctx, key, &appsv1.Deployment{})).To(Succeed())
			g.Expect(c.Get(ctx, key, &corev1.Service{})).To(Succeed())
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: infraN, Name: infra.ClientCertName(gw.Name)}, &corev1.Secret{})).To(Succeed())
		}).Should(Succeed())

		By("a DaemonSet and a PodDisruptionBudget for the Gateway (spec.envoy), then the budget removed")
		var params shardgatev1alpha1.GatewayParameters
		Expect(c.Get(ctx, client.ObjectKey{Namespace: infraN, Name: "shard-a"}, &params)).To(Succeed())
		params.Spec.Envoy = &shardgatev1alpha1.EnvoySpec{
			Kind: shardgatev1alpha1.EnvoyKindDaemonSet, HostPorts: true,
			PodDisruptionBudget: &shardgatev1alpha1.EnvoyPodDisruptionBudget{MaxUnavailable: new(intstr.FromInt32(1))},
		}
		Expect(c.Update(ctx, &params)).To(Succeed())
		envoyKey := client.ObjectKey{Namespace: infraN, Name: infra.Name(gw.Name)}
		eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, envoyKey, &appsv1.DaemonSet{})).To(Succeed())
			g.Expect(c.Get(ctx, envoyKey, &policyv1.PodDisruptionBudget{})).To(Succeed())
		}).Should(Succeed())
		Expect(c.Get(ctx, client.ObjectKey{Namespace: infraN, Name: "shard-a"}, &params)).To(Succeed())
		params.Spec.Envoy.PodDisruptionBudget = nil
		Expect(c.Update(ctx, &params)).To(Succeed())
		eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(c.Get(ctx, envoyKey, &policyv1.PodDisruptionBudget{}))).To(BeTrue())
		}).Should(Succeed())

		By("the LeasedIP controller applies the LoadBalancer Service and writes status")
		var ipService string
		eventually(func(g Gomega) {
			var lip shardgatev1alpha1.LeasedIP
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "ip"}, &lip)).To(Succeed())
			g.Expect(meta.FindStatusCondition(lip.Status.Conditions, shardgatev1alpha1.ConditionAllocated)).NotTo(BeNil())
			g.Expect(lip.Status.Service).NotTo(BeEmpty())
			ipService = lip.Status.Service
			var svc corev1.Service
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: tenant, Name: ipService}, &svc)).To(Succeed())
			g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeLoadBalancer))
		}).Should(Succeed())

		By("events: the refused LeaseHost (events.k8s.io) and leader election (core, release namespace)")
		eventually(func(g Gomega) {
			var evs eventsv1.EventList
			g.Expect(c.List(ctx, &evs, client.InNamespace(tenant))).To(Succeed())
			var blocked bool
			for _, e := range evs.Items {
				blocked = blocked || (e.Regarding.Name == "blocked" && e.Reason == shardgatev1alpha1.ReasonBlocked)
			}
			g.Expect(blocked).To(BeTrue())
			var core corev1.EventList
			g.Expect(c.List(ctx, &core, client.InNamespace(ns))).To(Succeed())
			g.Expect(core.Items).NotTo(BeEmpty())
		}).Should(Succeed())

		By("deletes: a LeaseHost's route and a LeasedIP's Service go with them")
		Expect(c.Delete(ctx, &shardgatev1alpha1.LeaseHost{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "app"}})).To(Succeed())
		Expect(c.Delete(ctx, &shardgatev1alpha1.LeasedIP{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "ip"}})).To(Succeed())
		eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: tenant, Name: route}, &gatewayv1.HTTPRoute{}))).To(BeTrue())
			g.Expect(apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: tenant, Name: ipService}, &corev1.Service{}))).To(BeTrue())
		}).Should(Succeed())

		// Two lease renewals (so renewing is among the requests checked
		// below), then a clean stop (which releases the Lease).
		renewTime := func(g Gomega) time.Time {
			var lease coordinationv1.Lease
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: config.DefaultLeaderElectionID}, &lease)).To(Succeed())
			g.Expect(lease.Spec.RenewTime).NotTo(BeNil())
			return lease.Spec.RenewTime.Time
		}
		for range 2 {
			last := renewTime(Default)
			eventually(func(g Gomega) { g.Expect(renewTime(g)).To(BeTemporally(">", last)) }).Should(Succeed())
		}
		stop()

		By("no request was forbidden")
		Expect(logs.matching("forbidden")).To(BeEmpty(), "the controller hit RBAC denials; extend templates/rbac.yaml")
		Expect(reqs.denied()).To(BeEmpty(), "requests refused with 403")

		By("every request is allowed by the chart's rules, and every granted verb was used")
		rules := roleRules(GinkgoT(), rel)
		used := reqs.used()
		for _, u := range used.UnsortedList() {
			Expect(allowedBy(rules, u)).To(BeTrue(), "request %s is not covered by the chart's rules", u)
		}
		var unused []string
		for _, r := range rules {
			if r.namespace == ns && isShardRule(r.Resources) {
				// The release namespace may hold shards too, so it gets the
				// shard Role; this run's shard is in infraN, whose Role the
				// same rules are checked on.
				GinkgoWriter.Printf("granted, not exercised in this run: the shard Role in the release namespace %s (no shard there)\n", ns)
				continue
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						k := grantKey{Group: g, Resource: res, Verb: v, Namespaced: r.namespace != ""}
						if usedBy(used, k, r) {
							continue
						}
						if reason, ok := conditionalGrants[k]; ok {
							GinkgoWriter.Printf("granted, not exercised in this run: %s (%s)\n", k, reason)
							continue
						}
						unused = append(unused, k.String())
					}
				}
			}
		}
		Expect(unused).To(BeEmpty(), "granted but never used by the controller: remove them from templates/rbac.yaml, or exercise them here")
	})
})

func ourParent(ps []gatewayv1.RouteParentStatus) bool {
	for _, p := range ps {
		if string(p.ControllerName) == shardgatev1alpha1.ControllerName && len(p.Conditions) > 0 {
			return true
		}
	}
	return false
}

// grantKey is one verb on one resource of one rule.
type grantKey struct {
	Group, Resource, Verb string
	Namespaced            bool // granted by a Role (the release namespace's or a shard namespace's)
}

func (k grantKey) String() string {
	scope := "cluster"
	if k.Namespaced {
		scope = "a Role's namespace"
	}
	g := k.Group
	if g == "" {
		g = "core"
	}
	return fmt.Sprintf("%s %s/%s (%s)", k.Verb, g, k.Resource, scope)
}

// conditionalGrants are granted verbs a short run need not exercise, each
// with the reason it is needed. Everything else granted must be used.
var conditionalGrants = map[grantKey]string{
	{Group: "shardgate.io", Resource: "leasehosts/finalizers", Verb: "update"}:            "blockOwnerDeletion on generated HTTPRoutes, checked only by the OwnerReferencesPermissionEnforcement admission plugin",
	{Group: "shardgate.io", Resource: "leasedips/finalizers", Verb: "update"}:             "blockOwnerDeletion on LeasedIP Services, OwnerReferencesPermissionEnforcement",
	{Group: "gateway.networking.k8s.io", Resource: "gateways/finalizers", Verb: "update"}: "blockOwnerDeletion on Envoy objects, OwnerReferencesPermissionEnforcement",
	{Group: "apps", Resource: "deployments", Verb: "delete", Namespaced: true}:            "switching spec.envoy.kind once the DaemonSet has an available pod, and replacing a Deployment whose immutable selector its pods no longer match; no pod runs on this apiserver (the controllers' cluster-mode specs exercise it)",
	{Group: "apps", Resource: "daemonsets", Verb: "delete", Namespaced: true}:             "switching spec.envoy.kind back once the Deployment has an available pod; no pod runs on this apiserver (the controllers' cluster-mode specs exercise it)",
	{Group: "gateway.networking.k8s.io", Resource: "gatewayclasses", Verb: "get"}:         "status writer re-read after a conflict or cache lag (APIReader)",
	{Group: "gateway.networking.k8s.io", Resource: "gateways", Verb: "get"}:               "status writer re-read after a conflict or cache lag (APIReader)",
	{Group: "gateway.networking.k8s.io", Resource: "httproutes", Verb: "get"}:             "status writer re-read after a conflict or cache lag (APIReader)",
	{Group: "gateway.networking.k8s.io", Resource: "grpcroutes", Verb: "get"}:             "status writer re-read after a conflict or cache lag (APIReader)",
	{Group: "gateway.networking.k8s.io", Resource: "tlsroutes", Verb: "get"}:              "status writer re-read after a conflict or cache lag (APIReader)",
	{Group: "gateway.networking.k8s.io", Resource: "tcproutes", Verb: "get"}:              "status writer re-read after a conflict or cache lag (APIReader)",
	{Group: "gateway.networking.k8s.io", Resource: "backendtlspolicies", Verb: "get"}:     "status writer re-read after a conflict or cache lag (APIReader)",
	{Group: "gateway.networking.k8s.io", Resource: "listenersets", Verb: "get"}:           "status writer re-read after a conflict or cache lag (APIReader)",
	{Group: "shardgate.io", Resource: "leasehosts", Verb: "get"}:                          "status writer re-read after a conflict (APIReader)",
	{Group: "shardgate.io", Resource: "gatewayparameters", Verb: "get"}:                   "status writer re-read after a conflict (APIReader)",
	{Group: "events.k8s.io", Resource: "events", Verb: "patch"}:                           "the event broadcaster patches an Event when it repeats",
	{Group: "", Resource: "events", Verb: "patch", Namespaced: true}:                      "the leader-election event recorder patches an Event when it repeats",
	{Group: "", Resource: "secrets", Verb: "delete", Namespaced: true}:                    "a shard namespace marked as a tenant's later (controllers/infra.go deprovision)",
	{Group: "", Resource: "serviceaccounts", Verb: "delete", Namespaced: true}:            "a shard namespace marked as a tenant's later (controllers/infra.go deprovision)",
	{Group: "", Resource: "configmaps", Verb: "delete", Namespaced: true}:                 "a shard namespace marked as a tenant's later (controllers/infra.go deprovision)",
	{Group: "apps", Resource: "deployments", Verb: "delete", Namespaced: true}:            "a shard namespace marked as a tenant's later (controllers/infra.go deprovision)",
}

// usedBy: some observed request exercised grant k of rule r.
func usedBy(used sets.Set[observed], k grantKey, r scopedRule) bool {
	for u := range used {
		if u.Group != k.Group || u.resource() != k.Resource {
			continue
		}
		if k.Namespaced && u.Namespace != r.namespace {
			continue
		}
		if len(r.ResourceNames) > 0 && !slices.Contains(r.ResourceNames, u.Name) {
			continue
		}
		if u.Verb == k.Verb || (k.Verb == "create" && u.Verb == "patch" && u.Created) ||
			// client-go's reflector lists through a watch with
			// sendInitialEvents=true (WatchListClient) and falls back to a
			// LIST where the apiserver does not stream (before 1.32, or the
			// feature off): the streaming watch stands for the list.
			(k.Verb == "list" && u.Verb == "watch" && u.InitialEvents) {
			return true
		}
	}
	return false
}

// allowedBy evaluates the chart's rules for one request, as RBAC does.
func allowedBy(rules []scopedRule, u observed) bool {
	verbs := []string{u.Verb}
	if u.Created { // an apply that created the object needs create too
		verbs = append(verbs, "create")
	}
	for _, v := range verbs {
		ok := false
		for _, r := range rules {
			if r.namespace != "" && r.namespace != u.Namespace {
				continue
			}
			if slices.Contains(r.APIGroups, u.Group) && slices.Contains(r.Resources, u.resource()) && slices.Contains(r.Verbs, v) &&
				(len(r.ResourceNames) == 0 || (u.Name != "" && slices.Contains(r.ResourceNames, u.Name))) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// observed is one API request the controller made, as RBAC sees it.
type observed struct {
	Verb, Group, Resource, Subresource, Namespace, Name string
	// Created: an apply (PATCH) answered 201, which RBAC also checks as create.
	Created bool
	// InitialEvents: a watch with sendInitialEvents=true (a streaming list).
	InitialEvents bool
	Status        int
}

func (o observed) resource() string {
	if o.Subresource != "" {
		return o.Resource + "/" + o.Subresource
	}
	return o.Resource
}

func (o observed) String() string {
	g := o.Group
	if g == "" {
		g = "core"
	}
	s := fmt.Sprintf("%s %s/%s", o.Verb, g, o.resource())
	if o.Namespace != "" {
		s += " in " + o.Namespace
	}
	if o.Name != "" {
		s += " name=" + o.Name
	}
	if o.Created {
		s += " (created)"
	}
	return s
}

// requestRecorder sees every request of the controller's rest.Config (a
// client-side audit log).
type requestRecorder struct {
	mu   sync.Mutex
	reqs []observed
}

var requestInfo = &request.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

func (r *requestRecorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		info, ierr := requestInfo.NewRequestInfo(req)
		if ierr != nil || !info.IsResourceRequest {
			return resp, err
		}
		o := observed{Verb: info.Verb, Group: info.APIGroup, Resource: info.Resource, Subresource: info.Subresource, Namespace: info.Namespace, Name: info.Name,
			InitialEvents: info.Verb == "watch" && req.URL.Query().Get("sendInitialEvents") == "true"}
		if resp != nil {
			o.Status = resp.StatusCode
			o.Created = info.Verb == "patch" && resp.StatusCode == http.StatusCreated
		}
		r.mu.Lock()
		r.reqs = append(r.reqs, o)
		r.mu.Unlock()
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (r *requestRecorder) reset() {
	r.mu.Lock()
	r.reqs = nil
	r.mu.Unlock()
}

// used is the set of distinct requests that were not refused.
func (r *requestRecorder) used() sets.Set[observed] {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := sets.New[observed]()
	for _, o := range r.reqs {
		if o.Status == http.StatusForbidden {
			continue
		}
		o.Status = 0
		out.Insert(o)
	}
	return out
}

func (r *requestRecorder) denied() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, o := range r.reqs {
		if o.Status == http.StatusForbidden {
			out = append(out, o.String())
		}
	}
	return out
}

// logRecorder keeps every log line of the controller (and of client-go).
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (l *logRecorder) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		line := prefix + " " + args
		l.mu.Lock()
		l.lines = append(l.lines, line)
		l.mu.Unlock()
		if os.Getenv("CHART_TEST_LOGS") != "" {
			fmt.Fprintln(GinkgoWriter, line)
		}
	}, funcr.Options{Verbosity: 4})
}

func (l *logRecorder) matching(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(strings.ToLower(line), s) {
			out = append(out, line)
		}
	}
	return out
}
