package conformance_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/conformance"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/internal/version"
)

// Addresses of local mode. Every one is loopback and none is ever dialled.
const (
	// LocalDynamicPool backs the Gateways' Envoy Services next to the
	// harness's default pool (127.240.0.0/28): the suite runs many
	// Gateways at once, more than 14.
	LocalDynamicPool = "127.240.1.0/24"
	// LocalStaticPool holds the usable static address. autoAssign is off,
	// so no other Gateway's Service can take the address first.
	LocalStaticPool    = "127.240.0.16/28"
	LocalUsableAddress = "127.240.0.20"
	// LocalUnusableAddress is outside every pool.
	LocalUnusableAddress = "127.241.0.1"

	expectedPassFile = "testdata/local-expected-pass.txt"
)

// TestConformanceLocal runs the upstream suite on this machine: the
// harness's cluster mode (apiserver, controller-manager, scheduler, a KWOK
// node, MetalLB), shardgate's manager in this process, and the suite in a
// child process (TestConformance with the local settings) against the
// harness's kubeconfig. The tests that send traffic are skipped by name
// (conformance.TrafficTests). The child's failures do not fail this test by
// themselves: this test fails when a test on the committed expected-pass
// list does not pass, or when anything that must be skipped ran.
func TestConformanceLocal(t *testing.T) {
	if os.Getenv(envLocalResults) != "" {
		t.Skip("this is the suite run TestConformanceLocal started")
	}
	if *clusterRun || kubeconfigFlag() != "" {
		t.Skip("a cluster run was requested (-cluster or -kubeconfig): local mode is not run")
	}
	testenv.Require(t)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), *localTimeout)
	defer cancel()

	env, err := testenv.Start(ctx, testenv.Options{
		Mode:        testenv.Cluster,
		DefaultPool: true,
		Pools:       []testenv.Pool{{Name: "conformance-dynamic", Addresses: []string{LocalDynamicPool}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	if err := createStaticPool(ctx, env); err != nil {
		t.Fatal(err)
	}
	if err := createGatewayClass(ctx, env.Client); err != nil {
		t.Fatal(err)
	}
	t.Logf("harness up in %s", time.Since(start).Round(100*time.Millisecond))

	reportPath := DefaultReportPath(version.Version, true)
	if *localReport != "" {
		reportPath = *localReport
	}
	if err := os.MkdirAll(filepath.Dir(reportPath), 0o755); err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSuffix(reportPath, ".yaml")
	logFile, err := os.Create(base + "-shardgate.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	logger := crzap.New(crzap.WriteTo(logFile), crzap.UseDevMode(false))
	crlog.SetLogger(logger)
	leaderElect := false
	env.RunManager(manager.Options{LeaderElect: &leaderElect, Log: logger})

	resultsPath := filepath.Join(env.Dir, "conformance-results.json")
	suiteLog := base + "-suite.log"
	remaining := time.Until(deadline(ctx)) - 30*time.Second
	args := []string{
		"-test.run=^TestConformance$",
		"-test.v",
		"-test.count=1",
		"-test.timeout=" + remaining.String(),
		"-kubeconfig=" + env.Kubeconfig,
		"-usable-address=" + LocalUsableAddress,
		"-unusable-address=" + LocalUnusableAddress,
		"-report-output=" + reportPath,
	}
	if *localRunTest != "" {
		// One test, and its objects are kept so their status can be read.
		args = append(args, "-run-test="+*localRunTest, "-cleanup-test-resources=false")
	}
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), envLocalResults+"="+resultsPath, "KUBECONFIG="+env.Kubeconfig)
	out, err := os.Create(suiteLog)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	suiteStart := time.Now()
	runErr := cmd.Run()
	out.Close()
	t.Logf("suite ran in %s (exit: %v); log %s, shardgate log %s, report %s",
		time.Since(suiteStart).Round(100*time.Millisecond), runErr, suiteLog, logFile.Name(), reportPath)

	if *localRunTest != "" {
		statusFile := base + "-status.yaml"
		if err := dumpStatus(context.Background(), env.Client, statusFile); err != nil {
			t.Error(err)
		}
		t.Logf("-local-run-test %s: status of every Gateway API object written to %s; tail of %s:\n%s",
			*localRunTest, statusFile, suiteLog, tail(suiteLog, 40))
		return
	}

	raw, err := os.ReadFile(resultsPath)
	if err != nil {
		t.Fatalf("the suite wrote no results (%v); tail of %s:\n%s", err, suiteLog, tail(suiteLog, 60))
	}
	results := map[string]Result{}
	if err := json.Unmarshal(raw, &results); err != nil {
		t.Fatal(err)
	}
	byResult := map[Result][]string{}
	for name, r := range results {
		byResult[r] = append(byResult[r], name)
	}
	for _, names := range byResult {
		sort.Strings(names)
	}
	t.Logf("conformance (local): %d passed, %d failed, %d skipped (traffic), %d skipped (other), %d not supported",
		len(byResult[Passed]), len(byResult[Failed]), len(byResult[SkipTraffic]), len(byResult[Skipped]), len(byResult[NotSupported]))
	t.Logf("passed: %s", strings.Join(byResult[Passed], ", "))
	t.Logf("failed: %s", strings.Join(byResult[Failed], ", "))
	if names := byResult[Skipped]; len(names) > 0 {
		t.Logf("skipped (other): %s", strings.Join(names, ", "))
	}

	// Nothing that sends traffic may have run.
	for name, why := range conformance.TrafficTests {
		if r, ok := results[name]; ok && r != SkipTraffic && r != NotSupported {
			t.Errorf("traffic test %s (%s) was not skipped: %s", name, why, r)
		}
	}
	if *updateExpect {
		if err := writeExpected(byResult[Passed]); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", expectedPassFile)
		return
	}
	expected, err := readExpected()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range expected {
		if results[name] != Passed {
			t.Errorf("%s is on %s but %s (see %s and conformance/KNOWN_ISSUES.md)", name, expectedPassFile, orMissing(results[name]), suiteLog)
		}
	}
	exp := map[string]bool{}
	for _, n := range expected {
		exp[n] = true
	}
	for _, name := range byResult[Passed] {
		if !exp[name] {
			t.Logf("NEWLY PASSING: %s is not on %s yet; add it (go test ./conformance -run TestConformanceLocal -args -update-expected)", name, expectedPassFile)
		}
	}
	t.Logf("local conformance took %s", time.Since(start).Round(100*time.Millisecond))
}

func orMissing(r Result) string {
	if r == "" {
		return "did not run"
	}
	return string(r)
}

func deadline(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Now().Add(*localTimeout)
	}
	return d
}

func createStaticPool(ctx context.Context, env *testenv.Env) error {
	autoAssign := false
	pool := &metallbv1beta1.IPAddressPool{
		ObjectMeta: metav1.ObjectMeta{Name: "conformance-static", Namespace: testenv.MetalLBNamespace},
		Spec: metallbv1beta1.IPAddressPoolSpec{
			Addresses:  []string{LocalStaticPool},
			AutoAssign: &autoAssign,
		},
	}
	if err := env.Client.Create(ctx, pool); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create pool %s: %w", pool.Name, err)
	}
	return nil
}

