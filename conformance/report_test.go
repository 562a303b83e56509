package conformance_test

import (
	"os"
	"strings"
	"testing"

	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/yaml"
)

// TestCommittedLocalReport: the committed report of the latest local run
// (make conformance-local) is an upstream ConformanceReport of the suite
// version this module runs, for shardgate, with no failed test.
func TestCommittedLocalReport(t *testing.T) {
	data, err := os.ReadFile(LocalReportPath)
	if err != nil {
		t.Fatalf("%v: run make conformance-local and commit the report", err)
	}
	var r confv1.ConformanceReport
	if err := yaml.UnmarshalStrict(data, &r); err != nil {
		t.Fatalf("%s is not an upstream ConformanceReport: %v", LocalReportPath, err)
	}
	suite := suiteVersion(t)
	if r.Kind != "ConformanceReport" || r.Implementation.Project != "shardgate" || r.GatewayAPIVersion != suite {
		t.Errorf("%s: kind %q, project %q, gatewayAPIVersion %q; want ConformanceReport, shardgate, %s (the suite in go.mod): run make conformance-local",
			LocalReportPath, r.Kind, r.Implementation.Project, r.GatewayAPIVersion, suite)
	}
	if !strings.HasPrefix(LocalReportPath, "reports/"+suite+"-") {
		t.Errorf("LocalReportPath %s does not name the suite version %s (make conformance-local uses GATEWAY_API_VERSION)", LocalReportPath, suite)
	}
	if len(r.ProfileReports) == 0 {
		t.Fatalf("%s has no profiles", LocalReportPath)
	}
	var passed uint32
	for _, p := range r.ProfileReports {
		statuses := []confv1.Status{p.Core}
		if p.Extended != nil {
			statuses = append(statuses, p.Extended.Status)
		}
		for _, s := range statuses {
			passed += s.Passed
			if s.Failed > 0 {
				t.Errorf("%s: profile %s reports %d failed tests: %v", LocalReportPath, p.Name, s.Failed, s.FailedTests)
			}
		}
	}
	if passed == 0 {
		t.Errorf("%s: no test passed", LocalReportPath)
	}
}

// suiteVersion is the version of sigs.k8s.io/gateway-api/conformance in
// the repository's go.mod.
func suiteVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "sigs.k8s.io/gateway-api/conformance" {
			return f[1]
		}
	}
	t.Fatal("go.mod does not require sigs.k8s.io/gateway-api/conformance")
	return ""
}
