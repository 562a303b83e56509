package infra

import (
	"os"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

const bootstrapTemplateFile = "bootstrap.yaml.tmpl"

// The embedded template is what the protos give (a golden file: -update
// rewrites it from Bootstrap).
func TestBootstrapTemplate(t *testing.T) {
	want, err := bootstrapTemplateFromProto()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{templateNode, templateXDSHost, templateXDSPort} {
		if !strings.Contains(want, p) {
			t.Errorf("the template has no %s", p)
		}
	}
	if *update {
		if err := os.WriteFile(bootstrapTemplateFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		// The embedded copy is the one compiled in, from before the rewrite.
		return
	}
	if bootstrapTemplate != want {
		t.Errorf("%s differs from what Bootstrap gives (run with -update):\n%s", bootstrapTemplateFile, want)
	}
}

var bootstrapInputs = []struct {
	name string
	gw   types.NamespacedName
	opts Options
}{
	{"defaults", types.NamespacedName{Namespace: "infra", Name: "edge"}, Options{}},
	{"numbers", types.NamespacedName{Namespace: "123", Name: "456"}, Options{}},
	{"float and exponent", types.NamespacedName{Namespace: "1", Name: "5e3"}, Options{XDSHost: "1.5", XDSPort: 1}},
	{"booleans and null", types.NamespacedName{Namespace: "true", Name: "null"}, Options{XDSHost: "true", XDSPort: 65535}},
	{"yes and no", types.NamespacedName{Namespace: "yes", Name: "no"}, Options{XDSHost: "null"}},
	{"tilde and octal", types.NamespacedName{Namespace: "0o17", Name: "0x1f"}, Options{XDSHost: "~"}},
	{"63 characters", types.NamespacedName{Namespace: strings.Repeat("n", 63), Name: strings.Repeat("g", 63)}, Options{XDSHost: strings.Repeat("h", 63) + "." + strings.Repeat("d", 63) + ".svc"}},
	{"253-character name", types.NamespacedName{Namespace: strings.Repeat("a", 63), Name: strings.Repeat("b.", 126) + "c"}, Options{}},
	{"IPv4 host", types.NamespacedName{Namespace: "infra", Name: "edge"}, Options{XDSHost: "10.96.0.10", XDSPort: 1}},
	{"IPv6 host", types.NamespacedName{Namespace: "infra", Name: "edge"}, Options{XDSHost: "fd00:10:96::a", XDSPort: 65535}},
	{"IPv6 loopback host", types.NamespacedName{Namespace: "infra", Name: "edge"}, Options{XDSHost: "::1", XDSPort: 18001}},
	{"YAML indicators", types.NamespacedName{Namespace: "-", Name: "'\"#&*!|>%@`"}, Options{XDSHost: "[x]{y}:,?"}},
	{"non-ASCII", types.NamespacedName{Namespace: "é", Name: "网关"}, Options{XDSHost: "xds.exämple"}},
	{"placeholder-looking", types.NamespacedName{Namespace: "${XDS_HOST}", Name: "${NODE}"}, Options{XDSHost: "${XDS_PORT}"}},
}

// The template renders every input byte for byte as the protos do, and the
// result reads back as a valid Bootstrap holding those values.
func TestBootstrapTemplateRendersAsTheProtos(t *testing.T) {
	for _, in := range bootstrapInputs {
		t.Run(in.name, func(t *testing.T) {
			want, err := protoBootstrapYAML(in.gw, in.opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := renderBootstrap(in.gw, in.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("the template gives\n%s\nthe protos\n%s", got, want)
			}
			b := parseBootstrap(t, got)
			opts := in.opts.withDefaults()
			if b.Node.GetId() != NodeCluster(in.gw) || b.Node.GetCluster() != NodeCluster(in.gw) {
				t.Errorf("node = %v, want %s", b.Node, NodeCluster(in.gw))
			}
			var xds bool
			for _, c := range b.StaticResources.GetClusters() {
				if c.Name != XDSClusterName {
					continue
				}
				xds = true
				a := c.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
				if a.GetAddress() != opts.XDSHost || a.GetPortValue() != opts.XDSPort {
					t.Errorf("xDS cluster points at %v, want %s:%d", a, opts.XDSHost, opts.XDSPort)
				}
				var tlsCtx tlsv3.UpstreamTlsContext
				if err := c.TransportSocket.GetTypedConfig().UnmarshalTo(&tlsCtx); err != nil {
					t.Fatal(err)
				}
				san := tlsCtx.GetCommonTlsContext().GetValidationContext().GetMatchTypedSubjectAltNames()
				if tlsCtx.GetSni() != opts.XDSHost || len(san) != 1 || san[0].GetMatcher().GetExact() != opts.XDSHost {
					t.Errorf("xDS TLS context names %q and %v, want %s", tlsCtx.GetSni(), san, opts.XDSHost)
				}
			}
			if !xds {
				t.Error("no xDS cluster")
			}
		})
	}
}

// What the bootstrap's validation refused in Build, and what the template
// cannot render on one line, is an error, not a ConfigMap.
func TestBootstrapRefusesInvalidInputs(t *testing.T) {
	gw := testGateway()
	key := types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
	for _, c := range []struct {
		name  string
		opts  Options
		want  string
		proto bool // the protos' validation refuses it too
	}{
		{"port 65536", Options{XDSPort: 65536}, "xDS port 65536 is out of range 1-65535", true},
		{"port 4294967295", Options{XDSPort: 1<<32 - 1}, "xDS port 4294967295 is out of range", true},
		{"host with a space", Options{XDSHost: "shardgate xds.svc"}, "xDS host \"shardgate xds.svc\" holds white space", false},
		{"host with a newline", Options{XDSHost: "shardgate-xds\n.svc"}, "holds white space or a control character", false},
		{"host with a NUL", Options{XDSHost: "shardgate-xds\x00.svc"}, "holds white space or a control character", false},
		{"host not UTF-8", Options{XDSHost: "shardgate-xds\xff.svc"}, "xDS host is not valid UTF-8", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, err := Build(gw, nil, c.opts, testCert())
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bootstrap of Gateway infra/edge is invalid") {
				t.Fatalf("Build = %v, %v; want an error with %q", o, err, c.want)
			}
			if _, err := protoBootstrapYAML(key, c.opts); (err != nil) != c.proto {
				t.Errorf("the protos give error %v", err)
			}
		})
	}
	// An empty host or port is the default, not an error.
	if _, err := renderBootstrap(key, Options{XDSHost: "", XDSPort: 0}); err != nil {
		t.Error(err)
	}
}

// Whatever the values, the template either refuses them or renders what
// the protos do.
func FuzzBootstrapTemplate(f *testing.F) {
	for _, in := range bootstrapInputs {
		f.Add(in.gw.Namespace, in.gw.Name, in.opts.XDSHost, in.opts.XDSPort)
	}
	f.Add("infra", "edge", "shardgate-xds.svc", uint32(70000))
	// YAML breaks a long scalar at its spaces, where the column decides.
	f.Add("a b", strings.Repeat("x ", 60), strings.Repeat("h ", 60), uint32(0))
	f.Add("a\nb", "c\td", "xds\n", uint32(0))
	f.Fuzz(func(t *testing.T, ns, name, host string, port uint32) {
		gw := types.NamespacedName{Namespace: ns, Name: name}
		opts := Options{XDSHost: host, XDSPort: port}
		got, err := renderBootstrap(gw, opts)
		if err != nil {
			return
		}
		want, err := protoBootstrapYAML(gw, opts)
		if err != nil {
			t.Fatalf("the template renders what the protos refuse (%v):\n%s", err, got)
		}
		if got != want {
			t.Fatalf("the template gives\n%s\nthe protos\n%s", got, want)
		}
	})
}

// parseBootstrap reads a bootstrap's YAML back as Envoy would (YAML to
// JSON, then protojson), and fails t unless it passes validation.
func parseBootstrap(t *testing.T, y string) *bootstrapv3.Bootstrap {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(js, &b); err != nil {
		t.Fatalf("the YAML does not parse back: %v", err)
	}
	if err := b.ValidateAll(); err != nil {
		t.Fatal(err)
	}
	return &b
}
