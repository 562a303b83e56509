package infra

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// Bootstrap constants: where things are inside the Envoy pod.
const (
	// XDSClusterName is the static cluster that reaches the shardgate xDS
	// Service.
	XDSClusterName = "shardgate-xds"
	// AdminAddress and AdminPort: Envoy's admin interface, on loopback
	// only (it can drain and stop Envoy; nothing outside the pod may reach
	// it).
	AdminAddress = "127.0.0.1"
	AdminPort    = 19000
	// ReadyListenerName and ReadyPort: a static listener on all addresses
	// that answers ReadyPath with 200 while Envoy is healthy and 503 once
	// it fails health checks (POST /healthcheck/fail, done by the preStop
	// hook). The kubelet probes it. The port is reserved: a Gateway listener
	// on 19001 cannot bind.
	ReadyListenerName = "shardgate-ready"
	ReadyPort         = 19001
	ReadyPath         = "/ready"
	// BootstrapKey is the ConfigMap key holding the bootstrap, mounted at
	// BootstrapDir.
	BootstrapKey  = "envoy.yaml"
	BootstrapDir  = "/etc/envoy"
	BootstrapPath = BootstrapDir + "/" + BootstrapKey
	// ClientCertDir holds the client certificate Secret's tls.crt, tls.key
	// and ca.crt.
	ClientCertDir = "/etc/shardgate/xds"
)

// NodeCluster is the Envoy node.cluster of a Gateway's Envoys,
// "<namespace>/<name>": the xDS server serves each Gateway's resources to
// that node group only.
func NodeCluster(gw types.NamespacedName) string { return gw.Namespace + "/" + gw.Name }

// bootstrapTemplate is a Gateway's Envoy bootstrap as YAML, with the only
// values that differ between Gateways and controller settings left as
// placeholders: templateNode (node.id and node.cluster, NodeCluster),
// templateXDSHost (Options.XDSHost) and templateXDSPort (Options.XDSPort).
//
// It is generated, never edited: the bootstrap is defined once, as
// go-control-plane protos (Bootstrap in bootstrap_proto_test.go, which
// describes its content), rendered with protojson and sigs.k8s.io/yaml;
// `go test ./internal/infra -run TestBootstrapTemplate -update` writes this
// file from it, and the test fails when the two differ. Rendering from the
// template keeps the bootstrap's protobuf types (and protojson) out of the
// running controller: their lazy initialisation stays in its heap for good.
//
//go:embed bootstrap.yaml.tmpl
var bootstrapTemplate string

// The placeholders of bootstrapTemplate, each standing for one YAML scalar.
const (
	templateNode    = "${NODE}"
	templateXDSHost = "${XDS_HOST}"
	templateXDSPort = "${XDS_PORT}"
)

// maxPort is the largest port Envoy accepts in a socket address
// (SocketAddress.port_value <= 65535).
const maxPort = 65535

// renderBootstrap renders gw's Envoy bootstrap (the ConfigMap's
// BootstrapKey) from bootstrapTemplate. Each value is rendered as a YAML
// scalar the way the full protojson+YAML rendering writes it (JSON, then
// sigs.k8s.io/yaml, so a host "true" or "::1" is quoted as there), and the
// result is byte for byte the protos' rendering. It refuses what the
// protos' validation (ValidateAll) refused of these values — an empty xDS
// host, an xDS port above maxPort — what protojson refused (invalid
// UTF-8), and what no Kubernetes name or host name holds and YAML would
// not write on one line (white space, control characters).
func renderBootstrap(gw types.NamespacedName, opts Options) (string, error) {
	opts = opts.withDefaults()
	if opts.XDSHost == "" {
		return "", errors.New("bootstrap: the xDS host is empty")
	}
	if opts.XDSPort > maxPort {
		return "", fmt.Errorf("bootstrap: xDS port %d is out of range 1-%d", opts.XDSPort, maxPort)
	}
	node, err := templateString("node", NodeCluster(gw))
	if err != nil {
		return "", err
	}
	host, err := templateString("xDS host", opts.XDSHost)
	if err != nil {
		return "", err
	}
	port, err := yamlScalar(opts.XDSPort)
	if err != nil {
		return "", err
	}
	return strings.NewReplacer(templateNode, node, templateXDSHost, host, templateXDSPort, port).Replace(bootstrapTemplate), nil
}

// templateString renders s as the YAML scalar the full rendering gives it,
// refusing a string YAML would not render on one line.
func templateString(what, s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("bootstrap: %s is not valid UTF-8", what)
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		return "", fmt.Errorf("bootstrap: %s %q holds white space or a control character", what, s)
	}
	return yamlScalar(s)
}

// yamlScalar renders v as the YAML scalar sigs.k8s.io/yaml gives a JSON
// value: how the protojson+YAML rendering writes it.
func yamlScalar(v any) (string, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("bootstrap: %v: %w", v, err)
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		return "", fmt.Errorf("bootstrap: %v: %w", v, err)
	}
	return strings.TrimSuffix(string(y), "\n"), nil
}
