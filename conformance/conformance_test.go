package conformance_test

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
	xv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
	upstream "sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/tests"
	confconfig "sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/flags"
	"sigs.k8s.io/gateway-api/conformance/utils/grpc"
	"sigs.k8s.io/gateway-api/conformance/utils/roundtripper"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/features"
	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/conformance"
	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/scheme"
	"github.com/shardgate/shardgate/internal/version"
)

// Flags of our own. The suite's standard flags (-gateway-class,
// -report-output, -usable-address, -unusable-address, -skip-tests,
// -run-test, -supported-features, -exempt-features, -version, ...) are
// registered by the upstream flags package and override our defaults when
// given; -kubeconfig is controller-runtime's.
var (
	clusterRun   = flag.Bool("cluster", false, "run the suite against the cluster in -kubeconfig or $KUBECONFIG (make conformance)")
	localTimeout = flag.Duration("local-timeout", 20*time.Minute, "local mode: the whole run (harness, shardgate and the suite) must finish within this (generous: a loaded machine runs the cluster-mode harness slowly)")
	updateExpect = flag.Bool("update-expected", false, "local mode: rewrite testdata/local-expected-pass.txt from this run's passes")
	localRunTest = flag.String("local-run-test", "", "local mode: run only this upstream test, keep its objects and write their status next to the report (for diagnosis)")
	localReport  = flag.String("local-report", "", "local mode: write the report here (relative to conformance/) instead of the git-ignored reports/<date>-shardgate-<version>-local.yaml; make conformance-local writes the committed "+LocalReportPath)
)

func init() {
	if flag.Lookup("kubeconfig") == nil {
		flag.String("kubeconfig", "", "path to a kubeconfig (default $KUBECONFIG)")
	}
}

const (
	// DefaultGatewayClass is the GatewayClass the suite uses unless
	// -gateway-class says otherwise (the Helm chart creates it).
	DefaultGatewayClass = "shardgate"

	// envLocalResults marks the suite run that TestConformanceLocal starts
	// as a child process; its value is where the child writes its results.
	envLocalResults = "SHARDGATE_CONFORMANCE_LOCAL_RESULTS"
)

// Profiles are the conformance profiles shardgate claims.
var Profiles = []suite.ConformanceProfileName{
	suite.GatewayHTTPConformanceProfileName,
	suite.GatewayGRPCConformanceProfileName,
	suite.GatewayTLSConformanceProfileName,
}

