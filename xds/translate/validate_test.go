/*
Copyright The shardgate Authors.
*/

package translate

import (
	"fmt"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/internal/ir"
)

// validGateway serves HTTP on 80, HTTPS on 443 and TLS passthrough on 8443.
func validGateway() *ir.Gateway {
	web := "default/web/80"
	return &ir.Gateway{
		Namespace: "default", Name: "gw",
		Listeners: []ir.Listener{
			{Name: "http-80", Port: 80, Protocol: ir.ProtocolHTTP, VirtualHosts: []*ir.VirtualHost{{
				Name: "*", Domains: []string{"*"},
				Routes: []ir.Route{{
					Name:     "HTTPRoute/default/web/rule/0/match/0",
					Match:    ir.Match{Path: &ir.PathMatch{Type: ir.MatchPathPrefix, Value: "/"}},
					Backends: []ir.Backend{{Cluster: web, Weight: 1}, {Cluster: "default/other/80", Weight: 1}},
					Mirrors:  []ir.Mirror{{Cluster: "default/other/80"}},
				}},
			}}},
			{Name: "https-443", Port: 443, Protocol: ir.ProtocolHTTPS, TLSServers: []ir.TLSServer{{
				Name: "web", SNI: []string{"www.example.com"}, Certificates: []ir.SecretRef{{Name: "default/cert"}},
				VirtualHosts: []*ir.VirtualHost{{Name: "www.example.com", Domains: []string{"www.example.com"}}},
			}}},
			{Name: "tlspassthrough-8443", Port: 8443, Protocol: ir.ProtocolTLSPassthrough, TLSRoutes: []ir.TLSRoute{{
				Name: "default/db/0/db.example.com", SNI: "db.example.com", Backends: []ir.Backend{{Cluster: "default/db/5432", Weight: 1}},
			}}},
		},
		Clusters: []*ir.Cluster{
			{Name: "default/db/5432", Protocol: ir.ClusterTCP},
			{Name: "default/other/80", Protocol: ir.ClusterHTTP1},
			{Name: web, Protocol: ir.ClusterHTTP1},
		},
		Secrets: []ir.Secret{{Name: "default/cert", Cert: []byte("c"), Key: []byte("k")}},
	}
}

func translated(t *testing.T) *Resources {
	t.Helper()
	r, err := Translate(validGateway())
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(r); err != nil {
		t.Fatalf("the valid gateway does not validate: %v", err)
	}
	return r
}

// hcm returns the HTTP connection manager of l's chain i, for editing; put
// it back with setHCM.
func hcm(t *testing.T, l *listenerv3.Listener, i int) *hcmv3.HttpConnectionManager {
	t.Helper()
	m := &hcmv3.HttpConnectionManager{}
	if err := l.FilterChains[i].Filters[0].GetTypedConfig().UnmarshalTo(m); err != nil {
		t.Fatal(err)
	}
	return m
}

func setHCM(l *listenerv3.Listener, i int, m *hcmv3.HttpConnectionManager) {
	l.FilterChains[i].Filters[0].ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(m)}
}

func find[T interface{ GetName() string }](t *testing.T, xs []T, name string) T {
	t.Helper()
	for _, x := range xs {
		if x.GetName() == name {
			return x
		}
	}
	t.Fatalf("no resource %q", name)
	var zero T
	return zero
}

func TestValidateRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, r *Resources)
		want   []string // all must appear in the error
	}{{
		name: "route to a missing cluster",
		break_: func(t *testing.T, r *Resources) {
			rc := find(t, r.Routes, "http-80")
			rc.VirtualHosts[0].Routes[0].GetRoute().GetWeightedClusters().Clusters[1].Name = "default/gone/80"
		},
		want: []string{`route configuration "http-80"`, `route "HTTPRoute/default/web/rule/0/match/0"`, `cluster "default/gone/80" not found`},
	}, {
		name: "mirror to a missing cluster",
		break_: func(t *testing.T, r *Resources) {
			rc := find(t, r.Routes, "http-80")
			rc.VirtualHosts[0].Routes[0].GetRoute().RequestMirrorPolicies[0].Cluster = "default/shadow/80"
		},
		want: []string{`route configuration "http-80"`, `cluster "default/shadow/80" not found`},
	}, {
		name: "cluster with an empty name",
		break_: func(t *testing.T, r *Resources) {
			r.Clusters[0].Name = ""
		},
		want: []string{`cluster "": invalid Cluster.Name`, "cluster #0: empty name"},
	}, {
		name: "duplicate cluster",
		break_: func(t *testing.T, r *Resources) {
			r.Clusters = append(r.Clusters, proto.Clone(r.Clusters[0]).(*clusterv3.Cluster))
		},
		want: []string{`cluster "default/db/5432": duplicate name`},
	}, {
		name: "listener whose RDS name is missing",
		break_: func(t *testing.T, r *Resources) {
			r.Routes = slicesDelete(r.Routes, "https-443/web")
		},
		want: []string{`listener "https-443"`, `filter chain "web"`, `route configuration "https-443/web" not found`},
	}, {
		name: "missing SDS secret",
		break_: func(t *testing.T, r *Resources) {
			r.Secrets = nil
		},
		want: []string{`listener "https-443"`, `secret "default/cert" not found`},
	}, {
		name: "TCP proxy to a missing cluster",
		break_: func(t *testing.T, r *Resources) {
			r.Clusters = r.Clusters[1:]
		},
		want: []string{`listener "tlspassthrough-8443"`, `cluster "default/db/5432" not found`},
	}, {
		name: "duplicate virtual host domain",
		break_: func(t *testing.T, r *Resources) {
			rc := find(t, r.Routes, "http-80")
			dup := proto.Clone(rc.VirtualHosts[0]).(*routev3.VirtualHost)
			dup.Name = "other"
			rc.VirtualHosts = append(rc.VirtualHosts, dup)
		},
		want: []string{`route configuration "http-80": virtual hosts "*" and "other" both serve domain "*"`},
	}, {
		name: "two filter chains for one server name",
		break_: func(t *testing.T, r *Resources) {
			l := find(t, r.Listeners, "https-443")
			dup := proto.Clone(l.FilterChains[0]).(*listenerv3.FilterChain)
			dup.Name = "copy"
			l.FilterChains = append(l.FilterChains, dup)
		},
		want: []string{`listener "https-443": filter chains "web" and "copy" both match server name www.example.com`},
	}, {
		name: "listener without filter chains",
		break_: func(t *testing.T, r *Resources) {
			find(t, r.Listeners, "http-80").FilterChains = nil
		},
		want: []string{`listener "http-80": no filter chains`},
	}, {
		name: "invalid embedded typed config",
		break_: func(t *testing.T, r *Resources) {
			l := find(t, r.Listeners, "http-80")
			m := hcm(t, l, 0)
			m.StatPrefix = ""
			setHCM(l, 0, m)
		},
		want: []string{`listener "http-80"`, "HttpConnectionManager", "StatPrefix"},
	}, {
		name: "invalid nested DownstreamTlsContext",
		break_: func(t *testing.T, r *Resources) {
			l := find(t, r.Listeners, "https-443")
			ctx := &tlsv3.DownstreamTlsContext{}
			if err := l.FilterChains[0].TransportSocket.GetTypedConfig().UnmarshalTo(ctx); err != nil {
				t.Fatal(err)
			}
			ctx.CommonTlsContext.TlsCertificateSdsSecretConfigs[0].Name = ""
			l.FilterChains[0].TransportSocket.ConfigType = &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(ctx)}
		},
		want: []string{`listener "https-443"`, "DownstreamTlsContext", "secret \"\" not found"},
	}, {
		name: "Host header mutation",
		break_: func(t *testing.T, r *Resources) {
			rt := find(t, r.Routes, "http-80").VirtualHosts[0].Routes[0]
			rt.RequestHeadersToAdd = append(rt.RequestHeadersToAdd, &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: "Host", Value: "x"}})
		},
		want: []string{`route configuration "http-80"`, `header "Host" cannot be modified`},
	}, {
		name: "route without a match",
		break_: func(t *testing.T, r *Resources) {
			find(t, r.Routes, "http-80").VirtualHosts[0].Routes[0].Match = nil
		},
		want: []string{`route configuration "http-80"`, "Match"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := translated(t)
			tc.break_(t, r)
			err := Validate(r)
			if err == nil {
				t.Fatal("Validate accepted the broken resources")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestCheckReferencesAllowsInvalidBackend: the 500 cluster is absent on
// purpose.
func TestCheckReferencesAllowsInvalidBackend(t *testing.T) {
	gw := validGateway()
	gw.Listeners[0].VirtualHosts[0].Routes[0].InvalidWeight = 1
	gw.Listeners[2].TLSRoutes[0].InvalidWeight = 1
	r, err := Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckReferences(r); err != nil {
		t.Fatal(err)
	}
}

func TestTranslateRejectsWhatEnvoyCannotSay(t *testing.T) {
	gw := validGateway()
	gw.Listeners[0].Protocol = "UDP"
	if _, err := Translate(gw); err == nil || !strings.Contains(err.Error(), `listener http-80: unknown protocol "UDP"`) {
		t.Errorf("unknown protocol: %v", err)
	}

	gw = validGateway()
	rt := &gw.Listeners[0].VirtualHosts[0].Routes[0]
	rt.Backends, rt.Redirect = nil, &ir.Redirect{StatusCode: 305}
	if _, err := Translate(gw); err == nil || !strings.Contains(err.Error(), "unsupported redirect status code 305") {
		t.Errorf("redirect 305: %v", err)
	}

	gw = validGateway()
	rt = &gw.Listeners[0].VirtualHosts[0].Routes[0]
	rt.Match.Path = &ir.PathMatch{Type: ir.MatchRegularExpression, Value: "/a.*"}
	rt.Rewrite = &ir.Rewrite{Path: &ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: "/b"}}
	if _, err := Translate(gw); err == nil || !strings.Contains(err.Error(), "ReplacePrefixMatch needs a PathPrefix match") {
		t.Errorf("prefix rewrite on a regex: %v", err)
	}
}

func TestReplacePrefix(t *testing.T) {
	for _, tc := range []struct{ matched, replacement, want string }{
		{"/foo", "/bar", "/bar"},
		{"/foo/", "/bar", "/bar/"},
		{"/foo/", "/bar/", "/bar/"},
		{"/foo", "/", "/"},
		{"/foo/", "/", "/"},
		{"/", "/bar", "/bar/"},
		{"/", "/", ""},
	} {
		if got := replacePrefix(tc.matched, tc.replacement); got != tc.want {
			t.Errorf("replacePrefix(%q, %q) = %q, want %q", tc.matched, tc.replacement, got, tc.want)
		}
	}
}

func TestFraction(t *testing.T) {
	for _, tc := range []struct {
		num, den int32
		want     string
	}{
		{0, 0, "all"},
		{5, 5, "all"},
		{50, 100, "50/HUNDRED"},
		{7, 10000, "7/TEN_THOUSAND"},
		{1, 3, "333333/MILLION"},
		{2, 3, "666667/MILLION"},
	} {
		got := "all"
		if f := fraction(tc.num, tc.den); f != nil {
			got = fmt.Sprintf("%d/%s", f.GetDefaultValue().GetNumerator(), f.GetDefaultValue().GetDenominator())
		}
		if got != tc.want {
			t.Errorf("fraction(%d, %d) = %s, want %s", tc.num, tc.den, got, tc.want)
		}
	}
}

func slicesDelete(rcs []*routev3.RouteConfiguration, name string) []*routev3.RouteConfiguration {
	var out []*routev3.RouteConfiguration
	for _, rc := range rcs {
		if rc.GetName() != name {
			out = append(out, rc)
		}
	}
	return out
}
