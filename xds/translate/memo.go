/*
Copyright The shardgate Authors.
*/

package translate

import (
	"fmt"
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
// The memory is kept in the IR's own order (virtual hosts and clusters are
// sorted by name), and a translation walks it alongside the new IR: no
// lookup costs more than a comparison, so an unchanged virtual host costs a
// few word compares, not a hash lookup.
//
// A virtual host is recognised by its IR routes' backing array: the Gateway
// API translator keeps an unchanged virtual host's array and builds a new
// one for a changed host, and IR is never modified once built. The memo
// holds the arrays it compares with, so an address cannot be reused while
// remembered. A cluster is recognised by comparing its IR.
//
// Messages returned from memory are shared with earlier translations:
// callers must not modify them (clone first). A Memo is not safe for
// concurrent use.
type Memo struct {
	// tables: per route configuration name, its virtual hosts in order.
	tables    map[string][]memoVhost
	clusters  []memoCluster // in IR order
	websocket string        // the WebSocket clusters the virtual hosts were built with
	retained  string        // the retained clusters the virtual hosts were built with
}

type memoVhost struct {
	routes  []ir.Route // holds the array compared by address
	name    string
	domains []string
	scheme  string
	vh      *routev3.VirtualHost
}

type memoCluster struct {
	ir        ir.Cluster
	cluster   *clusterv3.Cluster
	endpoints *endpointv3.ClusterLoadAssignment
}

// Translate is Translate(gw), from memory where it can. Every virtual host
// also gets a RetainedRoute for each of the retained clusters, which the
// caller keeps published for a while after they left gw (the caller adds
// the clusters themselves).
func (m *Memo) Translate(gw *ir.Gateway, retained ...string) (*Resources, error) {
	// Route actions depend on whether their clusters speak WebSocket: a
	// change there rebuilds every virtual host. So does a change of the
	// retained clusters (rare: a cluster leaving the config, or its
	// retention ending).
	var ws []byte
	for i := range gw.Clusters {
		if gw.Clusters[i].WebSocket {
			ws = append(ws, gw.Clusters[i].Name...)
			ws = append(ws, 0)
		}
	}
	var kept []byte
	for _, c := range retained {
		kept = append(kept, c...)
		kept = append(kept, 0)
	}
	if string(ws) != m.websocket || string(kept) != m.retained || m.tables == nil {
		m.tables = map[string][]memoVhost{}
		m.websocket, m.retained = string(ws), string(kept)
	}
	t := translator{memo: m, retained: retained, next: map[string][]memoVhost{}}
	res, err := t.translate(gw)
	if err != nil {
		return nil, err
	}
	m.tables = t.next
	return res, nil
}

// routeConfigurationMemo builds a route table, reusing the remembered
// message of every virtual host whose IR is the same.
func (t *translator) routeConfigurationMemo(name, scheme string, vhosts []ir.VirtualHost) (*routev3.RouteConfiguration, error) {
	prev := t.memo.tables[name]
	cur := make([]memoVhost, 0, len(vhosts))
	rc := &routev3.RouteConfiguration{
		Name:                     name,
		VirtualHosts:             make([]*routev3.VirtualHost, 0, len(vhosts)),
		IgnorePortInHostMatching: true,
	}
	j := 0
	for i := range vhosts {
		v := &vhosts[i]
		// Both lists are sorted by name: skip what was removed.
		for j < len(prev) && prev[j].name < v.Name {
			j++
		}
		var vh *routev3.VirtualHost
		if j < len(prev) && sameVhost(&prev[j], scheme, v) {
			vh = prev[j].vh
			cur = append(cur, prev[j])
			j++
		} else {
			var err error
			if vh, err = t.virtualHost(scheme, v); err != nil {
				return nil, fmt.Errorf("virtual host %s: %w", v.Name, err)
			}
			cur = append(cur, memoVhost{routes: v.Routes, name: v.Name, domains: v.Domains, scheme: scheme, vh: vh})
		}
		rc.VirtualHosts = append(rc.VirtualHosts, vh)
	}
	t.next[name] = cur
	return rc, nil
}

func sameVhost(e *memoVhost, scheme string, v *ir.VirtualHost) bool {
	if e.name != v.Name || e.scheme != scheme || len(e.routes) != len(v.Routes) || !slices.Equal(e.domains, v.Domains) {
		return false
	}
	return len(v.Routes) == 0 || &e.routes[0] == &v.Routes[0]
}

// clustersMemo translates gw's clusters, reusing the remembered messages of
// every cluster whose IR is the same.
func (t *translator) clustersMemo(gw *ir.Gateway, r *Resources) {
	prev := t.memo.clusters
	cur := make([]memoCluster, 0, len(gw.Clusters))
	j := 0
	for i := range gw.Clusters {
		c := &gw.Clusters[i]
		for j < len(prev) && prev[j].ir.Name < c.Name {
			j++
		}
		var e memoCluster
		if j < len(prev) && sameCluster(&prev[j].ir, c) {
			e = prev[j]
			j++
		} else {
			e = memoCluster{ir: *c, cluster: cluster(c), endpoints: loadAssignment(c)}
		}
		cur = append(cur, e)
		r.Clusters = append(r.Clusters, e.cluster)
		r.Endpoints = append(r.Endpoints, e.endpoints)
	}
	t.memo.clusters = cur
}

func sameCluster(a, b *ir.Cluster) bool {
	return a.Name == b.Name && a.Protocol == b.Protocol && a.WebSocket == b.WebSocket && slices.Equal(a.Endpoints, b.Endpoints)
}
