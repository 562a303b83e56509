/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	"sigs.k8s.io/yaml"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/ir"
)

var update = flag.Bool("update", false, "rewrite the golden *.out.yaml files")

// Golden input conventions (testdata/<case>.in.yaml):
//
//   - A multi-document YAML of Kubernetes objects, decoded by kind.
//   - A Secret annotated test.shardgate.io/cert: valid gets tls.crt and
//     tls.key filled from testdata/tls.crt and testdata/tls.key.
//   - A ConfigMap or Secret annotated test.shardgate.io/ca: valid gets
//     ca.crt filled from testdata/tls.crt (a CA bundle of one certificate).
//   - Runtime facts use a document of the pseudo kind GatewayRuntime
//     (apiVersion test.shardgate.io/v1), named like the Gateway, with the
//     fields of GatewayRuntime at the top level: addresses, addressReason,
//     addressMessage, publishError.
//   - Ownership facts (Input.Ownership, which the controller computes from
//     LeaseHosts, Namespaces and the block list) use one document of the
//     pseudo kind Ownership (apiVersion test.shardgate.io/v1), see
//     ownershipDoc; without it Ownership is nil (no shard).
//   - Shard facts (Input.Ownership, Input.TenantLimits) use one document
//     of the pseudo kind ShardFacts (apiVersion test.shardgate.io/v1) with
//     shards ("ns/name": Generated or Owned), namespaceOwners, holders
//     (name: owner) and tenantLimits {routes, rules, matches,
//     regularExpressions}.
//   - The controller name is shardgate.io/gateway-controller.
//
// Output (<case>.out.yaml): the Output with map keys as "ns/name" and Secret
// bytes replaced by a short digest so that the files stay readable.

const testController = "shardgate.io/gateway-controller"

