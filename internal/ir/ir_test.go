/*
Copyright The shardgate Authors.
*/

package ir

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// TestYAMLRoundTrip keeps every field serialisable: goldens and debugging
// dumps rely on YAML giving back exactly the IR.
func TestYAMLRoundTrip(t *testing.T) {
	attempts := 3
	g := &Gateway{
		Namespace: "default", Name: "gw",
		Listeners: []Listener{
			{Name: "http-80", Port: 80, Protocol: ProtocolHTTP, Sources: []string{"http"}, VirtualHosts: []*VirtualHost{{
				Name: "*", Domains: []string{"*"},
				Routes: []Route{{
					Name:               "r",
					Match:              Match{Path: &PathMatch{Type: MatchPathPrefix, Value: "/"}, Headers: []ValueMatch{{Name: "x", Type: MatchExact, Value: "1"}}, Method: "GET"},
					Backends:           []Backend{{Cluster: "default/web/80", Weight: 1, RequestHeaders: &HeaderModifier{Set: []Header{{Name: "a", Value: "b"}}}}},
					InvalidWeight:      1,
					ResponseHeaders:    &HeaderModifier{Remove: []string{"x"}},
					Rewrite:            &Rewrite{Hostname: "h", Path: &PathModifier{Type: ReplacePrefixMatch, Value: "/"}},
					Mirrors:            []Mirror{{Cluster: "default/web/80", Numerator: 1, Denominator: 2}},
					CORS:               &CORS{AllowOrigins: []string{"*"}, MaxAge: 5},
					Timeouts:           &Timeouts{Request: &metav1.Duration{Duration: time.Second}},
					Retry:              &Retry{Codes: []int{503}, Attempts: &attempts},
					SessionPersistence: &SessionPersistence{Type: "Cookie", SessionName: "s"},
					Source:             Source{Kind: "HTTPRoute", Namespace: "default", Name: "r", Rule: 1, RuleName: "n"},
				}, {
					Name: "redirect", Redirect: &Redirect{Scheme: "https", Port: 443, StatusCode: 301},
				}, {
					Name: "direct", GRPC: true, DirectResponse: &DirectResponse{Status: 500},
				}},
			}}},
			{Name: "https-443", Port: 443, Protocol: ProtocolHTTPS, TLSServers: []TLSServer{{Name: "https", SNI: []string{"a.example.com"}, Certificates: []SecretRef{{Name: "default/cert"}}}}},
			{Name: "tlspassthrough-8443", Port: 8443, Protocol: ProtocolTLSPassthrough, TLSRoutes: []TLSRoute{{Name: "t", SNI: "b.example.com", Backends: []Backend{{Cluster: "default/tls/443", Weight: 1}}}}},
		},
		Clusters: []*Cluster{{Name: "default/web/80", Protocol: ClusterH2C, WebSocket: true, Service: ServicePort{Namespace: "default", Name: "web", Port: "http"}}},
		Secrets:  []Secret{{Name: "default/cert", Cert: []byte("c"), Key: []byte("k")}},
	}
	y, err := yaml.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var back Gateway
	if err := yaml.UnmarshalStrict(y, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, &back) {
		t.Fatalf("round trip changed the IR:\n%s", y)
	}
}
