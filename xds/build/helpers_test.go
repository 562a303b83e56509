/*
Copyright The shardgate Authors.
*/

package build

import (
	"fmt"
	"os"
	"testing"

	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/translate"
)

// goldenInputs are the IR inputs of translate's golden tests: what the
// memo and the checker must agree with translate on.
const goldenInputs = "../translate/testdata/*.in.yaml"

func loadGateway(t testing.TB, path string) *ir.Gateway {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The cases list each cluster's endpoints, for xds/endpoints' goldens;
	// the IR does not carry them.
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

func messages[M proto.Message](ms []M) []proto.Message {
	out := make([]proto.Message, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

func assertEqualResources(t *testing.T, a, b *translate.Resources) {
	t.Helper()
	eq := func(kind string, x, y []proto.Message) {
		if len(x) != len(y) {
			t.Fatalf("%s: %d vs %d resources", kind, len(x), len(y))
		}
		for i := range x {
			if !proto.Equal(x[i], y[i]) {
				t.Errorf("%s #%d differs between two translations", kind, i)
			}
		}
	}
	eq("listeners", messages(a.Listeners), messages(b.Listeners))
	eq("routes", messages(a.Routes), messages(b.Routes))
	eq("clusters", messages(a.Clusters), messages(b.Clusters))
	eq("secrets", messages(a.Secrets), messages(b.Secrets))
}

// largeGateway is translate's benchmark Gateway: routes spread over 100
// hosts and 1000 clusters.
func largeGateway(routes int) *ir.Gateway {
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