func createGatewayClass(ctx context.Context, c client.Client) error {
	gwc := &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultGatewayClass},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(config.DefaultControllerName)},
	}
	if err := c.Create(ctx, gwc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create GatewayClass %s: %w", gwc.Name, err)
	}
	return nil
}

// dumpStatus writes the Gateway API objects, with their status, to path.
func dumpStatus(ctx context.Context, c client.Client, path string) error {
	var b strings.Builder
	lists := []client.ObjectList{
		&gatewayv1.GatewayClassList{}, &gatewayv1.GatewayList{}, &gatewayv1.HTTPRouteList{},
		&gatewayv1.GRPCRouteList{}, &gatewayv1.TLSRouteList{}, &gatewayv1.TCPRouteList{},
	}
	for _, l := range lists {
		if err := c.List(ctx, l); err != nil {
			fmt.Fprintf(&b, "# list %T: %v\n", l, err)
			continue
		}
		raw, err := yaml.Marshal(l)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "---\n# %T\n%s", l, raw)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func readExpected() ([]string, error) {
	f, err := os.Open(expectedPassFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	return out, s.Err()
}

func writeExpected(names []string) error {
	var b strings.Builder
	b.WriteString("# The upstream conformance tests that pass in local mode (TestConformanceLocal).\n")
	b.WriteString("# A test listed here that does not pass fails `make test`. Regenerate after a fix:\n")
	b.WriteString("#   go test ./conformance -run TestConformanceLocal -count=1 -args -update-expected\n")
	b.WriteString("# Failing status-only tests and why: KNOWN_ISSUES.md.\n")
	for _, n := range names {
		b.WriteString(n + "\n")
	}
	if err := os.MkdirAll(filepath.Dir(expectedPassFile), 0o755); err != nil {
		return err
	}
	return os.WriteFile(expectedPassFile, []byte(b.String()), 0o644)
}

func tail(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
