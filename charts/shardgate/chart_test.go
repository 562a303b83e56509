package shardgate_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/infra"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/internal/version"
)

// kubeVersion is the cluster version the chart is rendered for (the
// harness's kube-apiserver).
const kubeVersion = "v1.37.2"

// tb is what the helpers need of *testing.T and of GinkgoT().
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
}

// release is one rendering of the chart.
type release struct {
	name, namespace string
	values          map[string]any
	// objects are the rendered templates, in Helm's install order.
	objects []*unstructured.Unstructured
	// crds are the CRDs Helm would install first (the chart's crds/ and
	// those of enabled subcharts).
	crds  []*unstructured.Unstructured
	notes string
}

// render renders the chart in this directory as `helm install` does: the
// values coalesced with values.yaml, disabled subcharts removed, the
// templates rendered, the CRD files collected.
func render(name, namespace string, values map[string]any) (*release, error) {
	chrt, err := loader.Load(".")
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		return nil, err
	}
	caps.KubeVersion = *kv
	if !chartutil.IsCompatibleRange(chrt.Metadata.KubeVersion, kubeVersion) {
		return nil, fmt.Errorf("chart kubeVersion %q excludes %s", chrt.Metadata.KubeVersion, kubeVersion)
	}
	if values == nil {
		values = map[string]any{}
	}
	if err := chartutil.ProcessDependenciesWithMerge(chrt, values); err != nil {
		return nil, fmt.Errorf("dependencies: %w", err)
	}
	vals, err := chartutil.ToRenderValues(chrt, values, chartutil.ReleaseOptions{
		Name: name, Namespace: namespace, Revision: 1, IsInstall: true,
	}, caps)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	files, err := engine.Render(chrt, vals)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	rel := &release{name: name, namespace: namespace, values: values}
	var manifests []string
	for path, content := range files {
		switch base := filepath.Base(path); {
		case base == "NOTES.txt":
			if !strings.Contains(path, "/charts/") {
				rel.notes = content
			}
		case strings.HasPrefix(base, "_"):
		default:
			for _, doc := range releaseutil.SplitManifests(content) {
				manifests = append(manifests, doc)
			}
		}
	}
	for _, doc := range manifests {
		u, err := decode([]byte(doc))
		if err != nil {
			return nil, err
		}
		if u != nil {
			rel.objects = append(rel.objects, u)
		}
	}
	sortInstallOrder(rel.objects)
	for _, crd := range chrt.CRDObjects() {
		for _, doc := range releaseutil.SplitManifests(string(crd.File.Data)) {
			u, err := decode([]byte(doc))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", crd.Filename, err)
			}
			if u != nil {
				rel.crds = append(rel.crds, u)
			}
		}
	}
	return rel, nil
}

func decode(doc []byte) (*unstructured.Unstructured, error) {
	var m map[string]any
	if err := yaml.UnmarshalStrict(doc, &m); err != nil {
		return nil, fmt.Errorf("rendered YAML: %w\n%s", err, doc)
	}
	if len(m) == 0 {
		return nil, nil
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// sortInstallOrder orders objects as Helm installs them (releaseutil's
// InstallOrder by kind, then name).
func sortInstallOrder(objs []*unstructured.Unstructured) {
	rank := map[string]int{}
	for i, k := range releaseutil.InstallOrder {
		rank[k] = i
	}
	r := func(k string) int {
		if v, ok := rank[k]; ok {
			return v
		}
		return len(rank)
	}
	sort.SliceStable(objs, func(i, j int) bool {
		if a, b := r(objs[i].GetKind()), r(objs[j].GetKind()); a != b {
			return a < b
		}
		return objs[i].GetName() < objs[j].GetName()
	})
}

// find returns the one object of kind and name, converted to T.
func find[T any](t tb, rel *release, kind, name string) *T {
	t.Helper()
	for _, u := range rel.objects {
		if u.GetKind() == kind && u.GetName() == name {
			out := new(T)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
				t.Fatalf("%s %s: %v", kind, name, err)
			}
			return out
		}
	}
	t.Fatalf("no %s %s rendered; have %v", kind, name, names(rel.objects))
	return nil
}

func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, u := range objs {
		out = append(out, u.GetKind()+"/"+u.GetName())
	}
	return out
}

func kinds(objs []*unstructured.Unstructured) map[string]int {
	out := map[string]int{}
	for _, u := range objs {
		out[u.GetKind()]++
	}
	return out
}

