package shardgatecrds_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/releaseutil"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the chart README")

// kubeVersion is the cluster version the chart is rendered for (the
// harness's kube-apiserver).
const kubeVersion = "v1.37.2"

// tool returns bin/<name>, built by `make envtest-assets`. Without it the
// test is skipped, or fails under CI, as the harness does for its assets.
func tool(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(root(t), "bin", name)
	if _, err := os.Stat(path); err != nil {
		msg := "bin/" + name + " is missing: run `make envtest-assets` (or ./hack/envtest-assets.sh " + name + ")"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + " (CI is set, so this is a failure, not a skip)")
		}
		t.Skip(msg)
	}
	return path
}

func root(t *testing.T) string {
	t.Helper()
	r, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// template renders the chart with the real helm and returns its CRDs by
// name.
func template(t *testing.T, args ...string) (map[string]*apiextensionsv1.CustomResourceDefinition, error) {
	t.Helper()
	helm := tool(t, "helm")
	cmd := exec.Command(helm, append([]string{"template", "crds", ".", "--namespace", "shardgate-system", "--kube-version", kubeVersion}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm template %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	crds := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, doc := range releaseutil.SplitManifests(string(out)) {
		var m map[string]any
		if err := yaml.UnmarshalStrict([]byte(doc), &m); err != nil {
			t.Fatalf("rendered YAML: %v\n%.500s", err, doc)
		}
		if len(m) == 0 {
			continue
		}
		if m["kind"] != "CustomResourceDefinition" {
			t.Fatalf("rendered a %v, not a CustomResourceDefinition", m["kind"])
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(m, crd, true); err != nil {
			t.Fatalf("CRD %v: %v", (&unstructured.Unstructured{Object: m}).GetName(), err)
		}
		if _, dup := crds[crd.Name]; dup {
			t.Fatalf("CRD %s rendered twice", crd.Name)
		}
		crds[crd.Name] = crd
	}
	return crds, nil
}

func mustTemplate(t *testing.T, args ...string) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crds, err := template(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return crds
}

// Where the chart keeps each set of CRD files.
const (
	ourFiles   = "files/shardgate"
	akashFiles = "charts/akash-crds/files"
)

func gatewayAPIFiles(channel string) string { return "charts/gateway-api-crds/files/" + channel }

// source reads the CRD files of dir (in this chart).
func source(t *testing.T, dir string) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no CRD files in %s (%v): run `make chart-crds`", dir, err)
	}
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[crd.Name] = crd
	}
	return out
}

func names[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// gatewayAPI are the Gateway API CRDs of both channels.
var gatewayAPI = []string{
	"backendtlspolicies", "gatewayclasses", "gateways", "grpcroutes", "httproutes",
	"listenersets", "referencegrants", "tcproutes", "tlsroutes", "udproutes",
}

// experimentalOnly are the CRDs only the experimental channel has.
var experimentalOnly = []string{
	"xbackends.gateway.networking.x-k8s.io", "xbackendtrafficpolicies.gateway.networking.x-k8s.io",
	"xmeshes.gateway.networking.x-k8s.io",
}

var ours = []string{"gatewayparameters.shardgate.io", "leasedips.shardgate.io", "leasehosts.shardgate.io"}

var akashCRDs = []string{"manifests.akash.network", "providerhosts.akash.network", "providerleasedips.akash.network"}

func served(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			out = append(out, v.Name)
		}
	}
	return out
}

// hasRuleField says whether version v of a route CRD has spec.rules[].<field>.
func hasRuleField(crd *apiextensionsv1.CustomResourceDefinition, v, field string) bool {
	for _, ver := range crd.Spec.Versions {
		if ver.Name == v {
			rules := ver.Schema.OpenAPIV3Schema.Properties["spec"].Properties["rules"]
			_, ok := rules.Items.Schema.Properties[field]
			return ok
		}
	}
	return false
}

// withoutChartMetadata is crd without the labels and the annotation the
// chart adds.
func withoutChartMetadata(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	out := crd.DeepCopy()
	delete(out.Annotations, "helm.sh/resource-policy")
	for _, k := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "helm.sh/chart"} {
		delete(out.Labels, k)
	}
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	if len(out.Labels) == 0 {
		out.Labels = nil
	}
	return out
}

