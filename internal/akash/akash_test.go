package akash

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/leasehosts"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/sharding"
	"k8s.io/apimachinery/pkg/types"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const (
	owner    = "akash1qqzwc5d7hynl67nsmn9jukvwqp3vzdl6j2t7lk"
	provider = "akash1q7spv2cw06yszgfp4f9ed59lkka6ytn8g4tkjf"
)

func TestLeaseNamespace(t *testing.T) {
	l := Lease{Owner: owner, DSeq: 1234, GSeq: 1, OSeq: 2, Provider: provider}
	if got, want := l.String(), owner+"/1234/1/2/"+provider; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	ns := l.Namespace()
	// Independently: SHA-224 through the hash.Hash API, then base32hex
	// without padding, lowercased.
	h := sha256.New224()
	h.Write([]byte(owner + "/1234/1/2/" + provider))
	want := strings.ToLower(base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString(h.Sum(nil)))
	if ns != want {
		t.Fatalf("Namespace() = %q, want %q", ns, want)
	}
	if !regexp.MustCompile(`^[0-9a-v]{45}$`).MatchString(ns) {
		t.Fatalf("Namespace() = %q: not 45 base32hex characters", ns)
	}
	if other := (Lease{Owner: owner, DSeq: 1234, GSeq: 1, OSeq: 3, Provider: provider}).Namespace(); other == ns {
		t.Fatal("leases that differ in oseq share a namespace")
	}
	got, ok := LeaseFromLabels(l.Labels())
	if !ok || got != l {
		t.Fatalf("LeaseFromLabels(Labels()) = %+v, %v; want %+v", got, ok, l)
	}
}

func providerHost(host, svc string, port uint32) *akashv1.ProviderHost {
	return &akashv1.ProviderHost{
		ObjectMeta: metav1.ObjectMeta{Name: host, Namespace: "lease", UID: "ph-1",
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))},
		Spec: akashv1.ProviderHostSpec{Owner: owner, Provider: provider, Hostname: host, Dseq: 1234, Gseq: 1, Oseq: 2, ServiceName: svc, ExternalPort: port},
	}
}

func shard() sharding.Shard {
	return sharding.Shard{Name: "edge", Gateway: types.NamespacedName{Namespace: "shardgate-system", Name: "edge"}, Domain: "edge.example"}
}

// planned runs the same planning and engine a LeaseHost goes through.
func planned(t *testing.T, ph *akashv1.ProviderHost) (leasehosts.Plan, map[string]hostnames.Decision) {
	t.Helper()
	lh := AsLeaseHost(ph, false)
	p := leasehosts.PlanIn(lh, []sharding.Shard{shard()}, nil, tenancy.Policy{Keys: []string{tenancy.AkashOwnerLabel}})
	if p.Refusal != nil {
		t.Fatalf("plan refused: %+v", p.Refusal)
	}
	e := hostnames.New(nil)
	decisions := map[string]hostnames.Decision{}
	for _, c := range leasehosts.Claimants(lh, p) {
		d, _ := e.Upsert(c)
		decisions[c.Host] = d
	}
	return p, decisions
}

func golden(t *testing.T, name string, obj any) {
	t.Helper()
	got, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Fatalf("%s differs (-want +got):\n%s", path, d)
	}
}

