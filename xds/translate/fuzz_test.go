/*
Copyright The shardgate Authors.
*/

package translate

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/internal/irtest"
)

// fuzzBytes turns fuzz input into small decisions; past the end it
// answers 0, so every input, even empty, is a Gateway.
type fuzzBytes struct {
	b []byte
	i int
}

func (c *fuzzBytes) n(max int) int {
	if max <= 1 || c.i >= len(c.b) {
		return 0
	}
	v := int(c.b[c.i]) % max
	c.i++
	return v
}

func (c *fuzzBytes) bool() bool { return c.n(2) == 1 }

func fzPick[T any](c *fuzzBytes, pool []T) T { return pool[c.n(len(pool))] }

// Pools of values: mostly what internal/gatewayapi produces, plus values a
// buggy producer could hand over (empty names, odd characters, a regex that
// does not compile, a port of 0), which Translate or Validate must refuse
// without panicking.
var (
	fxProtocols  = []ir.Protocol{ir.ProtocolHTTP, ir.ProtocolHTTPS, ir.ProtocolTLSPassthrough, ir.ProtocolTLSTerminate, ir.ProtocolTLSMixed, ir.ProtocolHTTP, "UDP", ir.ProtocolTCP}
	fxPorts      = []int32{80, 443, 8080, 8443, 80, 0}
	fxHosts      = []string{"*", "foo.example.com", "*.example.com", "bar.example.com", "FOO.example.com", "", "a.b.example.com"}
	fxSNI        = []string{"", "foo.example.com", "*.example.com", "bar.example.com", "foo.example.com"}
	fxClusters   = []string{"default/web/80", "default/api/9000", "other/tcp/7", "", "default/web/80"}
	fxClusterPro = []ir.ClusterProtocol{ir.ClusterHTTP1, ir.ClusterH2C, ir.ClusterTCP, "QUIC"}
	fxSecrets    = []string{"default/cert", "default/other", "", "missing/cert"}
	fxPaths      = []string{"/", "/foo", "/foo/bar", "/foo/", "^/re/[0-9]+$", "/a(", ""}
	fxMatchTypes = []ir.MatchType{ir.MatchExact, ir.MatchPathPrefix, ir.MatchRegularExpression, "Bogus"}
	fxHeaders    = []string{"x-user", "X-Env", ":authority", "host", "", "x-a"}
	fxValues     = []string{"a", "", "b c", "[0-9]+", "(", "\x00"}
	fxMethods    = []string{"", "GET", "POST", "get"}
	fxCodes      = []int{301, 302, 303, 307, 308, 200, 0}
	fxStatuses   = []int{200, 404, 500, 503, 0, 99, 600}
	fxSchemes    = []string{"", "http", "https", "ftp"}
	fxModTypes   = []ir.PathModifierType{ir.ReplaceFullPath, ir.ReplacePrefixMatch, "Bogus"}
	fxDurations  = []time.Duration{0, time.Second, 1500 * time.Millisecond, -time.Second}
	fxWeights    = []uint32{1, 0, 5, 100, 1 << 31}
)