func mustRender(t tb, name, namespace string, values map[string]any) *release {
	t.Helper()
	rel, err := render(name, namespace, values)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// controllerConfig parses the rendered config file with the controller's
// own strict parser.
func controllerConfig(t tb, rel *release) (config.Config, string) {
	t.Helper()
	cm := find[corev1.ConfigMap](t, rel, "ConfigMap", fullname(rel)+"-config")
	data := cm.Data["config.yaml"]
	cfg, err := config.Parse([]byte(data))
	if err != nil {
		t.Fatalf("the rendered config.yaml is refused by internal/config: %v\n%s", err, data)
	}
	return cfg, data
}

func TestRenderDefaults(t *testing.T) {
	g := NewWithT(t)
	rel := mustRender(t, "shardgate", "shardgate-system", nil)

	g.Expect(kinds(rel.objects)).To(Equal(map[string]int{
		"ServiceAccount": 1, "ConfigMap": 1, "ClusterRole": 2, "ClusterRoleBinding": 1,
		"Role": 1, "RoleBinding": 1, "Service": 2, "Deployment": 1, "PodDisruptionBudget": 1,
		"GatewayClass": 1,
	}), "rendered: %v", names(rel.objects))
	for _, u := range rel.objects {
		g.Expect(u.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/instance", "shardgate"), u.GetKind())
		if u.GetKind() != "ClusterRole" && u.GetKind() != "ClusterRoleBinding" && u.GetKind() != "GatewayClass" {
			g.Expect(u.GetNamespace()).To(Equal("shardgate-system"), u.GetKind()+"/"+u.GetName())
		}
	}

	// CRDs: ours only; the Gateway API subchart is off by default.
	var crdNames []string
	for _, c := range rel.crds {
		g.Expect(c.GetKind()).To(Equal("CustomResourceDefinition"))
		crdNames = append(crdNames, c.GetName())
	}
	g.Expect(crdNames).To(ConsistOf("gatewayparameters.shardgate.io", "leasedips.shardgate.io", "leasehosts.shardgate.io"))

	// The Deployment.
	d := find[appsv1.Deployment](t, rel, "Deployment", "shardgate")
	g.Expect(*d.Spec.Replicas).To(Equal(int32(2)))
	pod := d.Spec.Template.Spec
	g.Expect(pod.ServiceAccountName).To(Equal("shardgate"))
	g.Expect(pod.Containers).To(HaveLen(1))
	c := pod.Containers[0]
	g.Expect(c.Image).To(Equal("ghcr.io/shardgate/shardgate:" + appVersion(t)))
	g.Expect(c.Args).To(ContainElements("controller", "--config=/etc/shardgate/config.yaml", "--leader-elect"))
	for _, a := range c.Args {
		g.Expect(a).NotTo(HavePrefix("--kubeconfig"), "in-cluster credentials only")
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	g.Expect(ports).To(Equal(map[string]int32{"metrics": 8080, "health": 8081, "xds": 18000}))
	g.Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
	g.Expect(c.LivenessProbe.HTTPGet.Port).To(Equal(intstr.FromString("health")))
	g.Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
	g.Expect(c.ReadinessProbe.HTTPGet.Port).To(Equal(intstr.FromString("health")))
	g.Expect(c.Resources.Requests).To(HaveKey(corev1.ResourceCPU))
	g.Expect(c.Resources.Requests).To(HaveKey(corev1.ResourceMemory))
	g.Expect(c.Resources.Limits).To(HaveKey(corev1.ResourceMemory))
	sc := c.SecurityContext
	g.Expect(*sc.RunAsNonRoot).To(BeTrue())
	g.Expect(*sc.ReadOnlyRootFilesystem).To(BeTrue())
	g.Expect(*sc.AllowPrivilegeEscalation).To(BeFalse())
	g.Expect(sc.Capabilities.Drop).To(Equal([]corev1.Capability{"ALL"}))
	g.Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
	g.Expect(pod.TopologySpreadConstraints).NotTo(BeEmpty())
	g.Expect(pod.Affinity.PodAntiAffinity).NotTo(BeNil())
	var mountsConfig bool
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/etc/shardgate" {
			mountsConfig = true
			g.Expect(m.SubPath).To(BeEmpty(), "a subPath mount never sees ConfigMap updates: no live block-list reload")
		}
	}
	g.Expect(mountsConfig).To(BeTrue())

	pdb := find[policyv1.PodDisruptionBudget](t, rel, "PodDisruptionBudget", "shardgate")
	g.Expect(pdb.Spec.MinAvailable.IntValue()).To(Equal(1))
	g.Expect(pdb.Spec.Selector.MatchLabels).To(Equal(d.Spec.Selector.MatchLabels))

	// The config file: valid for the controller, leader election in the
	// release namespace, xDS on the xds port.
	cfg, _ := controllerConfig(t, rel)
	g.Expect(cfg.ControllerName).To(Equal(shardgatev1alpha1.ControllerName))
	g.Expect(cfg.BlockedHostnames).To(BeEmpty())
	g.Expect(cfg.LeaderElection.Enabled).To(BeTrue())
	g.Expect(cfg.LeaderElection.Namespace).To(Equal("shardgate-system"))
	g.Expect(cfg.XDS.Address).To(Equal(":18000"))
	g.Expect(cfg.MetricsAddress).To(Equal(":8080"))
	g.Expect(cfg.HealthAddress).To(Equal(":8081"))

	// The xDS Service: the exact name and port the Envoy bootstrap dials.
	xds := find[corev1.Service](t, rel, "Service", "shardgate-xds")
	opts := infra.ControllerOptions(cfg.Envoy.Image, cfg.LeaderElection.Namespace, cfg.XDS.Address)
	g.Expect(opts.XDSHost).To(Equal("shardgate-xds.shardgate-system.svc"))
	g.Expect(xds.Spec.Ports).To(HaveLen(1))
	g.Expect(uint32(xds.Spec.Ports[0].Port)).To(Equal(opts.XDSPort))
	g.Expect(xds.Spec.Ports[0].TargetPort).To(Equal(intstr.FromString("xds")))
	g.Expect(xds.Spec.Selector).To(Equal(d.Spec.Selector.MatchLabels))
	metrics := find[corev1.Service](t, rel, "Service", "shardgate-metrics")
	g.Expect(metrics.Spec.Ports[0].Port).To(Equal(int32(8080)))

	gc := find[gatewayv1.GatewayClass](t, rel, "GatewayClass", "shardgate")
	g.Expect(string(gc.Spec.ControllerName)).To(Equal("shardgate.io/gateway-controller"))

	checkNoWildcards(t, rel)
	g.Expect(rel.notes).To(ContainSubstring("shardgate-xds.shardgate-system.svc:18000"))
}

func TestRenderNonDefaults(t *testing.T) {
	g := NewWithT(t)
	values := map[string]any{
		"replicaCount":   3,
		"controllerName": "example.com/edge",
		"image":          map[string]any{"repository": "registry.example/shardgate", "tag": "v9.9.9"},
		"gatewayClass":   map[string]any{"name": "edge"},
		"gatewayAPI":     map[string]any{"installCRDs": true},
		"config": map[string]any{
			"blockedHostnames":         []any{"Example.COM", ".internal.example"},
			"namespaceOwnerAnnotation": "akash.network/owner",
			"leaderElection":           map[string]any{"id": "edge-leader"},
		},
		"ports":               map[string]any{"xds": 19000},
		"metrics":             map[string]any{"serviceMonitor": map[string]any{"enabled": false}},
		"podDisruptionBudget": map[string]any{"minAvailable": 2},
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "250m", "memory": "256Mi"},
			"limits":   map[string]any{"memory": "1Gi"},
		},
	}
	rel := mustRender(t, "edge", "edge-system", values)
	g.Expect(kinds(rel.objects)).NotTo(HaveKey("ServiceMonitor"))

	d := find[appsv1.Deployment](t, rel, "Deployment", "edge-shardgate")
	g.Expect(*d.Spec.Replicas).To(Equal(int32(3)))
	c := d.Spec.Template.Spec.Containers[0]
	g.Expect(c.Image).To(Equal("registry.example/shardgate:v9.9.9"))
	g.Expect(c.Resources.Requests.Cpu().String()).To(Equal("250m"))
	g.Expect(c.Resources.Limits.Memory().String()).To(Equal("1Gi"))
	pdb := find[policyv1.PodDisruptionBudget](t, rel, "PodDisruptionBudget", "edge-shardgate")
	g.Expect(pdb.Spec.MinAvailable.IntValue()).To(Equal(2))

	cfg, _ := controllerConfig(t, rel)
	g.Expect(cfg.ControllerName).To(Equal("example.com/edge"))
	// Normalised (lowercased, sorted) by the controller's parser.
	g.Expect(cfg.BlockedHostnames).To(Equal([]string{".internal.example", "example.com"}))
	g.Expect(cfg.NamespaceOwnerAnnotation).To(Equal("akash.network/owner"))
	g.Expect(cfg.LeaderElection.Namespace).To(Equal("edge-system"))
	g.Expect(cfg.LeaderElection.ID).To(Equal("edge-leader"))
	g.Expect(cfg.XDS.Address).To(Equal(":19000"))

	xds := find[corev1.Service](t, rel, "Service", "shardgate-xds")
	g.Expect(xds.Spec.Ports[0].Port).To(Equal(int32(19000)))
	gc := find[gatewayv1.GatewayClass](t, rel, "GatewayClass", "edge")
	g.Expect(string(gc.Spec.ControllerName)).To(Equal("example.com/edge"))

	// The Gateway API CRDs come with the subchart: the experimental channel.
	crds := map[string]string{}
	for _, u := range rel.crds {
		crds[u.GetName()] = u.GetAnnotations()["gateway.networking.k8s.io/channel"]
	}
	for _, n := range []string{"gatewayclasses", "gateways", "httproutes", "grpcroutes", "tlsroutes", "referencegrants"} {
		g.Expect(crds).To(HaveKeyWithValue(n+".gateway.networking.k8s.io", "experimental"))
	}
	g.Expect(crds).To(HaveKey("leasehosts.shardgate.io"))

	// The ServiceMonitor is rendered only when asked for.
	values["metrics"] = map[string]any{"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}}}
	rel = mustRender(t, "edge", "edge-system", values)
	sm := findUnstructured(t, rel, "ServiceMonitor", "edge-shardgate")
	g.Expect(sm.GetAPIVersion()).To(Equal("monitoring.coreos.com/v1"))
	g.Expect(sm.GetLabels()).To(HaveKeyWithValue("release", "prom"))
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	g.Expect(eps).To(HaveLen(1))
	g.Expect(eps[0]).To(HaveKeyWithValue("port", "metrics"))

	// Leader election off: the flag follows.
	rel = mustRender(t, "x", "x", map[string]any{"config": map[string]any{"leaderElection": map[string]any{"enabled": false}}})
	d = find[appsv1.Deployment](t, rel, "Deployment", "x-shardgate")
	g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--leader-elect=false"))
	// No GatewayClass when not wanted.
	rel = mustRender(t, "x", "x", map[string]any{"gatewayClass": map[string]any{"create": false}})
	g.Expect(kinds(rel.objects)).NotTo(HaveKey("GatewayClass"))
}

