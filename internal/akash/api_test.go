package akash

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/version"
)

// The provider's own types, field for field and tag for tag, to compare
// the encodings byte for byte: the market LeaseID (pkg.akt.dev/go
// node/market/v1), the managed-hostnames entry (hostname operator
// prepareHostnamesData), the state entry (IP operator prepareState),
// AddressUsage and LeaseIPStatus (cluster/types/v1beta3/clients/ip), the
// IP operator's error body and the version information (version.Info).
type upstreamLeaseID struct {
	Owner    string `json:"owner" yaml:"owner"`
	DSeq     uint64 `json:"dseq" yaml:"dseq"`
	GSeq     uint32 `json:"gseq" yaml:"gseq"`
	OSeq     uint32 `json:"oseq" yaml:"oseq"`
	Provider string `json:"provider" yaml:"provider"`
	BSeq     uint32 `json:"bseq" yaml:"bseq"`
}

type upstreamManagedHostname struct {
	LeaseID      upstreamLeaseID
	Namespace    string
	ExternalPort uint32
	ServiceName  string
	LastUpdate   string
}

type upstreamState struct {
	LastChangeTime string          `json:"last-event-time,omitempty"`
	LeaseID        upstreamLeaseID `json:"lease-id"`
	Namespace      string          `json:"namespace"`
	Port           uint32          `json:"port"`
	ExternalPort   uint32          `json:"external-port"`
	ServiceName    string          `json:"service-name"`
	SharingKey     string          `json:"sharing-key"`
}

type upstreamAddressUsage struct {
	Available uint
	InUse     uint
}

type upstreamLeaseIPStatus struct {
	Port         uint32
	ExternalPort uint32
	ServiceName  string
	IP           string
	Protocol     string
}

type upstreamErrorResponse struct {
	Error string
	Code  int
}

type upstreamVersionInfo struct {
	Name             string   `json:"name" yaml:"name"`
	AppName          string   `json:"server_name" yaml:"server_name"`
	Version          string   `json:"version" yaml:"version"`
	GitCommit        string   `json:"commit" yaml:"commit"`
	BuildTags        string   `json:"build_tags" yaml:"build_tags"`
	GoVersion        string   `json:"go" yaml:"go"`
	BuildDeps        []string `json:"build_deps" yaml:"build_deps"`
	CosmosSdkVersion string   `json:"cosmos_sdk_version" yaml:"cosmos_sdk_version"`
}

func encodeJSON(t *testing.T, v any) string {
	t.Helper()
	var b strings.Builder
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func goldenJSON(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Fatalf("%s differs (-want +got):\n%s", path, d)
	}
}

// TestAPIJSONMatchesUpstream: every body encodes exactly as the provider's
// type with the same values does (keys, order, types, bseq included).
func TestAPIJSONMatchesUpstream(t *testing.T) {
	l := Lease{Owner: owner, DSeq: 1234, GSeq: 1, OSeq: 2, Provider: provider}
	ul := upstreamLeaseID{Owner: owner, DSeq: 1234, GSeq: 1, OSeq: 2, Provider: provider}
	for name, tc := range map[string]struct{ ours, theirs any }{
		"lease id": {l.JSON(), ul},
		"managed hostname": {
			ManagedHostname{LeaseID: l.JSON(), Namespace: l.Namespace(), ExternalPort: 80, ServiceName: "web", LastUpdate: "t"},
			upstreamManagedHostname{LeaseID: ul, Namespace: l.Namespace(), ExternalPort: 80, ServiceName: "web", LastUpdate: "t"},
		},
		"state": {
			IPState{LastChangeTime: "t", LeaseID: l.JSON(), Namespace: "ns", Port: 8080, ExternalPort: 80, ServiceName: "web", SharingKey: "k"},
			upstreamState{LastChangeTime: "t", LeaseID: ul, Namespace: "ns", Port: 8080, ExternalPort: 80, ServiceName: "web", SharingKey: "k"},
		},
		"usage":           {AddressUsage{Available: 16, InUse: 1}, upstreamAddressUsage{Available: 16, InUse: 1}},
		"lease ip status": {LeaseIPStatus{Port: 8080, ExternalPort: 80, ServiceName: "web", IP: "1.2.3.4", Protocol: "TCP"}, upstreamLeaseIPStatus{Port: 8080, ExternalPort: 80, ServiceName: "web", IP: "1.2.3.4", Protocol: "TCP"}},
		"error":           {ErrorResponse{Error: "e", Code: -1}, upstreamErrorResponse{Error: "e", Code: -1}},
		"version": {
			VersionInfo{Name: "n", AppName: "a", Version: "v", GitCommit: "c", BuildTags: "b", GoVersion: "g", BuildDeps: []string{"x@v1"}},
			upstreamVersionInfo{Name: "n", AppName: "a", Version: "v", GitCommit: "c", BuildTags: "b", GoVersion: "g", BuildDeps: []string{"x@v1"}},
		},
	} {
		if ours, theirs := encodeJSON(t, tc.ours), encodeJSON(t, tc.theirs); ours != theirs {
			t.Errorf("%s: ours %s, the provider's %s", name, ours, theirs)
		}
	}
}