// SupportedFeatures is what the suite is told we support: the one Go list
// in internal/gatewayapi (which the GatewayClass status advertises too).
func SupportedFeatures() []features.FeatureName {
	out := append([]features.FeatureName(nil), gatewayapi.SupportedFeatures...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func kubeconfigFlag() string {
	if f := flag.Lookup("kubeconfig"); f != nil {
		return f.Value.String()
	}
	return ""
}

// TestConformance runs the upstream suite against a cluster where shardgate
// is installed: `make conformance KUBECONFIG=...`, or `go test
// ./conformance -run 'TestConformance$' -args -cluster` (or -kubeconfig=...).
// TestConformanceLocal also runs it, as a child process, against the test
// harness.
func TestConformance(t *testing.T) {
	localResults := os.Getenv(envLocalResults)
	explicit := kubeconfigFlag()
	if localResults == "" && !*clusterRun && explicit == "" {
		t.Skip("cluster run not requested: run `make conformance KUBECONFIG=...` " +
			"(or go test ./conformance -run 'TestConformance$' -args -cluster); the local run is TestConformanceLocal (`make conformance-local`)")
	}
	if explicit == "" && os.Getenv("KUBECONFIG") == "" {
		t.Skip("no cluster: $KUBECONFIG is unset and -kubeconfig was not given, so there is nothing to run the suite against. " +
			"Set KUBECONFIG to a cluster with shardgate installed (see conformance/README.md), or run `make conformance-local`")
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = explicit
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		t.Fatalf("load kubeconfig: %v", err)
	}
	runSuite(t, cfg, localResults)
}

// Options builds the suite's options: everything from our code, then any
// standard flag the user set explicitly.
func Options(t *testing.T, cfg *rest.Config, local bool) suite.ConformanceOptions {
	t.Helper()
	s := scheme.New()
	if err := xv1alpha1.Install(s); err != nil {
		t.Fatal(err)
	}
	clientOpts := client.Options{Scheme: s}
	c, err := client.New(cfg, clientOpts)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	configurable := suite.ConfigurableOptions{
		GatewayClassName:     DefaultGatewayClass,
		CleanupBaseResources: flags.DefaultCleanupBaseResources,
		CleanupTestResources: flags.DefaultCleanupTestResources,
		Mode:                 flags.DefaultMode,
		SupportedFeatures:    SupportedFeatures(),
		ConformanceProfiles:  Profiles,
		TimeoutConfig:        confconfig.DefaultTimeoutConfig(),
		Implementation: confv1.Implementation{
			Organization: "shardgate",
			Project:      "shardgate",
			URL:          "https://github.com/shardgate/shardgate",
			Version:      version.Version,
			Contact:      []string{"https://github.com/shardgate/shardgate/issues"},
		},
	}
	if local {
		// The harness is thrown away after the run, and a controller in
		// the same machine converges in well under a second: shorter
		// waits keep a failing status test from costing minutes.
		configurable.CleanupBaseResources = false
		capTimeouts(&configurable.TimeoutConfig, 30*time.Second)
		configurable.TimeoutConfig.NamespacesMustBeReady = 120 * time.Second
		configurable.TimeoutConfig.DefaultTestTimeout = 60 * time.Second
	}
	flags.ApplyAll(&configurable)
	if configurable.ReportOutputPath == "" {
		configurable.ReportOutputPath = DefaultReportPath(configurable.Implementation.Version, local)
	}
	return suite.ConformanceOptions{
		ConfigurableOptions: configurable,
		Client:              c,
		ClientOptions:       clientOpts,
		Clientset:           cs,
		RestConfig:          cfg,
		ManifestFS:          []iofs.FS{&upstream.Manifests},
	}
}

// LocalReportPath is the committed report of the latest local run, written
// by `make conformance-local`: the upstream ConformanceReport of the suite
// version in go.mod, with the traffic tests skipped (no Envoy here).
const LocalReportPath = "reports/v1.6.3-shardgate-local-report.yaml"

// DefaultReportPath is conformance/reports/<date>-shardgate-<version>.yaml
// (with -local before .yaml for local runs, which are not a full report).
func DefaultReportPath(v string, local bool) string {
	name := fmt.Sprintf("%s-shardgate-%s", time.Now().UTC().Format("2006-01-02"), sanitize(v))
	if local {
		name += "-local"
	}
	return filepath.Join("reports", name+".yaml")
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_', r == '+':
			return r
		}
		return '_'
	}, s)
}

// capTimeouts lowers every duration in tc to at most max (the poll
// interval is far below it).
func capTimeouts(tc *confconfig.TimeoutConfig, max time.Duration) {
	v := reflect.ValueOf(tc).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.Type() == reflect.TypeOf(time.Duration(0)) && time.Duration(f.Int()) > max {
			f.SetInt(int64(max))
		}
	}
}

// Result is one test's outcome in a local run.
type Result string

const (
	Passed       Result = "passed"
	Failed       Result = "failed"
	Skipped      Result = "skipped"         // skipped for another reason (-skip-tests, -run-test)
	SkipTraffic  Result = "skipped-traffic" // in conformance.TrafficTests
	NotSupported Result = "not-supported"   // needs a feature we do not claim, or outside our profiles
)

