/*
Copyright The shardgate Authors.
*/

package irtest

import (
	"fmt"
	"os"
	"testing"

	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/internal/ir"
)

// LoadGateway reads a golden case's IR, without the endpoints its clusters
// list: the cases list each cluster's endpoints for xds/endpoints' goldens,
// and the IR does not carry them.
func LoadGateway(t testing.TB, path string) *ir.Gateway {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	clusters, _ := doc["clusters"].([]any)
	for _, c := range clusters {
		if m, ok := c.(map[string]any); ok {
			delete(m, "endpoints")
		}
	}
	if b, err = yaml.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	gw := &ir.Gateway{}
	if err := yaml.UnmarshalStrict(b, gw); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return gw
}

// LargeGateway has routes routes over 100 hostnames and 1000 clusters.
// Most routes are path prefixes (two Envoy routes each); every 10th adds a
// header match and a weighted split, every 50th CORS and a retry.
func LargeGateway(routes int) *ir.Gateway {
	const hosts, clusters = 100, 1000
	gw := &ir.Gateway{Namespace: "default", Name: "big"}
	for c := 0; c < clusters; c++ {
		cl := &ir.Cluster{Name: fmt.Sprintf("default/svc-%04d/80", c), Protocol: ir.ClusterHTTP1,
			Service: ir.ServicePort{Namespace: "default", Name: fmt.Sprintf("svc-%04d", c), Port: "http"}}
		gw.Clusters = append(gw.Clusters, cl)
	}
	attempts := 2
	vhs := make([]*ir.VirtualHost, hosts)
	for h := range vhs {
		name := fmt.Sprintf("host-%03d.example.com", h)
		vhs[h] = &ir.VirtualHost{Name: name, Domains: []string{name}}
	}
	for i := 0; i < routes; i++ {
		r := ir.Route{
			Name:     fmt.Sprintf("HTTPRoute/default/r%d/rule/0/match/0", i),
			Match:    ir.Match{Path: &ir.PathMatch{Type: ir.MatchPathPrefix, Value: fmt.Sprintf("/api/v1/svc-%d", i)}},
			Backends: []ir.Backend{{Cluster: gw.Clusters[i%clusters].Name, Weight: 1}},
		}
		if i%10 == 0 {
			r.Match.Headers = []ir.ValueMatch{{Name: "x-tenant", Type: ir.MatchExact, Value: "a"}}
			r.Backends = append(r.Backends, ir.Backend{Cluster: gw.Clusters[(i+1)%clusters].Name, Weight: 1})
			r.RequestHeaders = &ir.HeaderModifier{Set: []ir.Header{{Name: "x-route", Value: "r"}}}
		}
		if i%50 == 0 {
			r.CORS = &ir.CORS{AllowOrigins: []string{"https://*.example.com"}, AllowMethods: []string{"GET"}}
			r.Retry = &ir.Retry{Codes: []int{503}, Attempts: &attempts}
		}
		vh := vhs[i%hosts]
		vh.Routes = append(vh.Routes, r)
	}
	gw.Listeners = []ir.Listener{{Name: "http-80", Port: 80, Protocol: ir.ProtocolHTTP, VirtualHosts: vhs}}
	return gw
}

// TLSGateway has one cluster, default/b/443, that verifies its upstream
// with a CA and presents the client certificate of the secret named client
// ("" for none), and publishes the named secrets.
func TLSGateway(client string, secrets ...string) *ir.Gateway {
	gw := &ir.Gateway{Namespace: "default", Name: "gw", Clusters: []*ir.Cluster{{
		Name: "default/b/443", Protocol: ir.ClusterHTTP1,
		Service: ir.ServicePort{Namespace: "default", Name: "b", Port: "https"},
		TLS:     &ir.UpstreamTLS{SNI: "b.example.com", CACertificates: "-----BEGIN CERTIFICATE-----\n", ClientCertificate: client},
	}}}
	for _, s := range secrets {
		gw.Secrets = append(gw.Secrets, ir.Secret{Name: s, Cert: []byte("c"), Key: []byte("k")})
	}
	return gw
}

// AssertSameMessages fails t unless x and y hold as many messages, equal
// one by one in order; kind names the list in the failure.
func AssertSameMessages[M proto.Message](t testing.TB, kind string, x, y []M) {
	t.Helper()
	if len(x) != len(y) {
		t.Fatalf("%s: %d vs %d resources", kind, len(x), len(y))
	}
	for i := range x {
		if !proto.Equal(x[i], y[i]) {
			t.Errorf("%s #%d differs between two translations", kind, i)
		}
	}
}
