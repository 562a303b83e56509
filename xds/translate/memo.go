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
	// The maps are updated in place, each entry marked with the last
	// translation that used it, and pruned when they hold more than twice
	// what the last translation used.
	epoch     uint64
	vhosts    map[vhostKey]memoVhost
	clusters  map[string]memoCluster
	websocket string // the WebSocket clusters the virtual hosts were built with
	retained  string // the retained clusters the virtual hosts were built with
}

type memoVhost struct {
	vh     *routev3.VirtualHost
	routes []ir.Route // holds the array the key points into
	epoch  uint64
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
	epoch     uint64
}

// Translate is Translate(gw), from memory where it can. Every virtual host
// also gets a RetainedRoute for each of the retained clusters, which the
// caller keeps published for a while after they left gw (the caller adds
// the clusters themselves).
func (m *Memo) Translate(gw *ir.Gateway, retained ...string) (*Resources, error) {
	// Route actions depend on whether their clusters speak WebSocket: a
	// change there rebuilds every virtual host.
	var ws []byte
	for i := range gw.Clusters {
		if gw.Clusters[i].WebSocket {
			ws = append(ws, gw.Clusters[i].Name...)
			ws = append(ws, 0)
		}
	}
	// So does a change of the retained clusters (rare: a cluster leaving
	// the config, or its retention ending).
	var kept []byte
	for _, c := range retained {
		kept = append(kept, c...)
		kept = append(kept, 0)
	}
	if string(ws) != m.websocket || string(kept) != m.retained || m.vhosts == nil {
		m.vhosts = map[vhostKey]memoVhost{}
		m.websocket, m.retained = string(ws), string(kept)
	}
	if m.clusters == nil {
		m.clusters = map[string]memoCluster{}
	}
	m.epoch++
	t := translator{clusters: make(map[string]*ir.Cluster, len(gw.Clusters)), memo: m, retained: retained}
	res, err := t.translate(gw)
	if err != nil {
		return nil, err
	}
	if len(m.vhosts) > 2*t.usedVhosts+1024 {
		for k, e := range m.vhosts {
			if e.epoch != m.epoch {
				delete(m.vhosts, k)
			}
		}
	}
	if len(m.clusters) > 2*len(gw.Clusters)+1024 {
		for k, e := range m.clusters {
			if e.epoch != m.epoch {
				delete(m.clusters, k)
			}
		}
	}
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
	t.usedVhosts++
	if len(v.Domains) <= 1 {
		if e, ok := t.memo.vhosts[k]; ok {
			if e.epoch != t.memo.epoch {
				e.epoch = t.memo.epoch
				t.memo.vhosts[k] = e
			}
			return e.vh, nil
		}
	}
	vh, err := t.virtualHost(scheme, v)
	if err == nil && len(v.Domains) <= 1 {
		t.memo.vhosts[k] = memoVhost{vh: vh, routes: v.Routes, epoch: t.memo.epoch}
	}
	return vh, err
}

// clusterMemo returns the remembered messages for c when its IR is the same.
func (t *translator) clusterMemo(c *ir.Cluster) (*clusterv3.Cluster, *endpointv3.ClusterLoadAssignment) {
	if t.memo != nil {
		if mc, ok := t.memo.clusters[c.Name]; ok && sameCluster(&mc.ir, c) {
			if mc.epoch != t.memo.epoch {
				mc.epoch = t.memo.epoch
				t.memo.clusters[c.Name] = mc
			}
			return mc.cluster, mc.endpoints
		}
	}
	cl, e := cluster(c), loadAssignment(c)
	if t.memo != nil {
		t.memo.clusters[c.Name] = memoCluster{ir: *c, cluster: cl, endpoints: e, epoch: t.memo.epoch}
	}
	return cl, e
}

func sameCluster(a, b *ir.Cluster) bool {
	return a.Name == b.Name && a.Protocol == b.Protocol && a.WebSocket == b.WebSocket && slices.Equal(a.Endpoints, b.Endpoints)
}