// fuzzGateway builds an ir.Gateway from data.
func fuzzGateway(data []byte, cert, key []byte) *ir.Gateway {
	c := &fuzzBytes{b: data}
	gw := &ir.Gateway{Namespace: "default", Name: "gw"}
	for i, n := 0, c.n(4); i < n; i++ {
		cl := &ir.Cluster{Name: fzPick(c, fxClusters), Protocol: fzPick(c, fxClusterPro), WebSocket: c.bool()}
		gw.Clusters = append(gw.Clusters, cl)
	}
	for i, n := 0, c.n(3); i < n; i++ {
		s := ir.Secret{Name: fzPick(c, fxSecrets), Cert: cert, Key: key}
		if c.n(5) == 0 {
			s.Key = nil
		}
		gw.Secrets = append(gw.Secrets, s)
	}
	for i, n := 0, 1+c.n(3); i < n; i++ {
		p := fzPick(c, fxProtocols)
		port := fzPick(c, fxPorts)
		l := ir.Listener{Name: fmt.Sprintf("%s-%d", strings.ToLower(string(p)), port), Port: port, Protocol: p, Sources: []string{"l"}}
		switch p {
		case ir.ProtocolHTTP:
			l.VirtualHosts = fuzzVirtualHosts(c)
		case ir.ProtocolHTTPS:
			for j, m := 0, c.n(3); j < m; j++ {
				ts := ir.TLSServer{Name: fmt.Sprintf("s%d", j), VirtualHosts: fuzzVirtualHosts(c)}
				if sni := fzPick(c, fxSNI); sni != "" {
					ts.SNI = []string{sni}
				}
				for k, o := 0, c.n(3); k < o; k++ {
					ts.Certificates = append(ts.Certificates, ir.SecretRef{Name: fzPick(c, fxSecrets)})
				}
				if c.n(3) == 0 {
					ts.ClientValidation = &ir.ClientValidation{CA: ir.SecretRef{Name: fzPick(c, fxSecrets)}, InsecureFallback: c.bool()}
				}
				l.TLSServers = append(l.TLSServers, ts)
			}
		case ir.ProtocolTCP:
			if c.n(3) > 0 {
				l.TCPRoute = &ir.TCPRoute{Name: "default/t", Backends: fuzzBackends(c), InvalidWeight: uint32(c.n(3)),
					Source: ir.Source{Kind: "TCPRoute", Namespace: "default", Name: "t"}}
			}
		default:
			for j, m := 0, c.n(3); j < m; j++ {
				tr := ir.TLSRoute{SNI: fzPick(c, fxSNI), Backends: fuzzBackends(c), InvalidWeight: uint32(c.n(3)),
					Source: ir.Source{Kind: "TLSRoute", Namespace: "default", Name: "t", Rule: j}}
				tr.Name = fmt.Sprintf("default/t/%d/%s", j, tr.SNI)
				if p == ir.ProtocolTLSTerminate || p == ir.ProtocolTLSMixed && c.bool() {
					tr.Certificates = []ir.SecretRef{{Name: fzPick(c, fxSecrets)}}
				}
				l.TLSRoutes = append(l.TLSRoutes, tr)
			}
		}
		gw.Listeners = append(gw.Listeners, l)
	}
	return gw
}

func fuzzVirtualHosts(c *fuzzBytes) []*ir.VirtualHost {
	var out []*ir.VirtualHost
	for i, n := 0, c.n(3); i < n; i++ {
		host := fzPick(c, fxHosts)
		vh := &ir.VirtualHost{Name: host, Domains: []string{host}}
		if c.n(4) == 0 {
			vh.Domains = append(vh.Domains, fzPick(c, fxHosts))
		}
		for j, m := 0, c.n(4); j < m; j++ {
			vh.Routes = append(vh.Routes, fuzzRoute(c, j))
		}
		out = append(out, vh)
	}
	return out
}

