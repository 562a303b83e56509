package conformance_test

import (
	"bytes"
	"os"
	"sort"
	"testing"

	"sigs.k8s.io/gateway-api/conformance/tests"

	"github.com/shardgate/shardgate/conformance"
)

// TestTrafficTestsUpToDate regenerates traffic_tests.go and fails if the
// committed file differs (run `go generate ./conformance`).
func TestTrafficTestsUpToDate(t *testing.T) {
	scan, err := conformance.ScanUpstream()
	if err != nil {
		t.Fatal(err)
	}
	v, err := conformance.UpstreamVersion()
	if err != nil {
		t.Fatal(err)
	}
	want, err := conformance.GenerateTrafficFile(scan, v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("traffic_tests.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("traffic_tests.go is stale for %s %s: run `go generate ./conformance`", conformance.UpstreamModule, v)
	}
	t.Logf("%d traffic tests, %d status-only tests", len(scan.Traffic), len(scan.StatusOnly))
}

// TestScanCoversSuite checks the parser against the suite as compiled: every
// registered ConformanceTest is classified exactly once, and nothing else.
func TestScanCoversSuite(t *testing.T) {
	scan, err := conformance.ScanUpstream()
	if err != nil {
		t.Fatal(err)
	}
	classified := map[string]int{}
	for n := range scan.Traffic {
		classified[n]++
	}
	for _, n := range scan.StatusOnly {
		classified[n]++
	}
	registered := map[string]bool{}
	for _, test := range tests.ConformanceTests {
		registered[test.ShortName] = true
		if classified[test.ShortName] != 1 {
			t.Errorf("registered test %s classified %d times", test.ShortName, classified[test.ShortName])
		}
	}
	var extra []string
	for n := range classified {
		if !registered[n] {
			extra = append(extra, n)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("scan found tests the suite does not register: %v", extra)
	}
}

// TestScanFindsKnownHelpers pins a few classifications a person checked by
// reading the tests, so a scan that silently stops seeing helpers fails.
func TestScanFindsKnownHelpers(t *testing.T) {
	scan, err := conformance.ScanUpstream()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{
		"HTTPRouteSimpleSameNamespace",      // http.MakeRequestAndExpectEventuallyConsistentResponse
		"GRPCExactMethodMatching",           // grpc.MakeRequestAndExpectEventuallyConsistentResponse
		"TLSRouteSimpleSameNamespace",       // tls.MakeTLSRequestAndExpectEventuallyConsistentResponse
		"HTTPRouteBackendProtocolWebSocket", // suite.WebSocketDialer
		"HTTPRouteRequestMirror",            // http.ExpectMirroredRequest (Pod logs)
		"GatewayHTTPListenerIsolation",      // sends HTTP to each listener
	} {
		if scan.Traffic[n] == "" {
			t.Errorf("%s should be a traffic test", n)
		}
	}
	status := map[string]bool{}
	for _, n := range scan.StatusOnly {
		status[n] = true
	}
	for _, n := range []string{
		"GatewayWithAttachedRoutes",
		"HTTPRouteInvalidCrossNamespaceParentRef",
		"GatewayStaticAddresses",
		"TLSRouteInvalidReferenceGrant",
	} {
		if !status[n] {
			t.Errorf("%s should be status-only (%s)", n, scan.Traffic[n])
		}
	}
}
