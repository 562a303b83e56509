/*
Copyright The shardgate Authors.
*/

package translate

import (
	"slices"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/shardgate/shardgate/internal/ir"
)

// Memo makes Translate incremental for a config published again and again:
// it remembers the Envoy resources of the previous translation and returns
// the very same messages for what did not change, so that only changed
// virtual hosts and clusters are built (and, with a Checker, validated and
// serialized).
//
// A virtual host is recognised by its IR routes' backing array: the Gateway
// API translator's patches keep an unchanged virtual host's array and build
// a new one for a changed host, and IR is never modified once built. The
// memo holds the arrays it is keyed by, so an address cannot be reused while
// remembered. A cluster is recognised by comparing its IR.
//
// Messages returned from memory are shared with earlier translations:
// callers must not modify them (clone first). A Memo is not safe for
// concurrent use.
type Memo struct {
	vhosts    map[vhostKey]*routev3.VirtualHost
	clusters  map[string]memoCluster
	websocket string // the WebSocket clusters the virtual hosts were built with
}

type vhostKey struct {
	routes *ir.Route // first element of the IR routes array
	n      int
	scheme string
	name   string
	domain string
	nd     int
}

type memoCluster struct {
	ir        ir.Cluster
	cluster   *clusterv3.Cluster
	endpoints *endpointv3.ClusterLoadAssignment
}

// Translate is Translate(gw), from memory where it can.
func (m *Memo) Translate(gw *ir.Gateway) (*Resources, error) {
	// Route actions depend on whether their clusters speak WebSocket: a
	// change there rebuilds every virtual host.
	var ws []byte
	for i := range gw.Clusters {
		if gw.Clusters[i].WebSocket {
			ws = append(ws, gw.Clusters[i].Name...)
			ws = append(ws, 0)
		}
	}
	if string(ws) != m.websocket {
		m.vhosts = nil
		m.websocket = string(ws)
	}
	t := translator{clusters: make(map[string]*ir.Cluster, len(gw.Clusters)), memo: m, nextVhosts: make(map[vhostKey]*routev3.VirtualHost, len(m.vhosts))}
	res, err := t.translate(gw)
	if err != nil {
		return nil, err
	}
	m.vhosts = t.nextVhosts
	return res, nil
}

// virtualHostMemo returns the remembered message for v, building it on a
// miss.
func (t *translator) virtualHostMemo(scheme string, v *ir.VirtualHost) (*routev3.VirtualHost, error) {
	if t.memo == nil || len(v.Routes) == 0 {
		return t.virtualHost(scheme, v)
	}
	k := vhostKey{routes: &v.Routes[0], n: len(v.Routes), scheme: scheme, name: v.Name, nd: len(v.Domains)}
	if len(v.Domains) > 0 {
		k.domain = v.Domains[0]
	}
	if len(v.Domains) <= 1 {
		if vh, ok := t.memo.vhosts[k]; ok {
			t.nextVhosts[k] = vh
			return vh, nil
		}
	}
	vh, err := t.virtualHost(scheme, v)
	if err == nil && len(v.Domains) <= 1 {
		t.nextVhosts[k] = vh
	}
	return vh, err
}

// clusterMemo returns the remembered messages for c when its IR is the same.
func (t *translator) clusterMemo(c *ir.Cluster, next map[string]memoCluster) (*clusterv3.Cluster, *endpointv3.ClusterLoadAssignment) {
	if t.memo != nil {
		if mc, ok := t.memo.clusters[c.Name]; ok && sameCluster(&mc.ir, c) {
			next[c.Name] = mc
			return mc.cluster, mc.endpoints
		}
	}
	cl, e := cluster(c), loadAssignment(c)
	if next != nil {
		next[c.Name] = memoCluster{ir: *c, cluster: cl, endpoints: e}
	}
	return cl, e
}

func sameCluster(a, b *ir.Cluster) bool {
	return a.Name == b.Name && a.Protocol == b.Protocol && a.WebSocket == b.WebSocket && slices.Equal(a.Endpoints, b.Endpoints)
}
