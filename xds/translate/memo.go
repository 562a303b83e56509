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
	tables   map[string][]memoVhost
	clusters []memoCluster // in IR order
	sorted   bool          // clusters are sorted by name
	// irClusters is the IR cluster list last translated (its first
	// element), and lastClusters and lastEndpoints its messages.
	irClusters    **ir.Cluster
	lastClusters  []*clusterv3.Cluster
	lastEndpoints []*endpointv3.ClusterLoadAssignment
	websocket     string // the WebSocket clusters the virtual hosts were built with
	retained      string // the retained clusters the virtual hosts were built with
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
//
// The memory of the table is updated in place while the new IR keeps the
// old one's positions (an edit of a virtual host); only an added or removed
// host makes it a new list. (Each entry describes a real IR → message
// mapping, so a translation that fails half-way leaves valid memory.)
func (t *translator) routeConfigurationMemo(name, scheme string, vhosts []*ir.VirtualHost) (*routev3.RouteConfiguration, error) {
	prev := t.memo.tables[name]
	var cur []memoVhost
	// While inPlace, the new list so far is prev[:i], and j == i.
	inPlace := true
	leave := func(i int) {
		if inPlace {
			inPlace = false
			cur = append(make([]memoVhost, 0, len(vhosts)), prev[:i]...)
		}
	}
	rc := &routev3.RouteConfiguration{
		Name:                     name,
		VirtualHosts:             make([]*routev3.VirtualHost, len(vhosts)),
		IgnorePortInHostMatching: true,
	}
	j := 0
	for i, v := range vhosts {
		if j < len(prev) && sameVhost(&prev[j], scheme, v) {
			rc.VirtualHosts[i] = prev[j].vh
			if !inPlace {
				cur = append(cur, prev[j])
			}
			j++
			continue
		}
		// Both lists are sorted by name: skip what was removed.
		for j < len(prev) && prev[j].name < v.Name {
			leave(i)
			j++
		}
		vh, err := t.virtualHost(scheme, v)
		if err != nil {
			return nil, fmt.Errorf("virtual host %s: %w", v.Name, err)
		}
		rc.VirtualHosts[i] = vh
		e := memoVhost{routes: v.Routes, name: v.Name, domains: v.Domains, scheme: scheme, vh: vh}
		if j < len(prev) && prev[j].name == v.Name {
			if inPlace {
				prev[j] = e // edited in its place
			} else {
				cur = append(cur, e)
			}
			j++
			continue
		}
		leave(i)
		cur = append(cur, e)
	}
	if inPlace {
		n := len(vhosts)
		t.next[name] = prev[:n:n]
	} else {
		t.next[name] = cur
	}
	return rc, nil
}

func sameVhost(e *memoVhost, scheme string, v *ir.VirtualHost) bool {
	if e.name != v.Name || e.scheme != scheme || len(e.routes) != len(v.Routes) || !slices.Equal(e.domains, v.Domains) {
		return false
	}
	return len(v.Routes) == 0 || &e.routes[0] == &v.Routes[0]
}

// clustersMemo translates gw's clusters, reusing the remembered messages of
// every cluster whose IR is the same. IR is never modified once built, so
// the very same IR cluster list as last time yields the very same lists of
// messages (which callers must not modify).
func (t *translator) clustersMemo(gw *ir.Gateway, r *Resources) {
	m := t.memo
	if len(gw.Clusters) > 0 && len(gw.Clusters) == len(m.clusters) && &gw.Clusters[0] == m.irClusters {
		r.Clusters, r.Endpoints = m.lastClusters, m.lastEndpoints
		t.clustersKept = true // sorted when they were built (by sort, if not before)
		return
	}
	prev := m.clusters
	cur := make([]memoCluster, 0, len(gw.Clusters))
	// The list is sorted when the previous one was and every cluster not
	// taken from it (in its order) sits between its neighbours.
	sorted := m.sorted || len(prev) == 0
	j := 0
	for i, c := range gw.Clusters {
		var e memoCluster
		if j < len(prev) && sameCluster(&prev[j].ir, c) {
			e = prev[j]
			j++
		} else {
			for j < len(prev) && prev[j].ir.Name < c.Name {
				j++
			}
			switch {
			case j < len(prev) && sameCluster(&prev[j].ir, c):
				e = prev[j]
				j++
			case j < len(prev) && sameClusterConfig(&prev[j].ir, c):
				// Only its endpoints changed: the same cluster.
				e = memoCluster{ir: *c, cluster: prev[j].cluster, endpoints: loadAssignment(c)}
				j++
			default:
				e = memoCluster{ir: *c, cluster: cluster(c), endpoints: loadAssignment(c)}
				if i > 0 && gw.Clusters[i-1].Name >= c.Name || i+1 < len(gw.Clusters) && c.Name >= gw.Clusters[i+1].Name {
					sorted = false
				}
			}
		}
		cur = append(cur, e)
		r.Clusters = append(r.Clusters, e.cluster)
		r.Endpoints = append(r.Endpoints, e.endpoints)
	}
	m.clusters, m.sorted = cur, sorted
	t.clustersKept = sorted
	m.irClusters = nil
	if len(gw.Clusters) > 0 {
		m.irClusters = &gw.Clusters[0]
	}
	r.Clusters, r.Endpoints = slices.Clip(r.Clusters), slices.Clip(r.Endpoints)
	m.lastClusters, m.lastEndpoints = r.Clusters, r.Endpoints
}

func sameCluster(a, b *ir.Cluster) bool {
	return sameClusterConfig(a, b) && slices.Equal(a.Endpoints, b.Endpoints)
}

// sameClusterConfig: the same Cluster message (which does not carry the
// endpoints).
func sameClusterConfig(a, b *ir.Cluster) bool {
	return a.Name == b.Name && a.Protocol == b.Protocol && a.WebSocket == b.WebSocket
}