// TestAPIGolden: the listings for fixed objects, as the provider reads them.
func TestAPIGolden(t *testing.T) {
	l := Lease{Owner: owner, DSeq: 1234, GSeq: 1, OSeq: 2, Provider: provider}
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	labels := l.Labels()
	labels[LabelManaged] = "true"
	route := gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: "web.example.com", Namespace: l.Namespace(), Labels: labels, CreationTimestamp: created},
		Spec: gatewayv1.HTTPRouteSpec{
			Hostnames: []gatewayv1.Hostname{"web.example.com"},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web", Port: new(gatewayv1.PortNumber(80))}}}}}},
		},
	}
	goldenJSON(t, "managed-hostnames.golden.json", encodeJSON(t, ManagedHostnames([]gatewayv1.HTTPRoute{route})))

	lip := leasedIP("web", 8080, 80, "TCP", owner+"-ip-myip")
	il, proto, err := IPLease(lip)
	if err != nil {
		t.Fatal(err)
	}
	svc := IPServiceFor(lip, il, proto, "leased")
	svc.CreationTimestamp = created
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.7"}}
	goldenJSON(t, "state.golden.json", encodeJSON(t, State([]corev1.Service{*svc})))
	st, err := LeaseIPStatuses([]corev1.Service{*svc})
	if err != nil {
		t.Fatal(err)
	}
	goldenJSON(t, "ip-lease-status.golden.json", encodeJSON(t, st))

	svc.Status.LoadBalancer.Ingress = nil
	_, err = LeaseIPStatuses([]corev1.Service{*svc})
	if !errors.Is(err, ErrInvalidLeaseService) {
		t.Fatalf("no address: %v", err)
	}
	goldenJSON(t, "error.golden.json", encodeJSON(t, ErrorResponse{Error: err.Error(), Code: -1}))
}

func pool(name string, assigned, available int64) metallbv1beta1.IPAddressPool {
	return metallbv1beta1.IPAddressPool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "metallb-system"},
		Status:     metallbv1beta1.IPAddressPoolStatus{AssignedIPv4: assigned, AvailableIPv4: available},
	}
}

// TestUsageReportsTheLeasedPoolOnly: /usage is the configured pool's size
// and use, not the sum of every pool (the shards' own among them).
func TestUsageReportsTheLeasedPoolOnly(t *testing.T) {
	pools := []metallbv1beta1.IPAddressPool{pool("shards", 1, 31), pool("leased", 1, 15), pool("default", 3, 5)}
	for name, tc := range map[string]struct {
		pool string
		want AddressUsage
	}{
		"named pool":       {"leased", AddressUsage{Available: 16, InUse: 1}},
		"default":          {"default", AddressUsage{Available: 8, InUse: 3}},
		"unset: default":   {"", AddressUsage{Available: 8, InUse: 3}},
		"no such pool":     {"missing", AddressUsage{}},
		"shards untouched": {"shards", AddressUsage{Available: 32, InUse: 1}},
	} {
		if got := Usage(pools, tc.pool); got != tc.want {
			t.Errorf("%s: Usage = %+v, want %+v", name, got, tc.want)
		}
	}
	if got := encodeJSON(t, Usage(pools, "leased")); got != "{\"Available\":16,\"InUse\":1}\n" {
		t.Errorf("body %q", got)
	}
}

// TestIPServicePoolAnnotation: the pool annotation, as the IP operator
// writes it: only for a pool other than "default".
func TestIPServicePoolAnnotation(t *testing.T) {
	lip := leasedIP("web", 8080, 80, "TCP", owner+"-ip-myip")
	l, proto, err := IPLease(lip)
	if err != nil {
		t.Fatal(err)
	}
	for pool, want := range map[string]string{"leased": "leased", "default": "", "": ""} {
		svc := IPServiceFor(lip, l, proto, pool)
		got, ok := svc.Annotations["metallb.universe.tf/address-pool"]
		if got != want || ok != (want != "") {
			t.Errorf("pool %q: annotation %q (present %v), want %q", pool, got, ok, want)
		}
		if svc.Annotations[AnnotationAllowSharedIP] != owner+"-ip-myip" {
			t.Errorf("pool %q: sharing annotation %v", pool, svc.Annotations)
		}
	}
}

func TestValidateAddress(t *testing.T) {
	for _, ok := range []string{owner, provider, strings.ToUpper(owner), "akash1v9kxjcm9qqqqqqqqqqqqqqqqqqqqqqqqf38utt"} {
		if err := ValidateAddress(ok); err != nil {
			t.Errorf("ValidateAddress(%q) = %v", ok, err)
		}
	}
	for name, bad := range map[string]string{
		"empty":        "",
		"blank":        "  ",
		"not bech32":   "akash1alicexxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
		"bad checksum": owner[:len(owner)-1] + "m",
		"other prefix": "cosmos1v9kxjcm9qqqqqqqqqqqqqqqqqqqqqqqqy22mj3",
		"mixed case":   "Akash1v9kxjcm9qqqqqqqqqqqqqqqqqqqqqqqqf38utt",
		"no data":      "akash1" + "qqqqqq",
		"too long":     "akash1" + strings.Repeat("q", 1020),
	} {
		if err := ValidateAddress(bad); !errors.Is(err, ErrInvalidAddress) {
			t.Errorf("%s: ValidateAddress(%q) = %v, want ErrInvalidAddress", name, bad, err)
		}
	}
}

func TestNewVersionInfo(t *testing.T) {
	v := NewVersionInfo()
	if v.Name != "shardgate" || v.AppName != "shardgate" || v.Version == "" || !strings.HasPrefix(v.GoVersion, "go version go") {
		t.Fatalf("%+v", v)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(encodeJSON(t, v)), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "server_name", "version", "commit", "build_tags", "go", "build_deps", "cosmos_sdk_version"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no %q in %v", k, m)
		}
	}
	if len(m) != 8 {
		t.Errorf("keys %v", m)
	}
}

// TestVersionCommitIsTheBuilds: /version's commit is the one `shardgate
// version` prints (the Makefile's, or else the toolchain's stamp).
func TestVersionCommitIsTheBuilds(t *testing.T) {
	if got, want := NewVersionInfo().GitCommit, version.Revision(); got != want {
		t.Fatalf("commit %q, want %q", got, want)
	}
}