func findUnstructured(t tb, rel *release, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, u := range rel.objects {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	t.Fatalf("no %s %s rendered; have %v", kind, name, names(rel.objects))
	return nil
}

func appVersion(t tb) string {
	t.Helper()
	chrt, err := loader.Load(".")
	if err != nil {
		t.Fatal(err)
	}
	return chrt.Metadata.AppVersion
}

// TestChartMetadata: appVersion is the controller's default version, and
// the chart's CRD copies match their sources (`make chart-crds`).
func TestChartMetadata(t *testing.T) {
	g := NewWithT(t)
	g.Expect(appVersion(t)).To(Equal(version.Version))
	root, err := testenv.Root()
	g.Expect(err).NotTo(HaveOccurred())
	same := func(src, dst string, skip ...string) {
		want, err := filepath.Glob(filepath.Join(root, src, "*.yaml"))
		g.Expect(err).NotTo(HaveOccurred())
		want = slices.DeleteFunc(want, func(p string) bool {
			b := filepath.Base(p)
			return slices.Contains(skip, b) || !strings.Contains(b, "_")
		})
		have, err := filepath.Glob(filepath.Join(dst, "*.yaml"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(len(have)).To(Equal(len(want)), "%s vs %s: run `make chart-crds`", src, dst)
		for _, w := range want {
			a, err := os.ReadFile(w)
			g.Expect(err).NotTo(HaveOccurred())
			b, err := os.ReadFile(filepath.Join(dst, filepath.Base(w)))
			g.Expect(err).NotTo(HaveOccurred(), "run `make chart-crds`")
			g.Expect(bytes.Equal(a, b)).To(BeTrue(), "%s is stale: run `make chart-crds`", filepath.Join(dst, filepath.Base(w)))
		}
	}
	same("crds", "crds")
	if _, err := os.Stat(filepath.Join(root, "bin", "crds", "gateway-api", "experimental")); err == nil {
		same("bin/crds/gateway-api/experimental", "charts/gateway-api-crds/crds", "gateway.networking.k8s.io_vap_safeupgrades.yaml")
	}
	chrt, err := loader.Load(".")
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range chrt.Files {
		g.Expect(f.Name).NotTo(HaveSuffix(".go"), ".helmignore must keep the Go files out of the chart")
	}
}

// checkNoWildcards: no "*" in any rule of the chart's roles.
func checkNoWildcards(t tb, rel *release) {
	t.Helper()
	for _, r := range roleRules(t, rel) {
		for _, field := range [][]string{r.APIGroups, r.Resources, r.Verbs, r.ResourceNames, r.NonResourceURLs} {
			for _, v := range field {
				if strings.Contains(v, "*") {
					t.Errorf("wildcard %q in rule %+v", v, r)
				}
			}
		}
	}
}

type scopedRule struct {
	rbacv1.PolicyRule
	namespace string // "" for the ClusterRole
}

func roleRules(t tb, rel *release) []scopedRule {
	t.Helper()
	var out []scopedRule
	for _, r := range find[rbacv1.ClusterRole](t, rel, "ClusterRole", fullname(rel)).Rules {
		out = append(out, scopedRule{PolicyRule: r})
	}
	for _, r := range find[rbacv1.Role](t, rel, "Role", fullname(rel)).Rules {
		out = append(out, scopedRule{PolicyRule: r, namespace: rel.namespace})
	}
	return out
}

func fullname(rel *release) string {
	if strings.Contains(rel.name, "shardgate") {
		return rel.name
	}
	return rel.name + "-shardgate"
}

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
		env, err = testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		for _, n := range []string{ns, "sg-other", tenant, infraN} {
			Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})).To(Succeed())
		}
		rel, err = render("shardgate", ns, map[string]any{
			"config": map[string]any{"blockedHostnames": []any{".blocked.example"}},
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

		mctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- manager.Run(mctx, manager.Options{
				RestConfig:     cfg,
				ConfigPath:     path,
				LeaderElect:    new(true),
				XDSAddress:     "127.0.0.1:0",
				MetricsAddress: "0",
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
			Spec:       shardgatev1alpha1.GatewayParametersSpec{Shard: &shardgatev1alpha1.ShardSpec{Domain: domain}},
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

		By("tenant objects: a Service, LeaseHosts (one blocked by the chart's block list), a LeasedIP, a GRPCRoute and a TLSRoute")
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

		By("the status writer writes GatewayClass, Gateway and route status")
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
			var p shardgatev1alpha1.GatewayParameters
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: infraN, Name: "shard-a"}, &p)).To(Succeed())
			g.Expect(meta.FindStatusCondition(p.Status.Conditions, shardgatev1alpha1.ConditionValid)).NotTo(BeNil())
		}).Should(Succeed())

		By("the infra controller provisions the Gateway's Envoy objects")
		eventually(func(g Gomega) {
			key := client.ObjectKey{Namespace: infraN, Name: infra.Name(gw.Name)}
			g.Expect(c.Get(ctx, key, &appsv1.Deployment{})).To(Succeed())
			g.Expect(c.Get(ctx, key, &corev1.Service{})).To(Succeed())
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: infraN, Name: infra.ClientCertName(gw.Name)}, &corev1.Secret{})).To(Succeed())
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

		// A few lease renewals, then a clean stop (which releases the Lease).
		time.Sleep(2 * manager.RetryPeriod)
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
	Namespaced            bool // granted by the Role (release namespace only)
}

func (k grantKey) String() string {
	scope := "cluster"
	if k.Namespaced {
		scope = "release namespace"
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
	{Group: "gateway.networking.k8s.io", Resource: "gatewayclasses", Verb: "get"}:         "status writer re-read after a conflict or cache lag (APIReader)",
	{Group: "gateway.networking.k8s.io", Resource: "gateways", Verb: "get"}:               "status writer re-read after a conflict or cache lag (APIReader)",
	{Group: "gateway.networking.k8s.io", Resource: "httproutes", Verb: "get"}:             "status writer re-read after a conflict or cache lag (APIReader)",
	{Group: "gateway.networking.k8s.io", Resource: "grpcroutes", Verb: "get"}:             "status writer re-read after a conflict or cache lag (APIReader)",
	{Group: "gateway.networking.k8s.io", Resource: "tlsroutes", Verb: "get"}:              "status writer re-read after a conflict or cache lag (APIReader)",
	{Group: "events.k8s.io", Resource: "events", Verb: "patch"}:                           "the event broadcaster patches an Event when it repeats",
	{Group: "", Resource: "events", Verb: "patch", Namespaced: true}:                      "the leader-election event recorder patches an Event when it repeats",
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
