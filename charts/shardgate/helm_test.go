package shardgate_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/shardgate/shardgate/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the helm template goldens and the chart README")

// tool returns bin/<name>, built by `make envtest-assets`. Without it the
// test is skipped, or fails under CI, as the harness does for its assets.
func tool(t *testing.T, name string) string {
	t.Helper()
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "bin", name)
	if _, err := os.Stat(path); err != nil {
		msg := "bin/" + name + " is missing: run `make envtest-assets` (or ./hack/envtest-assets.sh " + name + ")"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + " (CI is set, so this is a failure, not a skip)")
		}
		t.Skip(msg)
	}
	return path
}

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s\n%s", filepath.Base(name), strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return out
}

// lintCase is one values combination of the chart, linted as it is
// installed: in its namespace, with its values.
type lintCase struct {
	name, namespace string
	args            []string // --set and -f flags
}

// lint runs `helm lint --strict` and then `helm template` with the same
// namespace and values. Lint alone is not enough: Helm lints in a mode where
// the templates' `fail` and `required` only log an [INFO] line, so a values
// combination that `helm install` refuses still lints clean ("0 chart(s)
// failed"). The render is what fails on them.
func lint(helm, dir string, c lintCase) error {
	common := append([]string{"--namespace", c.namespace}, c.args...)
	lintArgs := append(append([]string{"lint", "--strict", "--kube-version", kubeVersion}, common...), dir)
	out, err := exec.Command(helm, lintArgs...).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("0 chart(s) failed")) {
		return fmt.Errorf("helm %s: %v\n%s", strings.Join(lintArgs, " "), err, out)
	}
	tmplArgs := append([]string{"template", "lint", dir, "--kube-version", kubeVersion}, common...)
	out, err = exec.Command(helm, tmplArgs...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("helm %s: %v\n%s", strings.Join(tmplArgs, " "), err, out)
	}
	return nil
}

// TestHelmLint: `helm lint --strict`, and the render of the same values,
// pass with the default values and with each option's values.
func TestHelmLint(t *testing.T) {
	helm := tool(t, "helm")
	for _, c := range []lintCase{
		{"defaults", "shardgate-system", nil},
		{"gateway API CRDs", "shardgate-system", []string{"--set", "gatewayAPI.installCRDs=true"}},
		{"full", "shardgate-system", []string{"-f", "testdata/values-full.yaml"}},
		{"akash", "akash-services", []string{"-f", "testdata/values-akash.yaml"}},
		{"akash, full", "akash-services", []string{"-f", "testdata/values-full.yaml", "-f", "testdata/values-akash.yaml"}},
		{"xDS CA from an issuer", "shardgate-system", []string{"--set", "xds.certManager.enabled=true", "--set", "xds.certManager.issuerRef.name=org-ca", "--set", "xds.certManager.issuerRef.kind=ClusterIssuer"}},
		{"single replica, plain metrics, Envoy PodMonitor, owned routes", "shardgate-system", []string{"--set", "replicaCount=1",
			"--set", "config.leaderElection.enabled=false", "--set", "metrics.secure=false", "--set", "metrics.podMonitor.enabled=true",
			"--set", "tenantRole.ownedRoutes=true", "--set", "gatewayClass.create=false"}},
		{"akash without operator Services", "shardgate-system", []string{"-f", "testdata/values-akash.yaml", "--set", "akash.operatorServices=false"}},
		// An existing controller ServiceAccount, a user's scrape token and
		// an explicitly unverified self-signed metrics certificate.
		{"existing ServiceAccount, user's scrape token, maxUnavailable", "shardgate-system", []string{"--set", "serviceAccount.create=false,serviceAccount.name=platform-sa," +
			"metrics.serviceMonitor.enabled=true,metrics.serviceMonitor.insecureSkipVerify=true," +
			"metrics.serviceMonitor.authorization.createSecret=false,metrics.serviceMonitor.authorization.secretName=prom-token," +
			"configReader.create=false,podDisruptionBudget.minAvailable=null,podDisruptionBudget.maxUnavailable=50%"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := lint(helm, ".", c); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestHelmLintFailingRender: a values combination whose render fails (Akash
// operator Services outside akash-services: a `fail` in services.yaml)
// fails the lint check, though `helm lint --strict` alone reports success.
func TestHelmLintFailingRender(t *testing.T) {
	helm := tool(t, "helm")
	bad := lintCase{"akash elsewhere", "shardgate-system", []string{"-f", "testdata/values-akash.yaml"}}
	err := lint(helm, ".", bad)
	if err == nil || !strings.Contains(err.Error(), "akash-services") {
		t.Fatalf("lint of Akash mode in shardgate-system = %v, want the render's error naming akash-services", err)
	}
	// Schema errors fail lint itself.
	err = lint(helm, ".", lintCase{"bad port", "shardgate-system", []string{"--set", "ports.xds=0"}})
	if err == nil || !strings.Contains(err.Error(), "helm lint") {
		t.Fatalf("lint with ports.xds=0 = %v, want helm lint to fail", err)
	}
}

// TestHelmTemplateGolden: `helm template` (the real helm binary, not the
// SDK) renders exactly the committed goldens; `go test -update` rewrites
// them, and the diff is the review.
func TestHelmTemplateGolden(t *testing.T) {
	helm := tool(t, "helm")
	for _, c := range []struct{ golden, values string }{
		{"testdata/template-default.golden.yaml", ""},
		{"testdata/template-full.golden.yaml", "testdata/values-full.yaml"},
	} {
		args := []string{"template", "shardgate", ".", "--namespace", "shardgate-system", "--kube-version", kubeVersion}
		if c.values != "" {
			args = append(args, "-f", c.values)
		}
		got := run(t, helm, args...)
		compareGolden(t, c.golden, got)
	}
}

func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./charts/shardgate -run %s -update)", err, t.Name())
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s is stale: run `go test ./charts/shardgate -run %s -update` and review the diff\n%s", path, t.Name(), diff(want, got))
	}
}

// diff is a line diff, cut short for the log.
func diff(want, got []byte) string {
	d := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n"))
	if len(d) > 4000 {
		d = d[:4000] + "\n..."
	}
	return d
}

// TestChartREADME: README.md is what helm-docs generates from
// README.md.gotmpl and the `# --` comments of values.yaml.
func TestChartREADME(t *testing.T) {
	helmDocs := tool(t, "helm-docs")
	args := []string{"--chart-search-root=.", "--chart-to-generate=.", "--template-files=README.md.gotmpl",
		"--sort-values-order=file", "--log-level=warning"}
	if *update {
		run(t, helmDocs, args...)
		return
	}
	got := run(t, helmDocs, append(args, "--dry-run")...)
	want, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(want), bytes.TrimSpace(got)) {
		t.Errorf("README.md is stale: run `go test ./charts/shardgate -run TestChartREADME -update`\n%s", diff(want, got))
	}
}