type runtimeDoc struct {
	Metadata struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"metadata"`
	Addresses      []gatewayv1.GatewayStatusAddress `json:"addresses,omitempty"`
	AddressReason  string                           `json:"addressReason,omitempty"`
	AddressMessage string                           `json:"addressMessage,omitempty"`
	PublishError   string                           `json:"publishError,omitempty"`
}

// ownershipDoc is the golden form of Ownership: maps keyed by
// "namespace/name".
type ownershipDoc struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Shards: each shard Gateway's routes mode (Generated or Owned).
	Shards map[string]ShardRoutes `json:"shards"`
	// Generated: each generated HTTPRoute's LeaseHost UID and the names it
	// holds per shard.
	Generated map[string]struct {
		LeaseHost types.UID           `json:"leaseHost"`
		Hosts     map[string][]string `json:"hosts"`
		Unowned   bool                `json:"unowned,omitempty"`
	} `json:"generated"`
	NamespaceOwners map[string]string `json:"namespaceOwners"`
	Holders         map[string]string `json:"holders"`
	Blocked         []string          `json:"blocked,omitempty"`
}

func (d *ownershipDoc) ownership() (*Ownership, error) {
	key := func(s string) (types.NamespacedName, error) {
		ns, name, ok := strings.Cut(s, "/")
		if !ok || ns == "" || name == "" {
			return types.NamespacedName{}, fmt.Errorf("%q is not namespace/name", s)
		}
		return types.NamespacedName{Namespace: ns, Name: name}, nil
	}
	o := &Ownership{Shards: map[types.NamespacedName]ShardRoutes{}, Generated: map[types.NamespacedName]GeneratedRoute{},
		NamespaceOwners: d.NamespaceOwners, Holders: d.Holders}
	for s, mode := range d.Shards {
		k, err := key(s)
		if err != nil {
			return nil, err
		}
		o.Shards[k] = mode
	}
	for r, g := range d.Generated {
		k, err := key(r)
		if err != nil {
			return nil, err
		}
		gr := GeneratedRoute{LeaseHost: g.LeaseHost, Unowned: g.Unowned, Hosts: map[types.NamespacedName][]string{}}
		for s, hosts := range g.Hosts {
			sk, err := key(s)
			if err != nil {
				return nil, err
			}
			gr.Hosts[sk] = hosts
		}
		o.Generated[k] = gr
	}
	if len(d.Blocked) > 0 {
		bl, err := hostnames.NewBlockList(d.Blocked...)
		if err != nil {
			return nil, err
		}
		o.Blocked = bl
	}
	return o, nil
}

// shardFactsDoc is the golden form of a shard's facts with tenant limits.
type shardFactsDoc struct {
	APIVersion      string                 `json:"apiVersion"`
	Kind            string                 `json:"kind"`
	Metadata        map[string]string      `json:"metadata,omitempty"`
	Shards          map[string]ShardRoutes `json:"shards"`
	NamespaceOwners map[string]string      `json:"namespaceOwners"`
	Holders         map[string]string      `json:"holders"`
	TenantLimits    struct {
		Routes             int `json:"routes"`
		Rules              int `json:"rules"`
		Matches            int `json:"matches"`
		RegularExpressions int `json:"regularExpressions"`
	} `json:"tenantLimits"`
}

func (d *shardFactsDoc) facts() (*Ownership, TenantLimits) {
	o := &Ownership{Shards: map[types.NamespacedName]ShardRoutes{}, Generated: map[types.NamespacedName]GeneratedRoute{},
		NamespaceOwners: d.NamespaceOwners, Holders: d.Holders}
	for k, mode := range d.Shards {
		ns, name, _ := strings.Cut(k, "/")
		o.Shards[types.NamespacedName{Namespace: ns, Name: name}] = mode
	}
	l := d.TenantLimits
	return o, TenantLimits{Routes: l.Routes, Rules: l.Rules, Matches: l.Matches, RegularExpressions: l.RegularExpressions}
}

func loadInput(t testing.TB, path string) *Input {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	in, err := decodeInput(raw)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return in
}

func decodeInput(raw []byte) (*Input, error) {
	crt, err := os.ReadFile("testdata/tls.crt")
	if err != nil {
		return nil, err
	}
	key, err := os.ReadFile("testdata/tls.key")
	if err != nil {
		return nil, err
	}
	in := &Input{ControllerName: testController, Runtime: map[types.NamespacedName]GatewayRuntime{}}
	for i, doc := range strings.Split(string(raw), "\n---") {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var tm struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		into := func(obj any) error {
			return yaml.UnmarshalStrict([]byte(doc), obj)
		}
		switch tm.Kind {
		case "GatewayClass":
			o := &gatewayv1.GatewayClass{}
			err = into(o)
			in.GatewayClasses = append(in.GatewayClasses, o)
		case "Gateway":
			o := &gatewayv1.Gateway{}
			err = into(o)
			in.Gateways = append(in.Gateways, o)
		case "ListenerSet":
			o := &gatewayv1.ListenerSet{}
			err = into(o)
			in.ListenerSets = append(in.ListenerSets, o)
		case "HTTPRoute":
			o := &gatewayv1.HTTPRoute{}
			err = into(o)
			in.HTTPRoutes = append(in.HTTPRoutes, o)
		case "GRPCRoute":
			o := &gatewayv1.GRPCRoute{}
			err = into(o)
			in.GRPCRoutes = append(in.GRPCRoutes, o)
		case "TLSRoute":
			o := &gatewayv1.TLSRoute{}
			err = into(o)
			in.TLSRoutes = append(in.TLSRoutes, o)
		case "TCPRoute":
			o := &gatewayv1.TCPRoute{}
			err = into(o)
			in.TCPRoutes = append(in.TCPRoutes, o)
		case "ReferenceGrant":
			o := &gatewayv1beta1.ReferenceGrant{}
			err = into(o)
			in.ReferenceGrants = append(in.ReferenceGrants, o)
		case "Service":
			o := &corev1.Service{}
			err = into(o)
			in.Services = append(in.Services, o)
		case "Secret":
			o := &corev1.Secret{}
			err = into(o)
			if o.Annotations["test.shardgate.io/cert"] == "valid" {
				if o.Data == nil {
					o.Data = map[string][]byte{}
				}
				o.Data[corev1.TLSCertKey] = crt
				o.Data[corev1.TLSPrivateKeyKey] = key
			}
			if o.Annotations["test.shardgate.io/ca"] == "valid" {
				if o.Data == nil {
					o.Data = map[string][]byte{}
				}
				o.Data["ca.crt"] = crt
			}
			in.Secrets = append(in.Secrets, o)
		case "ConfigMap":
			o := &corev1.ConfigMap{}
			err = into(o)
			if o.Annotations["test.shardgate.io/ca"] == "valid" {
				if o.Data == nil {
					o.Data = map[string]string{}
				}
				o.Data["ca.crt"] = string(crt)
			}
			in.ConfigMaps = append(in.ConfigMaps, o)
		case "Namespace":
			o := &corev1.Namespace{}
			err = into(o)
			in.Namespaces = append(in.Namespaces, o)
		case "GatewayParameters":
			o := &shardgatev1alpha1.GatewayParameters{}
			err = into(o)
			in.GatewayParameters = append(in.GatewayParameters, o)
		case "BackendTLSPolicy":
			o := &gatewayv1.BackendTLSPolicy{}
			err = into(o)
			in.BackendTLSPolicies = append(in.BackendTLSPolicies, o)
		case "GatewayRuntime":
			o := &runtimeDoc{}
			if err = yaml.Unmarshal([]byte(doc), o); err == nil {
				in.Runtime[types.NamespacedName{Namespace: o.Metadata.Namespace, Name: o.Metadata.Name}] = GatewayRuntime{
					Addresses: o.Addresses, AddressReason: o.AddressReason,
					AddressMessage: o.AddressMessage, PublishError: o.PublishError,
				}
			}
		case "Ownership":
			o := &ownershipDoc{}
			if err = into(o); err == nil {
				in.Ownership, err = o.ownership()
			}
		case "ShardFacts":
			o := &shardFactsDoc{}
			if err = yaml.UnmarshalStrict([]byte(doc), o); err == nil {
				in.Ownership, in.TenantLimits = o.facts()
			}
		default:
			return nil, fmt.Errorf("document %d: unknown kind %q", i, tm.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i, tm.Kind, err)
		}
	}
	return in, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

type goldenOutput struct {
	GatewayClasses  map[string]gatewayv1.GatewayClassStatus     `json:"gatewayClasses,omitempty"`
	GatewayStatus   map[string]gatewayv1.GatewayStatus          `json:"gatewayStatus,omitempty"`
	HTTPRouteStatus map[string][]gatewayv1.RouteParentStatus    `json:"httpRouteStatus,omitempty"`
	GRPCRouteStatus map[string][]gatewayv1.RouteParentStatus    `json:"grpcRouteStatus,omitempty"`
	TLSRouteStatus  map[string][]gatewayv1.RouteParentStatus    `json:"tlsRouteStatus,omitempty"`
	TCPRouteStatus  map[string][]gatewayv1.RouteParentStatus    `json:"tcpRouteStatus,omitempty"`
	ListenerSets    map[string]gatewayv1.ListenerSetStatus      `json:"listenerSetStatus,omitempty"`
	PolicyStatus    map[string][]gatewayv1.PolicyAncestorStatus `json:"backendTLSPolicyStatus,omitempty"`
	Gateways        []*ir.Gateway                               `json:"gateways,omitempty"`
}

func nnMap[V any](m map[types.NamespacedName]V) map[string]V {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k.Namespace+"/"+k.Name] = v
	}
	return out
}

func digest(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return []byte(fmt.Sprintf("sha256:%x", sha256.Sum256(b))[:15])
}

// renderOutput serialises out. supportedFeatures is the constant
// SupportedFeatures list; it is rendered only when full is set (the
// gatewayclass-* cases) so that the other goldens stay short.
func renderOutput(t testing.TB, out *Output, full bool) []byte {
	t.Helper()
	g := goldenOutput{
		GatewayClasses:  maps.Clone(out.GatewayClasses), // out is read-only
		GatewayStatus:   nnMap(out.GatewayStatus),
		HTTPRouteStatus: nnMap(maps.Collect(out.HTTPRouteStatus.All())),
		GRPCRouteStatus: nnMap(maps.Collect(out.GRPCRouteStatus.All())),
		TLSRouteStatus:  nnMap(maps.Collect(out.TLSRouteStatus.All())),
		TCPRouteStatus:  nnMap(maps.Collect(out.TCPRouteStatus.All())),
		ListenerSets:    nnMap(out.ListenerSetStatus),
		PolicyStatus:    nnMap(out.BackendTLSPolicyStatus),
	}
	if len(g.GatewayClasses) == 0 {
		g.GatewayClasses = nil
	}
	if !full {
		for k, v := range g.GatewayClasses {
			v.SupportedFeatures = nil
			g.GatewayClasses[k] = v
		}
	}
	for _, gw := range out.Gateways {
		c := *gw
		c.Clusters = nil
		for _, cl := range gw.Clusters {
			if cl.TLS != nil && cl.TLS.CACertificates != "" {
				cc, tls := *cl, *cl.TLS
				tls.CACertificates = string(digest([]byte(tls.CACertificates)))
				cc.TLS = &tls
				cl = &cc
			}
			c.Clusters = append(c.Clusters, cl)
		}
		c.Secrets = nil
		for _, s := range gw.Secrets {
			c.Secrets = append(c.Secrets, ir.Secret{Name: s.Name, Cert: digest(s.Cert), Key: digest(s.Key), CA: digest(s.CA)})
		}
		g.Gateways = append(g.Gateways, &c)
	}
	// Secrets' digests are bytes; render them as strings for readability.
	js, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var generic any
	if err := json.Unmarshal(js, &generic); err != nil {
		t.Fatal(err)
	}
	readableSecrets(generic)
	y, err := yaml.Marshal(generic)
	if err != nil {
		t.Fatal(err)
	}
	return y
}

func readableSecrets(v any) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	gws, _ := m["gateways"].([]any)
	for _, gw := range gws {
		gm, _ := gw.(map[string]any)
		secs, _ := gm["secrets"].([]any)
		for _, s := range secs {
			sm, _ := s.(map[string]any)
			for _, k := range []string{"cert", "key", "ca"} {
				if str, ok := sm[k].(string); ok {
					var b []byte
					if err := json.Unmarshal([]byte(`"`+str+`"`), &b); err == nil {
						sm[k] = string(b)
					}
				}
			}
		}
	}
}

// reversed returns the input with every slice in reverse order: the output
// must not depend on the order objects are listed in.
func reversed(in *Input) *Input {
	c := *in
	c.GatewayClasses = slices.Clone(in.GatewayClasses)
	slices.Reverse(c.GatewayClasses)
	c.Gateways = slices.Clone(in.Gateways)
	slices.Reverse(c.Gateways)
	c.ListenerSets = slices.Clone(in.ListenerSets)
	slices.Reverse(c.ListenerSets)
	c.HTTPRoutes = slices.Clone(in.HTTPRoutes)
	slices.Reverse(c.HTTPRoutes)
	c.GRPCRoutes = slices.Clone(in.GRPCRoutes)
	slices.Reverse(c.GRPCRoutes)
	c.TLSRoutes = slices.Clone(in.TLSRoutes)
	slices.Reverse(c.TLSRoutes)
	c.TCPRoutes = slices.Clone(in.TCPRoutes)
	slices.Reverse(c.TCPRoutes)
	c.ReferenceGrants = slices.Clone(in.ReferenceGrants)
	slices.Reverse(c.ReferenceGrants)
	c.Services = slices.Clone(in.Services)
	slices.Reverse(c.Services)
	c.Secrets = slices.Clone(in.Secrets)
	slices.Reverse(c.Secrets)
	c.ConfigMaps = slices.Clone(in.ConfigMaps)
	slices.Reverse(c.ConfigMaps)
	c.Namespaces = slices.Clone(in.Namespaces)
	slices.Reverse(c.Namespaces)
	c.GatewayParameters = slices.Clone(in.GatewayParameters)
	slices.Reverse(c.GatewayParameters)
	c.BackendTLSPolicies = slices.Clone(in.BackendTLSPolicies)
	slices.Reverse(c.BackendTLSPolicies)
	c.ConfigMaps = slices.Clone(in.ConfigMaps)
	slices.Reverse(c.ConfigMaps)
	return &c
}

func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatal("no golden cases")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".in.yaml")
		t.Run(name, func(t *testing.T) {
			in := loadInput(t, f)
			out := Translate(in)
			if again := Translate(in); !reflect.DeepEqual(bare(out), bare(again)) {
				t.Fatal("two translations of the same input differ")
			}
			if rev := Translate(reversed(in)); !reflect.DeepEqual(bare(out), bare(rev)) {
				t.Fatal("translation depends on input order")
			}
			got := renderOutput(t, out, strings.HasPrefix(name, "gatewayclass-"))
			golden := strings.TrimSuffix(f, ".in.yaml") + ".out.yaml"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the translation; run go test ./internal/gatewayapi -update and review the diff.\n%s", golden, lineDiff(string(want), string(got)))
			}
		})
	}
}

// lineDiff is a small first-difference report.
func lineDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, w, g)
		}
	}
	return ""
}
