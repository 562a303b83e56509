package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/internal/autotls"
)

func TestDefault(t *testing.T) {
	// Literal values: the defaults are part of the public contract.
	want := Config{
		ControllerName: "shardgate.io/gateway-controller",
		XDS: XDSConfig{Address: ":18000", Limits: XDSLimits{
			StreamsPerIdentity: 128, StreamsPerCertificate: 64, ResourceNamesPerStream: 40000, MaxRequestBytes: 2097152,
		}},
		Envoy:          EnvoyConfig{Image: "envoyproxy/envoy:v1.37.0"},
		MetricsAddress: ":8080",
		HealthAddress:  ":8081",
		LeaderElection: LeaderElectionConfig{
			Enabled:   false,
			Namespace: "shardgate-system",
			ID:        "shardgate.io-leader",
		},
		Akash:  AkashConfig{Enabled: false, Namespace: "lease", APIAddress: ":8086", MetalLBPool: "default"},
		Shards: ShardsConfig{TenantLimits: TenantLimitsConfig{Routes: 500, Rules: 1000, Matches: 2000, RegularExpressions: 100}},
		Certificates: CertificatesConfig{OrdersPerIssuer: 300, OrdersWindow: "3h", CertificatesPerDomain: 50, DomainWindow: "168h",
			Backoff: "1h", MaxBackoff: "24h"},
	}
	if got := Default(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Default() = %+v, want %+v", got, want)
	}
	if Default().XDS.TLS.Enabled() {
		t.Fatal("Default() has TLS enabled")
	}
}

func TestParseEmptyIsDefault(t *testing.T) {
	for name, in := range map[string]string{
		"empty":         "",
		"whitespace":    "  \n\n",
		"comment only":  "# nothing here\n",
		"empty mapping": "{}",
		"doc marker":    "---\n",
		"null":          "null\n",
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Parse([]byte(in))
			if err != nil {
				t.Fatalf("Parse(%q): %v", in, err)
			}
			if !reflect.DeepEqual(got, Default()) {
				t.Fatalf("Parse(%q) = %+v, want Default()", in, got)
			}
		})
	}
}

const fullYAML = `
blockedHostnames:
  - example.com
  - .blocked.example
controllerName: example.net/my-controller
xds:
  address: "127.0.0.1:19000"
  tls:
    certFile: /tls/tls.crt
    keyFile: /tls/tls.key
    caFile: /tls/ca.crt
  debugEndpoint: true
  limits:
    streamsPerIdentity: 8
    streamsPerCertificate: 4
    resourceNamesPerStream: 25000
    maxRequestBytes: 1048576
envoy:
  image: "registry.example/envoy:v9"
  annotationPrefixes: ["service.beta.kubernetes.io/", " prometheus.io/", "prometheus.io/"]
metricsAddress: "0.0.0.0:9090"
healthAddress: "[::1]:9091"
leaderElection:
  enabled: true
  namespace: other-ns
  id: my-lease
namespaceOwnerAnnotation: akash.network/owner
requireNamespaceOwner: false
shardNamespaces: [shardgate-system, Edge-Shards ]
akash:
  enabled: true
  namespace: akash-manifests
  apiAddress: "127.0.0.1:18086"
  metalLBPool: leased-ips
shards:
  tenantLimits:
    routes: 20
    rules: 200
    matches: 400
    regularExpressions: 10
certificates:
  ordersPerIssuer: 20
  ordersWindow: 1h
  certificatesPerDomain: 5
  domainWindow: 24h
  backoff: 10m
  maxBackoff: " 2h "
`

