/*
Copyright The shardgate Authors.
*/

package build

import (
	"fmt"
	"testing"
	"time"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// BenchmarkBuilderAutoTLSOneRouteChange10k: a shard with automatic HTTPS
// serving 10k names (a TLS server, route table and secret each); each
// iteration replaces one route and runs what the project controls of the
// change: the Gateway API translation (a patch) and the Builder (memo,
// checker, snapshot assembly and versions), not go-control-plane's cache
// and responses (xds/server's BenchmarkAutoTLSOneRouteChange10k has
// those). It reports the Gateway API layer's share (gatewayapi-ms/op).
func BenchmarkBuilderAutoTLSOneRouteChange10k(b *testing.B) {
	st, tr, facts, _, routes := autoTLSShard(b, 10_000)
	bd := NewBuilder(Options{})
	defer bd.Stop()
	prev, err := bd.Build(tr.Translate(facts).Gateways[0], nil)
	if err != nil {
		b.Fatal(err)
	}
	var gwapi float64
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		r := routes[i%len(routes)].DeepCopy()
		r.Generation++
		path, prefix := fmt.Sprintf("/v%d", i), gatewayv1.PathMatchPathPrefix
		r.Spec.Rules[0].Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path}}}
		routes[i%len(routes)] = r
		start := nanotime()
		st.Upsert(r)
		gw := tr.Translate(facts).Gateways[0]
		gwapi += float64(nanotime() - start)
		if prev, err = bd.Build(gw, prev); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if tr.Stats.Patched < b.N {
		b.Fatalf("%d patches for %d changes (%+v)", tr.Stats.Patched, b.N, tr.Stats)
	}
	b.ReportMetric(gwapi/1e6/float64(b.N), "gatewayapi-ms/op")
}

func nanotime() int64 { return time.Now().UnixNano() }
