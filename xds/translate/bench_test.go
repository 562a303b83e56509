/*
Copyright The shardgate Authors.
*/

package translate

import (
	"fmt"
	"testing"

	"github.com/shardgate/shardgate/internal/ir"
)

// largeGateway has routes routes over 100 hostnames and 1000 clusters of
// three endpoints each. Most routes are path prefixes (two Envoy routes
// each); every 10th adds a header match and a weighted split, every 50th
// CORS and a retry.
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

func BenchmarkTranslate(b *testing.B) {
	gw := largeGateway(10_000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Translate(gw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	r, err := Translate(largeGateway(10_000))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := Validate(r); err != nil {
			b.Fatal(err)
		}
	}
}

func TestLargeGatewayValidates(t *testing.T) {
	r, err := Translate(largeGateway(2_000))
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(r); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, vh := range r.Routes[0].VirtualHosts {
		n += len(vh.Routes)
	}
	if n != 4_000 {
		t.Errorf("want 4000 Envoy routes (each prefix is two), got %d", n)
	}
}