var fullConfig = Config{
	BlockedHostnames: []string{".blocked.example", "example.com"},
	ControllerName:   "example.net/my-controller",
	XDS: XDSConfig{
		Address: "127.0.0.1:19000",
		TLS:     TLSConfig{CertFile: "/tls/tls.crt", KeyFile: "/tls/tls.key", CAFile: "/tls/ca.crt"},

		DebugEndpoint: true,
		Limits:        XDSLimits{StreamsPerIdentity: 8, StreamsPerCertificate: 4, ResourceNamesPerStream: 25000, MaxRequestBytes: 1 << 20},
	},
	Envoy:          EnvoyConfig{Image: "registry.example/envoy:v9", AnnotationPrefixes: []string{"prometheus.io/", "service.beta.kubernetes.io/"}},
	MetricsAddress: "0.0.0.0:9090",
	HealthAddress:  "[::1]:9091",
	LeaderElection: LeaderElectionConfig{Enabled: true, Namespace: "other-ns", ID: "my-lease"},

	NamespaceOwnerAnnotation: "akash.network/owner",
	RequireNamespaceOwner:    new(false),
	ShardNamespaces:          []string{"edge-shards", "shardgate-system"},
	Akash:                    AkashConfig{Enabled: true, Namespace: "akash-manifests", APIAddress: "127.0.0.1:18086", MetalLBPool: "leased-ips"},
	Shards:                   ShardsConfig{TenantLimits: TenantLimitsConfig{Routes: 20, Rules: 200, Matches: 400, RegularExpressions: 10}},
	Certificates: CertificatesConfig{OrdersPerIssuer: 20, OrdersWindow: "1h", CertificatesPerDomain: 5, DomainWindow: "24h",
		Backoff: "10m", MaxBackoff: "2h"},
}

func TestParseEveryKey(t *testing.T) {
	// Guard: fullConfig must set every leaf field to a non-default value, so
	// a key added to Config but not to this test makes the test fail.
	assertEveryLeafDiffers(t, "", reflect.ValueOf(fullConfig), reflect.ValueOf(Default()))

	got, err := Parse([]byte(fullYAML))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if !reflect.DeepEqual(got, fullConfig) {
		t.Fatalf("Parse =\n%+v\nwant\n%+v", got, fullConfig)
	}
	if !got.XDS.TLS.Enabled() {
		t.Fatal("TLS.Enabled() = false with all files set")
	}
}

func assertEveryLeafDiffers(t *testing.T, path string, a, b reflect.Value) {
	t.Helper()
	if a.Kind() == reflect.Struct {
		for i := range a.NumField() {
			assertEveryLeafDiffers(t, joinPath(path, jsonName(a.Type().Field(i))), a.Field(i), b.Field(i))
		}
		return
	}
	if reflect.DeepEqual(a.Interface(), b.Interface()) {
		t.Errorf("test fixture fullConfig leaves %s at its default; set it so Parse is tested for it", path)
	}
}

func TestParseRoundTrip(t *testing.T) {
	for name, c := range map[string]Config{"default": Default(), "full": fullConfig} {
		t.Run(name, func(t *testing.T) {
			data, err := yaml.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse(Marshal(c)): %v\n%s", err, data)
			}
			if !reflect.DeepEqual(got, c) {
				t.Fatalf("round trip = %+v, want %+v", got, c)
			}
		})
	}
}

func TestParseDefaultsForAbsentNullAndEmpty(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want func(*Config)
	}{
		{"empty strings", `{controllerName: "", metricsAddress: "", xds: {address: ""}, envoy: {image: ""}}`, nil},
		{"nulls", "controllerName:\nxds:\nenvoy: ~\nleaderElection: null\nblockedHostnames:\n", nil},
		{"empty list", "blockedHostnames: []\n", nil},
		{"partial nested", "leaderElection:\n  enabled: true\n", func(c *Config) { c.LeaderElection.Enabled = true }},
		{"xds address only", "xds:\n  address: \":1\"\n", func(c *Config) { c.XDS.Address = ":1" }},
		{"metrics disabled", "metricsAddress: \"0\"\nhealthAddress: \"0\"\n", func(c *Config) {
			c.MetricsAddress, c.HealthAddress = "0", "0"
		}},
		{"json document", `{"blockedHostnames": ["a.example"]}`, func(c *Config) { c.BlockedHostnames = []string{"a.example"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := Default()
			if tt.want != nil {
				tt.want(&want)
			}
			got, err := Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Parse = %+v, want %+v", got, want)
			}
		})
	}
}