// TestRouteGolden: the generated route in Akash's Gateway mode shape, and
// the fields the provider's recovery code reads back from it
// (ListHTTPRouteConnections: lease labels, hostnames[0],
// rules[0].backendRefs[0] name and port).
func TestRouteGolden(t *testing.T) {
	ph := providerHost("Web.Example.COM", "web", 8080)
	p, d := planned(t, ph)
	r := RouteFor(ph, p, d, DefaultRouteOptions())
	if r == nil {
		t.Fatal("no route for a reserved name")
	}
	golden(t, "route.golden.yaml", r)

	l := HostLease(ph)
	if r.Name != "web.example.com" || r.Namespace != l.Namespace() || len(r.OwnerReferences) != 0 {
		t.Fatalf("route %s/%s (owners %v): want web.example.com in %s, no owner", r.Namespace, r.Name, r.OwnerReferences, l.Namespace())
	}
	if r.Labels[LabelManaged] != "true" {
		t.Fatalf("labels %v lack akash.network=true", r.Labels)
	}
	if got, ok := LeaseFromLabels(r.Labels); !ok || got != l {
		t.Fatalf("lease from labels = %+v, %v; want %+v", got, ok, l)
	}
	b := r.Spec.Rules[0].BackendRefs[0]
	if string(r.Spec.Hostnames[0]) != "web.example.com" || string(b.Name) != "web" || b.Port == nil || *b.Port != 8080 {
		t.Fatalf("hostname %q backend %s:%v", r.Spec.Hostnames[0], b.Name, b.Port)
	}
	if m := r.Spec.Rules[0].Matches; len(r.Spec.Rules) != 1 || len(m) != 1 || *m[0].Path.Value != "/" || string(*m[0].Path.Type) != "PathPrefix" {
		t.Fatalf("rules %+v: want one rule, PathPrefix /", r.Spec.Rules)
	}
	if ps := r.Spec.ParentRefs; len(ps) != 1 || string(ps[0].Name) != "edge" || string(*ps[0].Namespace) != "shardgate-system" {
		t.Fatalf("parentRefs %+v: want the selecting shard", ps)
	}
	if !IsGeneratedRoute(r, ph) {
		t.Fatal("IsGeneratedRoute(RouteFor(ph)) = false")
	}
	other := providerHost("web.example.com", "web", 8080)
	other.Spec.Dseq = 99
	if IsGeneratedRoute(r, other) {
		t.Fatal("a route of another lease counts as this lease's")
	}
}

func TestNoRouteWhenNotHeld(t *testing.T) {
	ph := providerHost("web.example.com", "web", 80)
	p, _ := planned(t, ph)
	refused := map[string]hostnames.Decision{"web.example.com": {Host: "web.example.com", Reason: hostnames.Reason("HostnameInUse")}}
	if r := RouteFor(ph, p, refused, DefaultRouteOptions()); r != nil {
		t.Fatalf("route for a refused name: %+v", r)
	}
}

