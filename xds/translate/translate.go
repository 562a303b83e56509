/*
Copyright The shardgate Authors.
*/

package translate

import (
	"cmp"
	"fmt"
	"slices"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/shardgate/shardgate/internal/ir"
)

// Resources is one Gateway's Envoy configuration. Each slice is sorted by
// resource name.
type Resources struct {
	Listeners []*listenerv3.Listener
	Routes    []*routev3.RouteConfiguration
	Clusters  []*clusterv3.Cluster
	Endpoints []*endpointv3.ClusterLoadAssignment
	Secrets   []*tlsv3.Secret
}

// Translate builds the Envoy resources for gw. It is deterministic and does
// not modify gw. It fails only on IR it cannot express (an unknown protocol
// or redirect code); referential problems are left to Validate.
func Translate(gw *ir.Gateway) (*Resources, error) {
	t := translator{clusters: make(map[string]*ir.Cluster, len(gw.Clusters))}
	return t.translate(gw)
}

func (t *translator) translate(gw *ir.Gateway) (*Resources, error) {
	for i := range gw.Clusters {
		t.clusters[gw.Clusters[i].Name] = &gw.Clusters[i]
	}

	r := &Resources{
		Clusters:  make([]*clusterv3.Cluster, 0, len(gw.Clusters)),
		Endpoints: make([]*endpointv3.ClusterLoadAssignment, 0, len(gw.Clusters)),
		Secrets:   make([]*tlsv3.Secret, 0, len(gw.Secrets)),
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
	for i := range gw.Clusters {
		cl, e := t.clusterMemo(&gw.Clusters[i])
		r.Clusters = append(r.Clusters, cl)
		r.Endpoints = append(r.Endpoints, e)
	}
	for i := range gw.Secrets {
		r.Secrets = append(r.Secrets, secret(&gw.Secrets[i]))
	}
	r.sort()
	return r, nil
}

// translator carries the lookups one translation needs.
type translator struct {
	clusters map[string]*ir.Cluster
	// retained clusters get a route that never matches in every virtual
	// host (RetainedRoute).
	retained []string
	// memo, when set, remembers messages across translations (memo.go).
	memo       *Memo
	usedVhosts int
}

// sort orders every resource list by name. The IR is already sorted, but
// listener names ("http-80", "https-443", ...) do not sort like ports, and
// one listener can yield several route configurations.
func (r *Resources) sort() {
	slices.SortStableFunc(r.Listeners, func(a, b *listenerv3.Listener) int { return cmp.Compare(a.GetName(), b.GetName()) })
	slices.SortStableFunc(r.Routes, func(a, b *routev3.RouteConfiguration) int { return cmp.Compare(a.GetName(), b.GetName()) })
	slices.SortStableFunc(r.Clusters, func(a, b *clusterv3.Cluster) int { return cmp.Compare(a.GetName(), b.GetName()) })
	slices.SortStableFunc(r.Endpoints, func(a, b *endpointv3.ClusterLoadAssignment) int {
		return cmp.Compare(a.GetClusterName(), b.GetClusterName())
	})
	slices.SortStableFunc(r.Secrets, func(a, b *tlsv3.Secret) int { return cmp.Compare(a.GetName(), b.GetName()) })
}