func TestParseBlockedHostnamesNormalised(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"uppercase", []string{"Example.COM"}, []string{"example.com"}},
		{"suffix uppercase", []string{".Blocked.Example"}, []string{".blocked.example"}},
		{"trimmed", []string{"  a.example\t"}, []string{"a.example"}},
		{"trailing dot", []string{"a.example.", ".b.example."}, []string{".b.example", "a.example"}},
		{"duplicates after normalising", []string{"A.example", "a.example.", " a.example ", "a.example"}, []string{"a.example"}},
		{"exact and suffix kept apart", []string{"x.example", ".x.example"}, []string{".x.example", "x.example"}},
		{"sorted", []string{"c.example", "a.example", "b.example"}, []string{"a.example", "b.example", "c.example"}},
		{"single label", []string{"localhost"}, []string{"localhost"}},
		{"digits and hyphens", []string{"1-2.x-y.example"}, []string{"1-2.x-y.example"}},
		{"63-char label", []string{strings.Repeat("a", 63) + ".example"}, []string{strings.Repeat("a", 63) + ".example"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := yaml.Marshal(map[string]any{"blockedHostnames": tt.in})
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(doc)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got.BlockedHostnames, tt.want) {
				t.Fatalf("BlockedHostnames = %q, want %q", got.BlockedHostnames, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string // substrings the error must contain
		notWant []string // substrings it must not contain
	}{
		// unknown keys, named by path
		{"unknown top-level key", "blockedHostname: [a.example]\n", []string{`unknown key "blockedHostname"`}, nil},
		{"unknown nested key", "xds:\n  tlss: {}\n", []string{`unknown key "xds.tlss"`}, nil},
		{"unknown deeply nested key", "xds:\n  tls:\n    certfile: /x\n", []string{`unknown key "xds.tls.certfile"`}, nil},
		{"unknown key in leaderElection", "leaderElection:\n  enable: true\n", []string{`unknown key "leaderElection.enable"`}, nil},
		{"unknown key in envoy", "envoy:\n  img: x\n", []string{`unknown key "envoy.img"`}, nil},
		{"keys are case-sensitive", "ControllerName: a.example/x\n", []string{`unknown key "ControllerName"`}, nil},
		{"every unknown key reported", "foo: 1\nxds:\n  bar: 2\n", []string{`unknown key "foo"`, `unknown key "xds.bar"`}, nil},
		{"unknown key and bad value reported together", "foo: 1\nblockedHostnames: [\"a..b\"]\n", []string{`unknown key "foo"`, `blockedHostnames[0]: "a..b"`}, nil},
		{"unknown case-variant keys are not decoded", "ControllerName: [a]\nBlockedHostnames: [\"a..b\"]\n",
			[]string{`unknown key "ControllerName"`, `unknown key "BlockedHostnames"`}, []string{"internal error", "blockedHostnames[0]"}},
		{"type error suppresses value checks", "metricsAddress: [a]\nhealthAddress: abc\n", []string{"metricsAddress: expected a string"}, []string{"healthAddress"}},

		// wrong YAML types, named by path
		{"string where list expected", "blockedHostnames: example.com\n", []string{`blockedHostnames: expected a list, got string "example.com"`}, nil},
		{"mapping where list expected", "blockedHostnames: {a: b}\n", []string{"blockedHostnames: expected a list, got a mapping"}, nil},
		{"number in list", "blockedHostnames: [a.example, 7]\n", []string{"blockedHostnames[1]: expected a string, got number 7"}, nil},
		{"null in list", "blockedHostnames: [a.example, ~]\n", []string{"blockedHostnames[1]: expected a string, got null"}, nil},
		{"string where mapping expected", "xds: \":18000\"\n", []string{`xds: expected a mapping, got string ":18000"`}, nil},
		{"list where string expected", "controllerName: [a]\n", []string{"controllerName: expected a string, got a list"}, nil},
		{"number where string expected", "metricsAddress: 8080\n", []string{"metricsAddress: expected a string, got number 8080", `quote it: "8080"`}, nil},
		{"string where bool expected", "leaderElection:\n  enabled: \"true\"\n", []string{`leaderElection.enabled: expected a boolean (true or false), got string "true"`}, nil},
		{"nested wrong type", "xds:\n  tls: [a]\n", []string{"xds.tls: expected a mapping, got a list"}, nil},
		{"top level is a list", "- a\n- b\n", []string{"document must be a mapping"}, nil},
		{"top level is a scalar", "hello\n", []string{"document must be a mapping"}, nil},

		// YAML syntax
		{"duplicate key", "controllerName: a.example/x\ncontrollerName: b.example/y\n", []string{"invalid YAML", `key "controllerName" already set`}, nil},
		{"syntax error", "blockedHostnames: [a\n", []string{"invalid YAML"}, nil},

		// block list values
		{"bad hostname named with index", "blockedHostnames: [a.example, b.example, \"a..b\"]\n", []string{`blockedHostnames[2]: "a..b" is not a valid hostname or .suffix`}, nil},
		{"wildcard", "blockedHostnames: [\"*.x.example\"]\n", []string{`blockedHostnames[0]: "*.x.example"`, "wildcard", `use ".x.example"`}, nil},
		{"bare star", "blockedHostnames: [\"*\"]\n", []string{`blockedHostnames[0]: "*" is not a valid hostname or .suffix`}, nil},
		{"empty entry", "blockedHostnames: [\"\"]\n", []string{`blockedHostnames[0]: "" is not a valid hostname or .suffix`}, nil},
		{"only a dot", "blockedHostnames: [\".\"]\n", []string{`blockedHostnames[0]: "." is not a valid hostname or .suffix`}, nil},
		{"double leading dot", "blockedHostnames: [\"..a.example\"]\n", []string{`blockedHostnames[0]: "..a.example" is not`}, nil},
		{"underscore", "blockedHostnames: [a_b.example]\n", []string{`blockedHostnames[0]: "a_b.example" is not`}, nil},
		{"leading hyphen label", "blockedHostnames: [-a.example]\n", []string{`blockedHostnames[0]: "-a.example" is not`}, nil},
		{"inner space", "blockedHostnames: [\"a b.example\"]\n", []string{`blockedHostnames[0]: "a b.example" is not`}, nil},
		{"url", "blockedHostnames: [\"https://a.example\"]\n", []string{`blockedHostnames[0]: "https://a.example" is not`}, nil},
		{"64-char label", "blockedHostnames: [" + strings.Repeat("a", 64) + ".example]\n", []string{"blockedHostnames[0]:", "is not a valid hostname"}, nil},
		{"254-char name", "blockedHostnames: [" + strings.Repeat("abcdefghi.", 25) + "abcd]\n", []string{"blockedHostnames[0]:", "is not a valid hostname"}, nil},
		{"every bad entry reported", "blockedHostnames: [\"a..b\", ok.example, \"*.c\"]\n", []string{"blockedHostnames[0]:", "blockedHostnames[2]:"}, nil},

		// other values
		{"tls cert only", "xds:\n  tls:\n    certFile: /c\n", []string{"xds.tls: certFile, keyFile and caFile must be set together", "missing: keyFile, caFile"}, nil},
		{"tls without ca", "xds:\n  tls: {certFile: /c, keyFile: /k}\n", []string{"xds.tls: certFile, keyFile and caFile must be set together", "missing: caFile"}, nil},
		{"metrics not host:port", "metricsAddress: abc\n", []string{`metricsAddress: "abc" is not host:port`}, nil},
		{"health not host:port", "healthAddress: \"localhost\"\n", []string{`healthAddress: "localhost" is not host:port`}, nil},
		{"xds port out of range", "xds:\n  address: \":99999\"\n", []string{`xds.address: ":99999" is not host:port`, "0 to 65535"}, nil},
		{"xds named port", "xds:\n  address: \":grpc\"\n", []string{`xds.address: ":grpc" is not host:port`}, nil},
		{"xds disable not allowed", "xds:\n  address: \"0\"\n", []string{`xds.address: "0" is not host:port`}, nil},
		{"bad listen host", "metricsAddress: \"bad_host:80\"\n", []string{`metricsAddress: "bad_host:80"`, "not an IP address or hostname"}, nil},
		{"controllerName without path", "controllerName: shardgate.io\n", []string{`controllerName: "shardgate.io" is not a domain-prefixed path`}, nil},
		{"envoy image with space", "envoy:\n  image: \"envoy :v1\"\n", []string{`envoy.image: "envoy :v1" must not contain whitespace`}, nil},
		{"envoy annotation prefix without a slash", "envoy:\n  annotationPrefixes: [\"prometheus.io\", \"/\"]\n", []string{`envoy.annotationPrefixes[0]: "prometheus.io" is not an annotation key prefix such as "prometheus.io/"`, `envoy.annotationPrefixes[1]: "/" is not an annotation key prefix`}, nil},
		{"leader namespace", "leaderElection:\n  namespace: Bad_NS\n", []string{`leaderElection.namespace: "Bad_NS" is not a valid namespace name`}, nil},
		{"leader id", "leaderElection:\n  id: \"a/b\"\n", []string{`leaderElection.id: "a/b" is not a valid Lease name`}, nil},
		{"owner annotation", "namespaceOwnerAnnotation: \"a b\"\n", []string{`namespaceOwnerAnnotation: "a b" is not a valid annotation key`}, nil},
		{"shard namespace", "shardNamespaces: [\"a_b\"]\n", []string{`shardNamespaces[0]: "a_b" is not a valid namespace name`}, nil},
		{"akash pool", "akash:\n  metalLBPool: Leased_IPs\n", []string{`akash.metalLBPool: "Leased_IPs" is not a valid IPAddressPool name`}, nil},
		{"require owner not a bool", "requireNamespaceOwner: \"no\"\n", []string{`requireNamespaceOwner: expected a boolean`}, nil},
		{"owner annotation bad prefix", "namespaceOwnerAnnotation: \"Foo_/x\"\n", []string{`namespaceOwnerAnnotation: "Foo_/x"`}, nil},
		{"xds limit not an integer", "xds:\n  limits:\n    streamsPerIdentity: \"64\"\n", []string{`xds.limits.streamsPerIdentity: expected an integer, got string "64"`}, nil},
		{"xds limit a fraction", "xds:\n  limits:\n    resourceNamesPerStream: 1.5\n", []string{`xds.limits.resourceNamesPerStream: expected an integer, got number 1.5`}, nil},
		{"xds limit negative", "xds:\n  limits:\n    streamsPerCertificate: -1\n", []string{`xds.limits.streamsPerCertificate: -1 must be positive`}, nil},
		{"xds request size too small", "xds:\n  limits:\n    maxRequestBytes: 1000\n", []string{`xds.limits.maxRequestBytes: 1000 is less than 16384`}, nil},
		{"xds request size too large", "xds:\n  limits:\n    maxRequestBytes: 1073741824\n", []string{`xds.limits.maxRequestBytes: 1073741824 is more than`}, nil},
		{"unknown xds limit", "xds:\n  limits:\n    streamsPerNode: 3\n", []string{`unknown key "xds.limits.streamsPerNode"`}, nil},
		{"all value errors reported", "metricsAddress: abc\nhealthAddress: def\n", []string{"metricsAddress:", "healthAddress:"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error containing %q", tt.in, got, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse(%q) error\n  %v\nwant it to contain\n  %s", tt.in, err, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(err.Error(), w) {
					t.Errorf("Parse(%q) error\n  %v\nwant it not to contain\n  %s", tt.in, err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestParseAcceptsValidValues(t *testing.T) {
	for name, in := range map[string]string{
		"ipv6 any":             "xds:\n  address: \"[::]:18000\"\n",
		"hostname host":        "metricsAddress: \"localhost:8080\"\n",
		"port zero":            "healthAddress: \":0\"\n",
		"annotation no prefix": "namespaceOwnerAnnotation: owner\n",
		"yaml 1.1 bool":        "leaderElection:\n  enabled: yes\n",
		"controller path":      "controllerName: a.example/some/path_x\n",
		"image digest":         "envoy:\n  image: \"r.example:5000/envoy@sha256:abc\"\n",
		"tls whitespace-only":  "xds:\n  tls: {certFile: \" \", keyFile: \"\", caFile: \"\"}\n",
		"xds limit zero":       "xds:\n  limits: {streamsPerIdentity: 0}\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse([]byte(in)); err != nil {
				t.Fatalf("Parse(%q): %v", in, err)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()

	good := filepath.Join(dir, "good.yaml")
	writeFile(t, good, "blockedHostnames: [A.example]\n")
	cfg, err := Load(good)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if want := []string{"a.example"}; !reflect.DeepEqual(cfg.BlockedHostnames, want) {
		t.Fatalf("BlockedHostnames = %q, want %q", cfg.BlockedHostnames, want)
	}

	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, "blockedHostname: [a.example]\n")
	_, err = Load(bad)
	if want := "config " + bad + `: unknown key "blockedHostname"`; err == nil || err.Error() != want {
		t.Fatalf("Load(bad) error = %v, want %q", err, want)
	}
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 {
		t.Fatalf("Load(bad) error does not unwrap to Errors with one entry: %#v", err)
	}

	empty := filepath.Join(dir, "empty.yaml")
	writeFile(t, empty, "")
	if cfg, err := Load(empty); err != nil || !reflect.DeepEqual(cfg, Default()) {
		t.Fatalf("Load(empty) = %+v, %v; want Default()", cfg, err)
	}

	missing := filepath.Join(dir, "missing.yaml")
	_, err = Load(missing)
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "config "+missing+": ") {
		t.Fatalf("Load(missing) error = %v, want a prefixed fs.ErrNotExist", err)
	}
}

func TestDeepCopy(t *testing.T) {
	c := fullConfig.DeepCopy()
	c.BlockedHostnames[0] = "changed.example"
	if fullConfig.BlockedHostnames[0] == "changed.example" {
		t.Fatal("DeepCopy shares BlockedHostnames")
	}
}

func TestChangedKeys(t *testing.T) {
	a := Default()
	b := Default()
	b.BlockedHostnames = []string{"x.example"}
	b.XDS.TLS.CAFile = "/ca"
	if got, want := changedKeys(a, b), []string{"blockedHostnames", "xds"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("changedKeys = %q, want %q", got, want)
	}
	if got := changedKeys(a, a); got != nil {
		t.Fatalf("changedKeys(a, a) = %q, want nil", got)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOwnerPolicy(t *testing.T) {
	d := Default()
	if p := d.OwnerPolicy(); !p.RequireOwner || !reflect.DeepEqual(p.Keys, []string{"shardgate.io/owner"}) {
		t.Fatalf("default OwnerPolicy = %+v, want shardgate.io/owner, required", p)
	}
	if p := fullConfig.OwnerPolicy(); p.RequireOwner || !reflect.DeepEqual(p.Keys, []string{"shardgate.io/owner", "akash.network/owner", "akash.network/lease.id.owner"}) {
		t.Fatalf("OwnerPolicy = %+v", p)
	}
	c := Default()
	c.NamespaceOwnerAnnotation = "shardgate.io/owner"
	if p := c.OwnerPolicy(); !reflect.DeepEqual(p.Keys, []string{"shardgate.io/owner"}) {
		t.Fatalf("OwnerPolicy repeats the default key: %+v", p)
	}
}

// TestTenantLimits: absent or 0 takes each default; a negative value, a
// fraction or a string is an error naming its key.
func TestTenantLimits(t *testing.T) {
	got, err := Parse([]byte("shards:\n  tenantLimits:\n    routes: 5\n    matches: 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := TenantLimitsConfig{Routes: 5, Rules: DefaultTenantRules, Matches: DefaultTenantMatches, RegularExpressions: DefaultTenantRegularExpressions}
	if got.Shards.TenantLimits != want {
		t.Fatalf("tenantLimits = %+v, want %+v", got.Shards.TenantLimits, want)
	}
	for doc, msg := range map[string]string{
		"shards: {tenantLimits: {rules: -1}}":                 "shards.tenantLimits.rules: -1 must not be negative",
		"shards: {tenantLimits: {matches: 1.5}}":              "shards.tenantLimits.matches: expected an integer, got number 1.5",
		"shards: {tenantLimits: {regularExpressions: \"9\"}}": "shards.tenantLimits.regularExpressions: expected an integer, got string",
		"shards: {tenantLimit: {}}":                           `unknown key "shards.tenantLimit"`,
	} {
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %v, want %q", doc, err, msg)
		}
	}
}

// TestCertificatesConfig: absent keys take Let's Encrypt's limits; bad
// counts and durations are errors naming their key; Limits hands the
// values to the pacer.
func TestCertificatesConfig(t *testing.T) {
	got, err := Parse([]byte("certificates:\n  ordersPerIssuer: 7\n  backoff: 30m\n"))
	if err != nil {
		t.Fatal(err)
	}
	l := got.Certificates.Limits()
	if l.Orders != 7 || l.OrdersWindow != 3*time.Hour || l.DomainCertificates != 50 || l.DomainWindow != 168*time.Hour ||
		l.BackoffInitial != 30*time.Minute || l.BackoffMax != 24*time.Hour {
		t.Fatalf("limits = %+v", l)
	}
	if d := Default().Certificates.Limits(); d != autotls.DefaultLimits() {
		t.Fatalf("default limits %+v, want %+v", d, autotls.DefaultLimits())
	}
	for doc, msg := range map[string]string{
		"certificates: {ordersPerIssuer: -1}":           "certificates.ordersPerIssuer: -1 must be positive",
		"certificates: {domainWindow: week}":            `certificates.domainWindow: "week" is not a duration`,
		"certificates: {ordersWindow: -3h}":             `certificates.ordersWindow: "-3h" must be positive`,
		"certificates: {backoff: 2h, maxBackoff: 1h}":   `certificates.maxBackoff: "1h" is shorter than certificates.backoff "2h"`,
		"certificates: {certificatesPerDomain: \"50\"}": "certificates.certificatesPerDomain: expected an integer",
		"certificates: {orderWindow: 1h}":               `unknown key "certificates.orderWindow"`,
	} {
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %v, want %q", doc, err, msg)
		}
	}
}