func TestValidateHost(t *testing.T) {
	for name, mutate := range map[string]func(*akashv1.ProviderHost){
		"empty hostname": func(ph *akashv1.ProviderHost) { ph.Spec.Hostname = "" },
		"port 0":         func(ph *akashv1.ProviderHost) { ph.Spec.ExternalPort = 0 },
		"port too big":   func(ph *akashv1.ProviderHost) { ph.Spec.ExternalPort = 70000 },
		"no service":     func(ph *akashv1.ProviderHost) { ph.Spec.ServiceName = "" },
		"no owner":       func(ph *akashv1.ProviderHost) { ph.Spec.Owner = "" },
		"owner not an address": func(ph *akashv1.ProviderHost) {
			ph.Spec.Owner = "akash1alicexxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		},
		"provider of another chain": func(ph *akashv1.ProviderHost) {
			ph.Spec.Provider = "cosmos1v9kxjcm9qqqqqqqqqqqqqqqqqqqqqqqqy22mj3"
		},
	} {
		ph := providerHost("web.example.com", "web", 80)
		mutate(ph)
		if err := ValidateHost(ph); !errors.Is(err, ErrInvalidProviderHost) {
			t.Errorf("%s: ValidateHost = %v, want ErrInvalidProviderHost", name, err)
		}
	}
	if err := ValidateHost(providerHost("web.example.com", "web", 80)); err != nil {
		t.Fatalf("valid ProviderHost: %v", err)
	}
}

func leasedIP(svc string, port, ext uint32, proto, key string) *akashv1.ProviderLeasedIP {
	return &akashv1.ProviderLeasedIP{
		ObjectMeta: metav1.ObjectMeta{Name: "ip", Namespace: "lease"},
		Spec: akashv1.ProviderLeasedIPSpec{
			LeaseID:     akashv1.LeaseID{Owner: owner, DSeq: "1234", GSeq: 1, OSeq: 2, Provider: provider},
			ServiceName: svc, Port: port, ExternalPort: ext, Protocol: proto, SharingKey: key,
		},
	}
}

// TestIPServiceGolden: the Service in the shape of Akash's IP operator
// (metallb client CreateIPPassthrough), and the fields its
// GetIPAddressStatusForLease reads back.
func TestIPServiceGolden(t *testing.T) {
	lip := leasedIP("web", 8080, 80, "TCP", owner+"-ip-myip")
	l, proto, err := IPLease(lip)
	if err != nil {
		t.Fatal(err)
	}
	svc := IPServiceFor(lip, l, proto, "")
	golden(t, "service.golden.yaml", svc)
	if svc.Name != "web-ip-80-tcp" || svc.Namespace != l.Namespace() || svc.Spec.Ports[0].Name != svc.Name {
		t.Fatalf("service %s/%s port %q", svc.Namespace, svc.Name, svc.Spec.Ports[0].Name)
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.Spec.Ports[0].Port != 80 || svc.Spec.Ports[0].TargetPort.IntValue() != 8080 {
		t.Fatalf("spec %+v", svc.Spec)
	}
	if svc.Labels[LabelManaged] != "true" || svc.Labels[LabelServiceTarget] != "metal-lb" || svc.Annotations[AnnotationAllowSharedIP] != owner+"-ip-myip" {
		t.Fatalf("labels %v annotations %v", svc.Labels, svc.Annotations)
	}
	if svc.Spec.Selector[LabelManaged] != "true" || svc.Spec.Selector[LabelManifestService] != "web" || len(svc.Spec.Selector) != 2 {
		t.Fatalf("selector %v", svc.Spec.Selector)
	}
	udp := leasedIP("web", 8080, 80, "udp", owner+"-ip-myip")
	l, proto, err = IPLease(udp)
	if err != nil || IPServiceFor(udp, l, proto, "").Name != "web-ip-80-udp" {
		t.Fatalf("UDP on the same port: %v", err)
	}
}

func TestIPLeaseRefusesForeignSharingKeys(t *testing.T) {
	for name, lip := range map[string]*akashv1.ProviderLeasedIP{
		"another owner's key": leasedIP("web", 80, 80, "TCP", "akash1other-ip-myip"),
		"bare owner":          leasedIP("web", 80, 80, "TCP", owner),
		"empty endpoint":      leasedIP("web", 80, 80, "TCP", owner+"-ip-"),
		"bad protocol":        leasedIP("web", 80, 80, "SCTP", owner+"-ip-x"),
		"port 0":              leasedIP("web", 0, 80, "TCP", owner+"-ip-x"),
		"bad service name":    leasedIP("Web_1", 80, 80, "TCP", owner+"-ip-x"),
	} {
		if _, _, err := IPLease(lip); !errors.Is(err, ErrInvalidLeasedIP) {
			t.Errorf("%s: IPLease = %v, want ErrInvalidLeasedIP", name, err)
		}
	}
	for name, mutate := range map[string]func(*akashv1.ProviderLeasedIP){
		"owner not an address":    func(l *akashv1.ProviderLeasedIP) { l.Spec.LeaseID.Owner = "akash1alice" },
		"provider not an address": func(l *akashv1.ProviderLeasedIP) { l.Spec.LeaseID.Provider = "akash1provider" },
	} {
		lip := leasedIP("web", 80, 80, "TCP", owner+"-ip-x")
		mutate(lip)
		lip.Spec.SharingKey = lip.Spec.LeaseID.Owner + "-ip-x"
		if _, _, err := IPLease(lip); !errors.Is(err, ErrInvalidLeasedIP) || !errors.Is(err, ErrInvalidAddress) {
			t.Errorf("%s: IPLease = %v, want ErrInvalidLeasedIP and ErrInvalidAddress", name, err)
		}
	}
	bad := leasedIP("web", 80, 80, "TCP", owner+"-ip-x")
	bad.Spec.LeaseID.DSeq = "-1"
	if _, _, err := IPLease(bad); !errors.Is(err, ErrInvalidLeasedIP) {
		t.Errorf("negative dseq: %v", err)
	}
}

func TestRouteOptions(t *testing.T) {
	// Akash's defaults: 60 s read and send timeouts are a 60 s idle
	// timeout; next_timeout (60 s) leaves room for one retry after a
	// try that timed out, so 2 of the 3 tries.
	d := DefaultRouteOptions()
	if got := d.IdleTimeout(); got != 60_000 {
		t.Fatalf("default idle timeout %d ms, want 60000", got)
	}
	if rt := d.Retry(); *rt.Attempts != 1 || len(rt.Codes) != 0 {
		t.Fatalf("default retry %+v: want 1 retry (2 tries within next_timeout), no codes", rt)
	}
	for name, tc := range map[string]struct {
		o    RouteOptions
		want uint32
	}{
		"no next_timeout":         {RouteOptions{ReadTimeout: 60_000, NextTries: 5}, 5},
		"next_timeout fits 3":     {RouteOptions{ReadTimeout: 10_000, NextTries: 5, NextTimeout: 25_000}, 3},
		"next_timeout below idle": {RouteOptions{ReadTimeout: 60_000, NextTries: 5, NextTimeout: 1_000}, 1},
		"no idle timeout":         {RouteOptions{NextTries: 4, NextTimeout: 1_000}, 4},
	} {
		if got := tc.o.Tries(); got != tc.want {
			t.Errorf("%s: Tries = %d, want %d", name, got, tc.want)
		}
	}
	m := &akashv1.Manifest{Spec: akashv1.ManifestSpec{Group: akashv1.ManifestGroup{Services: []akashv1.ManifestService{{
		Name: "web", Count: 1, Expose: []akashv1.ManifestServiceExpose{
			{Port: 8080, ExternalPort: 80, Global: true, HTTPOptions: akashv1.ManifestServiceExposeHTTPOptions{
				MaxBodySize: 2 << 20, ReadTimeout: 1500, SendTimeout: 90_000, NextTries: 5, NextTimeout: 0, NextCases: []string{"error", "http_502", "503", "invalid_header"}}},
			{Port: 9000, Global: true},
		}}}}}}
	o, found := OptionsFor(m, "web", 80)
	if !found || o.MaxBodySize != 2<<20 {
		t.Fatalf("OptionsFor = %+v, %v", o, found)
	}
	rt := o.Retry()
	if got := o.IdleTimeout(); got != 90_000 {
		t.Fatalf("idle timeout %d ms, want the longer of read (1.5 s) and send (90 s)", got)
	}
	if *rt.Attempts != 4 || len(rt.Codes) != 2 || rt.Codes[0] != 502 || rt.Codes[1] != 503 {
		t.Fatalf("retry %+v", rt)
	}
	// An expose without http_options (max_body_size 0) gets the defaults,
	// found by its port when it has no external port.
	if o, found := OptionsFor(m, "web", 9000); !found || o.MaxBodySize != 1<<20 || o.NextTries != 3 {
		t.Fatalf("OptionsFor(9000) = %+v, %v", o, found)
	}
	if _, found := OptionsFor(m, "api", 80); found {
		t.Fatal("found an expose of a service that does not exist")
	}
	if o := (RouteOptions{NextTries: 3, NextCases: []string{"off"}}); o.Retry() != nil {
		t.Fatal("next_cases off still retries")
	}

	// Annotations: the body limit, and idempotent-only retries unless
	// next_cases lists non_idempotent (or nothing is retried).
	body, idem := shardgatev1alpha1.AnnotationMaxRequestBodyBytes, shardgatev1alpha1.AnnotationRetryIdempotentOnly
	idle, ws := shardgatev1alpha1.AnnotationIdleTimeout, shardgatev1alpha1.AnnotationWebSocket
	for name, tc := range map[string]struct {
		o    RouteOptions
		want map[string]string
	}{
		"defaults":       {DefaultRouteOptions(), map[string]string{body: "1048576", idem: "true", idle: "1m", ws: "true"}},
		"manifest":       {o, map[string]string{body: "2097152", idem: "true", idle: "1m30s", ws: "true"}},
		"non_idempotent": {RouteOptions{MaxBodySize: 4096, NextTries: 2, NextCases: []string{"error", "non_idempotent"}}, map[string]string{body: "4096", ws: "true"}},
		"off":            {RouteOptions{MaxBodySize: 4096, NextTries: 2, NextCases: []string{"off"}}, map[string]string{body: "4096", ws: "true"}},
		"one try":        {RouteOptions{MaxBodySize: 4096, NextTries: 1, NextCases: []string{"error"}}, map[string]string{body: "4096", ws: "true"}},
		"nothing":        {RouteOptions{}, map[string]string{ws: "true"}},
	} {
		if got := tc.o.Annotations(); !maps.Equal(got, tc.want) {
			t.Errorf("%s: Annotations = %v, want %v", name, got, tc.want)
		}
	}
	for ms, want := range map[uint64]string{1: "1ms", 1500: "1s500ms", 60_000: "1m", 3_600_000: "1h", 3_723_004: "1h2m3s4ms"} {
		if got := FormatDuration(ms); got != want {
			t.Errorf("FormatDuration(%d) = %q, want %q", ms, got, want)
		}
		if d, err := time.ParseDuration(FormatDuration(ms)); err != nil || d != time.Duration(ms)*time.Millisecond {
			t.Errorf("FormatDuration(%d) parses as %v, %v", ms, d, err)
		}
	}
}

// TestAPIJSON: the bodies use the field names of the provider's Go types.
func TestAPIJSON(t *testing.T) {
	l := Lease{Owner: owner, DSeq: 1234, GSeq: 1, OSeq: 2, Provider: provider}
	for name, tc := range map[string]struct {
		v    any
		keys []string
	}{
		"managed hostname": {ManagedHostname{LeaseID: l.JSON()}, []string{`"LeaseID":{"owner":`, `"dseq":1234,"gseq":1,"oseq":2,"provider":`, `"Namespace":`, `"ExternalPort":`, `"ServiceName":`, `"LastUpdate":`}},
		"ignore entry":     {IgnoreEntry{}, []string{`"hostnames":`, `"last-error":`, `"last-error-type":`, `"failed-at":`, `"failure-count":`, `"namespace":`}},
		"usage":            {AddressUsage{Available: 3, InUse: 1}, []string{`{"Available":3,"InUse":1}`}},
		"state":            {IPState{LastChangeTime: "x", LeaseID: l.JSON()}, []string{`"last-event-time":"x"`, `"lease-id":{"owner":`, `"namespace":`, `"port":`, `"external-port":`, `"service-name":`, `"sharing-key":`}},
		"lease ip status":  {LeaseIPStatus{}, []string{`{"Port":0,"ExternalPort":0,"ServiceName":"","IP":"","Protocol":""}`}},
		"error":            {ErrorResponse{Error: "e", Code: -1}, []string{`{"Error":"e","Code":-1}`}},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range tc.keys {
			if !strings.Contains(string(b), k) {
				t.Errorf("%s: %s lacks %s", name, b, k)
			}
		}
	}
}