// TestChannels: each channel renders shardgate's CRDs and exactly that
// channel's Gateway API CRDs, each the source file plus the chart's labels
// and helm.sh/resource-policy: keep; the experimental one serves the alpha
// versions and the fields the standard one lacks.
func TestChannels(t *testing.T) {
	rendered := map[string]map[string]*apiextensionsv1.CustomResourceDefinition{
		"experimental": mustTemplate(t),
		"standard":     mustTemplate(t, "--set", "gatewayAPI.channel=standard"),
	}
	if d := cmp.Diff(names(rendered["experimental"]), names(mustTemplate(t, "--set", "gatewayAPI.channel=experimental"))); d != "" {
		t.Errorf("the default channel is not experimental:\n%s", d)
	}
	for channel, crds := range rendered {
		want := slices.Clone(ours)
		for _, n := range gatewayAPI {
			want = append(want, n+".gateway.networking.k8s.io")
		}
		if channel == "experimental" {
			want = append(want, experimentalOnly...)
		}
		slices.Sort(want)
		if d := cmp.Diff(want, names(crds)); d != "" {
			t.Errorf("%s: CRDs (-want +got):\n%s", channel, d)
		}
		sources := source(t, ourFiles)
		for k, v := range source(t, gatewayAPIFiles(channel)) {
			sources[k] = v
		}
		for name, crd := range crds {
			if crd.Annotations["helm.sh/resource-policy"] != "keep" {
				t.Errorf("%s: %s has no helm.sh/resource-policy: keep", channel, name)
			}
			if crd.Labels["app.kubernetes.io/name"] != "shardgate-crds" || crd.Labels["app.kubernetes.io/instance"] != "crds" {
				t.Errorf("%s: %s labels %v", channel, name, crd.Labels)
			}
			if strings.Contains(name, ".gateway.networking.") && crd.Annotations["gateway.networking.k8s.io/channel"] != channel {
				t.Errorf("%s: %s is of channel %q", channel, name, crd.Annotations["gateway.networking.k8s.io/channel"])
			}
			// The source file, but for what the chart adds.
			got := withoutChartMetadata(crd)
			if d := cmp.Diff(sources[name], got); d != "" {
				t.Errorf("%s: %s differs from its file (-file +rendered):\n%.3000s", channel, name, d)
			}
		}
	}
	exp, std := rendered["experimental"], rendered["standard"]
	for _, c := range []struct {
		crd  string
		want []string // served on experimental; standard serves v1 alone, or v1 and v1beta1 as experimental
	}{
		{"tlsroutes", []string{"v1", "v1alpha2", "v1alpha3"}},
		{"tcproutes", []string{"v1", "v1alpha2"}},
		{"udproutes", []string{"v1", "v1alpha2"}},
		{"backendtlspolicies", []string{"v1", "v1alpha3"}},
	} {
		n := c.crd + ".gateway.networking.k8s.io"
		if got := served(exp[n]); !slices.Equal(got, c.want) {
			t.Errorf("experimental %s serves %v, want %v", n, got, c.want)
		}
		if got := served(std[n]); !slices.Equal(got, []string{"v1"}) {
			t.Errorf("standard %s serves %v, want [v1]", n, got)
		}
	}
	// The route fields shardgate translates that only experimental has.
	for _, c := range []struct{ crd, field string }{
		{"httproutes", "retry"}, {"httproutes", "sessionPersistence"}, {"grpcroutes", "sessionPersistence"},
	} {
		n := c.crd + ".gateway.networking.k8s.io"
		if !hasRuleField(exp[n], "v1", c.field) || hasRuleField(std[n], "v1", c.field) {
			t.Errorf("%s rules[].%s: experimental %v, standard %v; want only experimental", n, c.field,
				hasRuleField(exp[n], "v1", c.field), hasRuleField(std[n], "v1", c.field))
		}
	}
}

// TestOptions: gatewayAPI.enabled=false leaves the Gateway API CRDs out,
// akash.enabled adds the Akash ones, and the schema refuses an unknown
// channel or key.
func TestOptions(t *testing.T) {
	if d := cmp.Diff(ours, names(mustTemplate(t, "--set", "gatewayAPI.enabled=false"))); d != "" {
		t.Errorf("gatewayAPI.enabled=false (-want +got):\n%s", d)
	}
	crds := mustTemplate(t, "--set", "gatewayAPI.enabled=false", "--set", "akash.enabled=true")
	want := append(slices.Clone(akashCRDs), ours...)
	slices.Sort(want)
	if d := cmp.Diff(want, names(crds)); d != "" {
		t.Errorf("akash.enabled=true (-want +got):\n%s", d)
	}
	src := source(t, akashFiles)
	for _, n := range akashCRDs {
		if crds[n].Annotations["helm.sh/resource-policy"] != "keep" {
			t.Errorf("%s has no helm.sh/resource-policy: keep", n)
		}
		got := withoutChartMetadata(crds[n])
		if d := cmp.Diff(src[n], got); d != "" {
			t.Errorf("%s differs from its file:\n%.2000s", n, d)
		}
	}
	if crds := mustTemplate(t); slices.ContainsFunc(names(crds), func(n string) bool { return strings.HasSuffix(n, ".akash.network") }) {
		t.Errorf("the Akash CRDs are rendered by default")
	}
	for _, bad := range []struct{ set, key string }{
		{"gatewayAPI.channel=beta", "/gatewayAPI/channel"},
		{"gatewayAPI.installCRDs=true", "installCRDs"},
		{"akash.enabled=yes", "/akash/enabled"},
	} {
		_, err := template(t, "--set", bad.set)
		if err == nil || !strings.Contains(err.Error(), bad.key) {
			t.Errorf("helm template --set %s = %v, want the schema to refuse it, naming %s", bad.set, err, bad.key)
		}
	}
}