func fuzzRoute(c *fuzzBytes, i int) ir.Route {
	r := ir.Route{
		Name:   fmt.Sprintf("HTTPRoute/default/r/rule/%d/match/0", i),
		GRPC:   c.n(4) == 0,
		Source: ir.Source{Kind: "HTTPRoute", Namespace: "default", Name: "r", Rule: i},
	}
	if c.n(6) == 0 {
		r.Name = "dup" // two routes may share it
	}
	if c.n(4) != 0 {
		r.Match.Path = &ir.PathMatch{Type: fzPick(c, fxMatchTypes), Value: fzPick(c, fxPaths)}
	}
	for j, m := 0, c.n(3); j < m; j++ {
		r.Match.Headers = append(r.Match.Headers, ir.ValueMatch{Name: fzPick(c, fxHeaders), Type: fzPick(c, fxMatchTypes), Value: fzPick(c, fxValues)})
	}
	for j, m := 0, c.n(2); j < m; j++ {
		r.Match.QueryParams = append(r.Match.QueryParams, ir.ValueMatch{Name: fzPick(c, fxHeaders), Type: fzPick(c, fxMatchTypes), Value: fzPick(c, fxValues)})
	}
	r.Match.Method = fzPick(c, fxMethods)
	switch c.n(5) {
	case 0:
		r.Redirect = &ir.Redirect{Scheme: fzPick(c, fxSchemes), Hostname: fzPick(c, fxHosts), Port: fzPick(c, fxPorts), StatusCode: fzPick(c, fxCodes)}
		if c.bool() {
			r.Redirect.Path = &ir.PathModifier{Type: fzPick(c, fxModTypes), Value: fzPick(c, fxPaths)}
		}
	case 1:
		r.DirectResponse = &ir.DirectResponse{Status: fzPick(c, fxStatuses), Body: fzPick(c, fxValues)}
	default:
		r.Backends = fuzzBackends(c)
		r.InvalidWeight = uint32(c.n(3))
	}
	if c.n(3) == 0 {
		r.RequestHeaders = fuzzHeaderModifier(c)
	}
	if c.n(3) == 0 {
		r.ResponseHeaders = fuzzHeaderModifier(c)
	}
	if c.n(4) == 0 {
		r.Rewrite = &ir.Rewrite{Hostname: fzPick(c, fxHosts)}
		if c.bool() {
			r.Rewrite.Path = &ir.PathModifier{Type: fzPick(c, fxModTypes), Value: fzPick(c, fxPaths)}
		}
	}
	if c.n(5) == 0 {
		r.Mirrors = []ir.Mirror{{Cluster: fzPick(c, fxClusters), Numerator: int32(c.n(3)), Denominator: int32(c.n(3)) * 50}}
	}
	if c.n(6) == 0 {
		r.CORS = &ir.CORS{AllowOrigins: []string{fzPick(c, []string{"*", "https://a.example", "https://*.example", ""})},
			AllowCredentials: c.bool(), AllowMethods: []string{fzPick(c, fxMethods)}, AllowHeaders: []string{fzPick(c, fxHeaders)}, MaxAge: int32(c.n(3)) * 60}
	}
	if c.n(5) == 0 {
		r.Timeouts = &ir.Timeouts{Request: fuzzDuration(c), BackendRequest: fuzzDuration(c)}
	}
	if c.n(5) == 0 {
		attempts := c.n(4)
		r.Retry = &ir.Retry{Codes: []int{fzPick(c, fxStatuses)}, Attempts: &attempts, Backoff: fuzzDuration(c)}
	}
	if c.n(6) == 0 {
		r.SessionPersistence = &ir.SessionPersistence{Type: fzPick(c, []string{"Cookie", "Header", "Bogus"}),
			SessionName: fzPick(c, fxHeaders), AbsoluteTimeout: fuzzDuration(c), CookieLifetime: fzPick(c, []string{"", "Permanent", "Session"})}
	}
	return r
}

func fuzzBackends(c *fuzzBytes) []ir.Backend {
	var out []ir.Backend
	for i, n := 0, c.n(4); i < n; i++ {
		b := ir.Backend{Cluster: fzPick(c, fxClusters), Weight: fzPick(c, fxWeights)}
		if c.n(4) == 0 {
			b.RequestHeaders = fuzzHeaderModifier(c)
		}
		out = append(out, b)
	}
	return out
}

func fuzzHeaderModifier(c *fuzzBytes) *ir.HeaderModifier {
	m := &ir.HeaderModifier{}
	for i, n := 0, c.n(3); i < n; i++ {
		m.Set = append(m.Set, ir.Header{Name: fzPick(c, fxHeaders), Value: fzPick(c, fxValues)})
	}
	for i, n := 0, c.n(3); i < n; i++ {
		m.Add = append(m.Add, ir.Header{Name: fzPick(c, fxHeaders), Value: fzPick(c, fxValues)})
	}
	for i, n := 0, c.n(2); i < n; i++ {
		m.Remove = append(m.Remove, fzPick(c, fxHeaders))
	}
	return m
}