func runSuite(t *testing.T, cfg *rest.Config, localResults string) {
	local := localResults != ""
	crlog.SetLogger(crzap.New(crzap.WriteTo(os.Stdout)))
	opts := Options(t, cfg, local)
	if local {
		for name := range conformance.TrafficTests {
			opts.SkipTests = append(opts.SkipTests, name)
		}
		sort.Strings(opts.SkipTests)
		// A second guard behind the skip list: the suite's own clients
		// refuse to send anything, and say which test tried.
		opts.RoundTripper = noTraffic{}
		opts.GRPCClient = noTraffic{}
		opts.WebSocketDialer = noTraffic{}
	}
	if err := opts.Implementation.Validate(); err != nil {
		t.Fatalf("implementation details: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(opts.ReportOutputPath), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("conformance: GatewayClass %s, profiles %v, %d supported features, %d tests skipped by name, report %s",
		opts.GatewayClassName, opts.ConformanceProfiles, len(opts.SupportedFeatures), len(opts.SkipTests), opts.ReportOutputPath)
	t.Logf("conformance: supported features %v", opts.SupportedFeatures)
	if len(opts.UsableNetworkAddresses) == 0 || len(opts.UnusableNetworkAddresses) == 0 {
		t.Logf("conformance: -usable-address/-unusable-address not both given: GatewayStaticAddresses will be skipped by the suite")
	}

	var mu sync.Mutex
	results := map[string]Result{}
	skipTraffic := map[string]bool{}
	if local {
		for _, n := range opts.SkipTests {
			skipTraffic[n] = conformance.TrafficTests[n] != ""
		}
	}
	opts.Hook = func(st *testing.T, test suite.ConformanceTest, s *suite.ConformanceTestSuite) {
		var r Result
		switch {
		case !s.SupportedFeatures.HasAll(test.Features...):
			r = NotSupported
		case st.Failed():
			r = Failed
		case skipTraffic[test.ShortName]:
			r = SkipTraffic
		case st.Skipped():
			r = Skipped
		default:
			r = Passed
		}
		mu.Lock()
		results[test.ShortName] = r
		mu.Unlock()
	}

	cSuite, err := suite.NewConformanceTestSuite(opts)
	if err != nil {
		t.Fatalf("conformance suite: %v", err)
	}
	// Cleanups run after every (parallel) subtest has finished.
	t.Cleanup(func() {
		report, err := cSuite.Report()
		if err != nil {
			t.Errorf("conformance report: %v", err)
			return
		}
		raw, err := yaml.Marshal(report)
		if err != nil {
			t.Errorf("conformance report: %v", err)
			return
		}
		if err := os.WriteFile(opts.ReportOutputPath, raw, 0o644); err != nil {
			t.Errorf("write report: %v", err)
		}
		t.Logf("conformance report written to %s:\n%s", opts.ReportOutputPath, raw)
		if local {
			mu.Lock()
			defer mu.Unlock()
			raw, _ := json.MarshalIndent(results, "", "  ")
			if err := os.WriteFile(localResults, raw, 0o644); err != nil {
				t.Errorf("write results: %v", err)
			}
		}
	})
	if local {
		// Refuse to start if a traffic test would run anyway.
		for _, test := range tests.ConformanceTests {
			if conformance.TrafficTests[test.ShortName] != "" && !cSuite.SkipTests.Has(test.ShortName) {
				t.Fatalf("traffic test %s is not skipped", test.ShortName)
			}
		}
	}
	cSuite.Setup(t, tests.ConformanceTests)
	if err := cSuite.Run(t, tests.ConformanceTests); err != nil {
		t.Fatal(err)
	}
}

// noTraffic is the suite's HTTP, gRPC and WebSocket client in local mode:
// it never dials and fails whoever asks it to.
type noTraffic struct{}

var errNoTraffic = errors.New("local conformance mode: this test tried to send traffic, which is never allowed here; add it to the traffic list (go generate ./conformance)")

func (noTraffic) CaptureRoundTrip(r roundtripper.Request) (*roundtripper.CapturedRequest, *roundtripper.CapturedResponse, error) {
	if r.T != nil {
		r.T.Errorf("%v (HTTP %s)", errNoTraffic, r.URL.String())
	}
	return nil, nil, errNoTraffic
}

func (noTraffic) SendRPC(t *testing.T, address string, _ grpc.ExpectedResponse, _ time.Duration) (*grpc.Response, error) {
	t.Errorf("%v (gRPC to %s)", errNoTraffic, address)
	return nil, errNoTraffic
}

func (noTraffic) Close() {}

func (noTraffic) Dial(url, _, _ string) (*websocket.Conn, error) {
	return nil, fmt.Errorf("%w (WebSocket to %s)", errNoTraffic, url)
}
