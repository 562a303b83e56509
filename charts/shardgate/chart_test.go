package shardgate_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/infra"
	"github.com/shardgate/shardgate/internal/testenv"
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
		// ClusterRoles: the controller's, metrics-reader, config-reader and shardgate-tenant.
		// ServiceAccounts and ClusterRoleBindings: the controller's and shardgate-config-reader's.
		"ServiceAccount": 2, "ConfigMap": 1, "ClusterRole": 4, "ClusterRoleBinding": 2,
		"Role": 2, "RoleBinding": 2, "Service": 2, "Deployment": 1, "PodDisruptionBudget": 1,
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
	g.Expect(cfg.NamespaceOwnerRequired()).To(BeTrue())
	g.Expect(cfg.ShardNamespaces).To(Equal([]string{"shardgate-system"}))
	g.Expect(cfg.Shards.TenantLimits).To(Equal(config.Default().Shards.TenantLimits))

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
			"requireNamespaceOwner":    false,
			"leaderElection":           map[string]any{"id": "edge-leader"},
			"tenantLimits":             map[string]any{"routes": 20, "rules": 200, "matches": 400, "regularExpressions": 0},
		},
		"shardNamespaces":     []any{"edge-shards"},
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
	g.Expect(cfg.NamespaceOwnerRequired()).To(BeFalse())
	g.Expect(cfg.Shards.TenantLimits).To(Equal(config.TenantLimitsConfig{Routes: 20, Rules: 200, Matches: 400,
		RegularExpressions: config.DefaultTenantRegularExpressions}))
	g.Expect(cfg.ShardNamespaces).To(Equal([]string{"edge-shards", "edge-system"}))
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
	for _, n := range []string{"gatewayclasses", "gateways", "httproutes", "grpcroutes", "tlsroutes", "tcproutes", "referencegrants"} {
		g.Expect(crds).To(HaveKeyWithValue(n+".gateway.networking.k8s.io", "experimental"))
	}
	g.Expect(crds).To(HaveKey("leasehosts.shardgate.io"))

	// The ServiceMonitor is rendered only when asked for (its TLS and
	// token: monitoring_test.go).
	values["metrics"] = map[string]any{"serviceMonitor": map[string]any{"enabled": true, "insecureSkipVerify": true, "labels": map[string]any{"release": "prom"}}}
	rel = mustRender(t, "edge", "edge-system", values)
	sm := findUnstructured(t, rel, "ServiceMonitor", "edge-shardgate")
	g.Expect(sm.GetAPIVersion()).To(Equal("monitoring.coreos.com/v1"))
	g.Expect(sm.GetLabels()).To(HaveKeyWithValue("release", "prom"))
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	g.Expect(eps).To(HaveLen(1))
	g.Expect(eps[0]).To(HaveKeyWithValue("port", "metrics"))
	// Secure metrics by default: HTTPS with a token from a Secret.
	g.Expect(eps[0]).To(HaveKeyWithValue("scheme", "https"))
	g.Expect(eps[0]).NotTo(HaveKey("bearerTokenFile"))
	g.Expect(eps[0]).To(HaveKeyWithValue("tlsConfig", map[string]any{"insecureSkipVerify": true}))
	d = find[appsv1.Deployment](t, rel, "Deployment", "edge-shardgate")
	g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--metrics-secure=true"))
	reader := findUnstructured(t, rel, "ClusterRole", "edge-shardgate-metrics-reader")
	rules, _, _ := unstructured.NestedSlice(reader.Object, "rules")
	g.Expect(rules).To(Equal([]any{map[string]any{"nonResourceURLs": []any{"/metrics"}, "verbs": []any{"get"}}}))
	values["metrics"] = map[string]any{"secure": false, "serviceMonitor": map[string]any{"enabled": true}}
	rel = mustRender(t, "edge", "edge-system", values)
	eps, _, _ = unstructured.NestedSlice(findUnstructured(t, rel, "ServiceMonitor", "edge-shardgate").Object, "spec", "endpoints")
	g.Expect(eps[0]).NotTo(HaveKey("scheme"))
	g.Expect(eps[0]).NotTo(HaveKey("authorization"))
	g.Expect(eps[0]).NotTo(HaveKey("tlsConfig"))
	g.Expect(kinds(rel.objects)).NotTo(HaveKey("Secret"), "no token Secret for plain HTTP")
	d = find[appsv1.Deployment](t, rel, "Deployment", "edge-shardgate")
	g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--metrics-secure=false"))

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

// TestChartMetadata: appVersion is a release version (the default image
// tag, which `make image` tags its image with), and the chart's CRD copies
// match their sources (`make chart-crds`).
func TestChartMetadata(t *testing.T) {
	g := NewWithT(t)
	av := appVersion(t)
	g.Expect(av).To(HavePrefix("v"), "appVersion is the image tag, vMAJOR.MINOR.PATCH")
	_, err := semver.StrictNewVersion(strings.TrimPrefix(av, "v"))
	g.Expect(err).NotTo(HaveOccurred(), "appVersion %q is not a release version", av)
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
	// Every Role: the release namespace's, and one per shard namespace.
	for _, u := range rel.objects {
		if u.GetKind() != "Role" {
			continue
		}
		var role rbacv1.Role
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, &role, true); err != nil {
			t.Fatalf("Role %s/%s: %v", u.GetNamespace(), u.GetName(), err)
		}
		for _, r := range role.Rules {
			out = append(out, scopedRule{PolicyRule: r, namespace: u.GetNamespace()})
		}
	}
	return out
}

func fullname(rel *release) string {
	if strings.Contains(rel.name, "shardgate") {
		return rel.name
	}
	return rel.name + "-shardgate"
}
