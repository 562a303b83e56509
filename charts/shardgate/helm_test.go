package shardgate_test

import (
	"bytes"
	"flag"
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

// TestHelmLint: `helm lint --strict` passes with the default values and
// with the non-default ones of the golden.
func TestHelmLint(t *testing.T) {
	helm := tool(t, "helm")
	for _, args := range [][]string{
		{"lint", "--strict", "--kube-version", kubeVersion, "."},
		{"lint", "--strict", "--kube-version", kubeVersion, "--set", "gatewayAPI.installCRDs=true", "."},
		{"lint", "--strict", "--kube-version", kubeVersion, "-f", "testdata/values-full.yaml", "."},
		// An existing controller ServiceAccount, a user's scrape token and
		// an explicitly unverified self-signed metrics certificate.
		{"lint", "--strict", "--kube-version", kubeVersion, "--set", "serviceAccount.create=false,serviceAccount.name=platform-sa," +
			"metrics.serviceMonitor.enabled=true,metrics.serviceMonitor.insecureSkipVerify=true," +
			"metrics.serviceMonitor.authorization.createSecret=false,metrics.serviceMonitor.authorization.secretName=prom-token," +
			"configReader.create=false,podDisruptionBudget.minAvailable=null,podDisruptionBudget.maxUnavailable=50%", "."},
	} {
		out := run(t, helm, args...)
		if !bytes.Contains(out, []byte("0 chart(s) failed")) {
			t.Errorf("helm %s:\n%s", strings.Join(args, " "), out)
		}
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
