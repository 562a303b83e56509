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
//
// It is the composition of the per-unit functions (Scope.Listener,
// RouteTables, Scope.RouteConfiguration, Cluster, Secret),
// which an incremental caller (xds/build) calls for what changed only.
func Translate(gw *ir.Gateway) (*Resources, error) {
	sc := NewScope(gw)
	r := &Resources{
		Secrets:  make([]*tlsv3.Secret, 0, len(gw.Secrets)),
		Clusters: make([]*clusterv3.Cluster, 0, len(gw.Clusters)),
	}
	for i := range gw.Listeners {
		l := &gw.Listeners[i]
		listener, err := sc.Listener(l)
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		if listener == nil {
			continue
		}
		r.Listeners = append(r.Listeners, listener)
		for _, rt := range RouteTables(l) {
			rc, err := sc.RouteConfiguration(rt)
			if err != nil {
				return nil, fmt.Errorf("listener %s: %w", l.Name, err)
			}
			r.Routes = append(r.Routes, rc)
		}
	}
	for _, c := range gw.Clusters {
		r.Clusters = append(r.Clusters, Cluster(c))
	}
	for i := range gw.Secrets {
		r.Secrets = append(r.Secrets, Secret(&gw.Secrets[i]))
	}
	r.Sort(false)
	return r, nil
}

// Scope is the Gateway a unit of translation belongs to: the units of one
// Gateway (a virtual host, a listener) read its clusters and traffic
// settings. A Scope is made for one translation of one IR and holds nothing
// but lookups into it; it is not safe for concurrent use.
type Scope struct {
	t translator
}

// NewScope returns the Scope of gw's units.
func NewScope(gw *ir.Gateway) *Scope {
	return &Scope{t: translator{gw: gw}}
}

// translator carries the lookups one translation needs.
type translator struct {
	gw *ir.Gateway
	// byName indexes gw.Clusters when they are not sorted by name (the
	// IR promises they are; then a binary search finds one). Empty and
	// not nil: the list was found sorted.
	byName map[string]*ir.Cluster
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

// Sort orders every resource list by name. The IR is already sorted, but
// listener names ("http-80", "https-443", ...) do not sort like ports, and
// one listener can yield several route configurations. clustersSorted says
// the cluster list is known to be sorted.
func (r *Resources) Sort(clustersSorted bool) {
	byName := func(a, b *clusterv3.Cluster) int { return cmp.Compare(a.GetName(), b.GetName()) }
	if clustersSorted || slices.IsSortedFunc(r.Clusters, byName) {
		// From IR sorted by name, as it should be: a check is cheaper
		// than a sort.
		slices.SortStableFunc(r.Listeners, func(a, b *listenerv3.Listener) int { return cmp.Compare(a.GetName(), b.GetName()) })
		sortByName(r.Routes, (*routev3.RouteConfiguration).GetName)
		sortByName(r.Secrets, (*tlsv3.Secret).GetName)
		return
	}
	slices.SortStableFunc(r.Listeners, func(a, b *listenerv3.Listener) int { return cmp.Compare(a.GetName(), b.GetName()) })
	slices.SortStableFunc(r.Routes, func(a, b *routev3.RouteConfiguration) int { return cmp.Compare(a.GetName(), b.GetName()) })
	slices.SortStableFunc(r.Clusters, func(a, b *clusterv3.Cluster) int { return cmp.Compare(a.GetName(), b.GetName()) })
	slices.SortStableFunc(r.Secrets, func(a, b *tlsv3.Secret) int { return cmp.Compare(a.GetName(), b.GetName()) })
}

// sortByName sorts list by name, stably, unless it is sorted already (a
// shard with automatic HTTPS has a route table and a secret per name: a
// check is cheaper than a sort).
func sortByName[T any](list []T, name func(T) string) {
	byName := func(a, b T) int { return cmp.Compare(name(a), name(b)) }
	if !slices.IsSortedFunc(list, byName) {
		slices.SortStableFunc(list, byName)
	}
}
