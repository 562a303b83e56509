/*
Copyright The shardgate Authors.
*/

package translate

import (
	"cmp"
	"fmt"
	"slices"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/shardgate/shardgate/internal/ir"
)

// Resources is one Gateway's Envoy configuration but its load assignments,
// which xds/endpoints builds from EndpointSlices. Each slice is sorted by
// resource name.
type Resources struct {
	Listeners []*listenerv3.Listener
	Routes    []*routev3.RouteConfiguration
	Clusters  []*clusterv3.Cluster
	Secrets   []*tlsv3.Secret
}

// Translate builds the Envoy resources for gw. It is deterministic and does
// not modify gw. It fails only on IR it cannot express (an unknown protocol
// or redirect code); referential problems are left to Validate.
func Translate(gw *ir.Gateway) (*Resources, error) {
	var t translator
	return t.translate(gw)
}

func (t *translator) translate(gw *ir.Gateway) (*Resources, error) {
	t.gw = gw
	r := &Resources{Secrets: make([]*tlsv3.Secret, 0, len(gw.Secrets))}
	if t.memo == nil { // the memo hands out its own lists
		r.Clusters = make([]*clusterv3.Cluster, 0, len(gw.Clusters))
	}
	for i := range gw.Listeners {
		l := &gw.Listeners[i]
		listener, routes, err := t.listener(l)
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		if listener != nil {
			r.Listeners = append(r.Listeners, listener)
		}
		r.Routes = append(r.Routes, routes...)
	}
	if t.memo != nil {
		t.clustersMemo(gw, r)
	} else {
		for _, c := range gw.Clusters {
			r.Clusters = append(r.Clusters, cluster(c))
		}
	}
	for i := range gw.Secrets {
		r.Secrets = append(r.Secrets, secret(&gw.Secrets[i]))
	}
	r.sort(t.clustersKept)
	return r, nil
}

// translator carries the lookups one translation needs.
type translator struct {
	gw *ir.Gateway
	// byName indexes gw.Clusters when they are not sorted by name (the
	// IR promises they are; then a binary search finds one). Empty and
	// not nil: the list was found sorted.
	byName map[string]*ir.Cluster
	// retained: the clusters that left the Gateway and stay published
	// for a while; a virtual host that sent to one keeps a route to it
	// that never matches (RetainedRoute; memo only).
	retained map[string]bool
	// memo, when set, remembers messages across translations (memo.go);
	// next is what it remembers after this one.
	memo *Memo
	next map[string][]*memoVhost
	// nextListeners: the HTTP listeners the memo remembers after this
	// translation.
	nextListeners map[string]memoListener
	// clustersKept: the cluster list is the memo's, as built and sorted
	// before.
	clustersKept bool
}

// cluster returns gw's cluster named name, or nil. A binary search finds
// it in the sorted list the IR promises; only a name it misses costs a
// look at whether the list is sorted (once per translation), and an
// unsorted list is indexed.
func (t *translator) cluster(name string) *ir.Cluster {
	cs := t.gw.Clusters
	if len(t.byName) > 0 {
		return t.byName[name]
	}
	if i, ok := slices.BinarySearchFunc(cs, name, func(c *ir.Cluster, n string) int { return cmp.Compare(c.Name, n) }); ok {
		return cs[i]
	}
	if t.byName == nil {
		t.byName = map[string]*ir.Cluster{} // sorted: the search is right
		if !slices.IsSortedFunc(cs, func(a, b *ir.Cluster) int { return cmp.Compare(a.Name, b.Name) }) {
			for _, c := range cs {
				t.byName[c.Name] = c
			}
			return t.byName[name]
		}
	}
	return nil
}

// sort orders every resource list by name. The IR is already sorted, but
// listener names ("http-80", "https-443", ...) do not sort like ports, and
// one listener can yield several route configurations. clustersSorted says
// the cluster list is known to be sorted.
func (r *Resources) sort(clustersSorted bool) {
	byName := func(a, b *clusterv3.Cluster) int { return cmp.Compare(a.GetName(), b.GetName()) }
	if clustersSorted || slices.IsSortedFunc(r.Clusters, byName) {
		// From IR sorted by name, as it should be: a check is cheaper
		// than a sort.
		slices.SortStableFunc(r.Listeners, func(a, b *listenerv3.Listener) int { return cmp.Compare(a.GetName(), b.GetName()) })
		slices.SortStableFunc(r.Routes, func(a, b *routev3.RouteConfiguration) int { return cmp.Compare(a.GetName(), b.GetName()) })
		slices.SortStableFunc(r.Secrets, func(a, b *tlsv3.Secret) int { return cmp.Compare(a.GetName(), b.GetName()) })
		return
	}
	slices.SortStableFunc(r.Listeners, func(a, b *listenerv3.Listener) int { return cmp.Compare(a.GetName(), b.GetName()) })
	slices.SortStableFunc(r.Routes, func(a, b *routev3.RouteConfiguration) int { return cmp.Compare(a.GetName(), b.GetName()) })
	slices.SortStableFunc(r.Clusters, func(a, b *clusterv3.Cluster) int { return cmp.Compare(a.GetName(), b.GetName()) })
	slices.SortStableFunc(r.Secrets, func(a, b *tlsv3.Secret) int { return cmp.Compare(a.GetName(), b.GetName()) })
}