func fuzzDuration(c *fuzzBytes) *metav1.Duration {
	if c.n(3) == 0 {
		return nil
	}
	return &metav1.Duration{Duration: fzPick(c, fxDurations)}
}

// FuzzXDSTranslate builds random Gateways and checks that translation never
// panics, is deterministic, and that whatever Validate accepts is
// referentially whole, by a check written independently of
// CheckReferences: a reflective walk over every field that names another
// resource.
func FuzzXDSTranslate(f *testing.F) {
	cert, key := fuzzKeyPair(f)
	f.Add([]byte{})
	f.Add([]byte{3, 1, 1, 2, 1, 1, 1, 1, 0, 2, 0, 2, 1, 2, 1, 0, 1, 3, 3, 2, 1})
	f.Add([]byte("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a"))
	f.Fuzz(func(t *testing.T, data []byte) {
		gw := fuzzGateway(data, cert, key)
		a, errA := Translate(gw)
		b, errB := Translate(fuzzGateway(data, cert, key))
		if (errA == nil) != (errB == nil) || (errA != nil && errA.Error() != errB.Error()) {
			t.Fatalf("Translate is not deterministic: %v vs %v", errA, errB)
		}
		if errA != nil {
			return // IR it cannot express: refused, not panicked
		}
		if !equalResources(a, b) {
			t.Fatal("Translate is not deterministic: two translations of one Gateway differ")
		}
		if err := Validate(a); err != nil {
			return
		}
		if err := wholeness(a); err != nil {
			t.Fatalf("Validate accepted resources that are not referentially whole: %v", err)
		}
	})
}

func fuzzKeyPair(f *testing.F) (cert, key []byte) {
	// The content is not parsed by Translate or Validate; the golden
	// tests use the same stand-ins.
	return []byte("-----BEGIN CERTIFICATE-----\nZnV6eg==\n-----END CERTIFICATE-----\n"),
		[]byte("-----BEGIN PRIVATE KEY-----\nZnV6eg==\n-----END PRIVATE KEY-----\n")
}

func equalResources(a, b *Resources) bool {
	eq := func(x, y []proto.Message) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !proto.Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return eq(a.messages()[0], b.messages()[0]) && eq(a.messages()[1], b.messages()[1]) &&
		eq(a.messages()[2], b.messages()[2]) && eq(a.messages()[3], b.messages()[3])
}

// messages lists the resources per type: listeners, routes, clusters,
// secrets.
func (r *Resources) messages() [4][]proto.Message {
	var out [4][]proto.Message
	for _, m := range r.Listeners {
		out[0] = append(out[0], m)
	}
	for _, m := range r.Routes {
		out[1] = append(out[1], m)
	}
	for _, m := range r.Clusters {
		out[2] = append(out[2], m)
	}
	for _, m := range r.Secrets {
		out[3] = append(out[3], m)
	}
	return out
}

// References by field: the proto fields that name a cluster, a route
// configuration or a secret, wherever they appear (Any included).
var (
	clusterRefFields = map[protoreflect.FullName]bool{
		"envoy.config.route.v3.RouteAction.cluster":                                                 true,
		"envoy.config.route.v3.WeightedCluster.ClusterWeight.name":                                  true,
		"envoy.config.route.v3.RouteAction.RequestMirrorPolicy.cluster":                             true,
		"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.cluster":                            true,
		"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.WeightedCluster.ClusterWeight.name": true,
	}
	routeRefFields  = map[protoreflect.FullName]bool{"envoy.extensions.filters.network.http_connection_manager.v3.Rds.route_config_name": true}
	secretRefFields = map[protoreflect.FullName]bool{"envoy.extensions.transport_sockets.tls.v3.SdsSecretConfig.name": true}
)