// TestLint: `helm lint --strict`, and a render of the same values (lint
// does not fail on a template's `fail`), pass for each option.
func TestLint(t *testing.T) {
	helm := tool(t, "helm")
	for _, args := range [][]string{
		nil,
		{"--set", "gatewayAPI.channel=standard"},
		{"--set", "gatewayAPI.enabled=false"},
		{"--set", "akash.enabled=true", "--set", "gatewayAPI.channel=standard"},
	} {
		lintArgs := append(append([]string{"lint", "--strict", "--kube-version", kubeVersion, "--namespace", "shardgate-system"}, args...), ".")
		out, err := exec.Command(helm, lintArgs...).CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("0 chart(s) failed")) {
			t.Errorf("helm %s: %v\n%s", strings.Join(lintArgs, " "), err, out)
		}
		if _, err := template(t, args...); err != nil {
			t.Error(err)
		}
	}
}

// TestCopies: the CRD files of the chart and its subcharts are those of
// crds/, crds/akash and the Gateway API release in bin/crds (both channels, without the
// safe-upgrades admission policy): `make chart-crds` refreshes them.
func TestCopies(t *testing.T) {
	r := root(t)
	same := func(src, dst string) {
		t.Helper()
		want, err := filepath.Glob(filepath.Join(r, src, "*_*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		want = slices.DeleteFunc(want, func(p string) bool {
			return filepath.Base(p) == "gateway.networking.k8s.io_vap_safeupgrades.yaml"
		})
		have, err := filepath.Glob(filepath.Join(dst, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var wantNames, haveNames []string
		for _, p := range want {
			wantNames = append(wantNames, filepath.Base(p))
		}
		for _, p := range have {
			haveNames = append(haveNames, filepath.Base(p))
		}
		if d := cmp.Diff(wantNames, haveNames); d != "" {
			t.Errorf("%s against %s (-source +chart): run `make chart-crds`\n%s", dst, src, d)
			return
		}
		for _, w := range want {
			a, err := os.ReadFile(w)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dst, filepath.Base(w)))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Errorf("%s/%s is stale: run `make chart-crds`", dst, filepath.Base(w))
			}
		}
	}
	same("crds", ourFiles)
	same("crds/akash", akashFiles)
	for _, channel := range []string{"standard", "experimental"} {
		dir := filepath.Join("bin", "crds", "gateway-api", channel)
		if _, err := os.Stat(filepath.Join(r, dir)); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing: run `make envtest-assets`", dir)
			}
			t.Logf("%s is missing (run `make envtest-assets`): the Gateway API copies are not checked", dir)
			continue
		}
		same(dir, gatewayAPIFiles(channel))
	}
}

// TestChartREADME: README.md is what helm-docs generates from
// README.md.gotmpl and the `# --` comments of values.yaml.
func TestChartREADME(t *testing.T) {
	helmDocs := tool(t, "helm-docs")
	args := []string{"--chart-search-root=.", "--chart-to-generate=.", "--template-files=README.md.gotmpl",
		"--sort-values-order=file", "--log-level=warning"}
	if *update {
		cmd := exec.Command(helmDocs, args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("helm-docs: %v\n%s", err, out)
		}
		return
	}
	got, err := exec.Command(helmDocs, append(args, "--dry-run")...).Output()
	if err != nil {
		t.Fatalf("helm-docs: %v", err)
	}
	want, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(want), bytes.TrimSpace(got)) {
		t.Errorf("README.md is stale: run `go test ./charts/shardgate-crds -run TestChartREADME -update`\n%s",
			cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")))
	}
}