// wholeness checks, independently of CheckReferences, that every name one
// resource uses for another exists, and that names are unique.
func wholeness(r *Resources) error {
	have := func(n int, name func(int) string) (map[string]bool, error) {
		m := map[string]bool{}
		for i := 0; i < n; i++ {
			if m[name(i)] || name(i) == "" {
				return nil, fmt.Errorf("name %q empty or repeated", name(i))
			}
			m[name(i)] = true
		}
		return m, nil
	}
	clusters, err := have(len(r.Clusters), func(i int) string { return r.Clusters[i].GetName() })
	if err != nil {
		return fmt.Errorf("clusters: %w", err)
	}
	clusters[InvalidBackendCluster] = true // deliberately absent: it refuses
	routes, err := have(len(r.Routes), func(i int) string { return r.Routes[i].GetName() })
	if err != nil {
		return fmt.Errorf("route configurations: %w", err)
	}
	secrets, err := have(len(r.Secrets), func(i int) string { return r.Secrets[i].GetName() })
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	if _, err := have(len(r.Listeners), func(i int) string { return r.Listeners[i].GetName() }); err != nil {
		return fmt.Errorf("listeners: %w", err)
	}
	var errs []string
	visit := func(field protoreflect.FullName, value string) {
		switch {
		case clusterRefFields[field] && !clusters[value]:
			errs = append(errs, fmt.Sprintf("%s names missing cluster %q", field, value))
		case routeRefFields[field] && !routes[value]:
			errs = append(errs, fmt.Sprintf("%s names missing route configuration %q", field, value))
		case secretRefFields[field] && !secrets[value]:
			errs = append(errs, fmt.Sprintf("%s names missing secret %q", field, value))
		}
	}
	for _, list := range r.messages() {
		for _, m := range list {
			walkStrings(m.ProtoReflect(), visit)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// walkStrings calls fn for every set string field in m and its children,
// unpacking Any.
func walkStrings(m protoreflect.Message, fn func(protoreflect.FullName, string)) {
	if a, ok := m.Interface().(*anypb.Any); ok {
		inner, err := a.UnmarshalNew()
		if err == nil {
			walkStrings(inner.ProtoReflect(), fn)
		}
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				if fd.Kind() == protoreflect.MessageKind {
					walkStrings(l.Get(i).Message(), fn)
				} else if fd.Kind() == protoreflect.StringKind {
					fn(fd.FullName(), l.Get(i).String())
				}
			}
		case fd.IsMap():
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				if fd.MapValue().Kind() == protoreflect.MessageKind {
					walkStrings(mv.Message(), fn)
				}
				return true
			})
		case fd.Kind() == protoreflect.MessageKind:
			walkStrings(v.Message(), fn)
		case fd.Kind() == protoreflect.StringKind:
			fn(fd.FullName(), v.String())
		}
		return true
	})
}

// TestWholenessCheck keeps the fuzzer's independent check honest: every
// field it follows exists, and it finds a reference whose target was
// removed.
func TestWholenessCheck(t *testing.T) {
	for _, m := range []map[protoreflect.FullName]bool{clusterRefFields, routeRefFields, secretRefFields} {
		for name := range m {
			if _, err := protoregistry.GlobalFiles.FindDescriptorByName(name); err != nil {
				t.Errorf("field %s: %v", name, err)
			}
		}
	}
	for _, tc := range []struct {
		golden string
		drop   func(*Resources)
	}{
		{"weighted-two-backends", func(r *Resources) { r.Clusters = r.Clusters[1:] }},
		{"mirror", func(r *Resources) { r.Clusters = r.Clusters[1:] }},
		{"http-single-route", func(r *Resources) { r.Routes = nil }},
		{"https-single-server", func(r *Resources) { r.Secrets = nil }},
		{"tls-passthrough-single", func(r *Resources) { r.Clusters = nil }},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			res, err := Translate(irtest.LoadGateway(t, "testdata/"+tc.golden+".in.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if err := wholeness(res); err != nil {
				t.Fatalf("golden: %v", err)
			}
			tc.drop(res)
			if err := wholeness(res); err == nil {
				t.Fatal("a dangling reference was not found")
			} else {
				t.Log(err)
			}
		})
	}
}
