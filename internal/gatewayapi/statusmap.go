/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"hash/maphash"
	"iter"

	"github.com/benbjohnson/immutable"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// RouteStatuses maps a route's namespace/name to the parent entries of
// ours that its status should hold. It is immutable: Set and Delete return
// a new map that shares everything but the changed path with the old one,
// so an incremental translation hands out a new Output without copying the
// statuses of every route. The zero value is an empty map.
type RouteStatuses struct {
	m *immutable.Map[types.NamespacedName, []gatewayv1.RouteParentStatus]
}

// Len returns the number of routes in the map.
func (r RouteStatuses) Len() int {
	if r.m == nil {
		return 0
	}
	return r.m.Len()
}

// Get returns the entries of the route k.
func (r RouteStatuses) Get(k types.NamespacedName) ([]gatewayv1.RouteParentStatus, bool) {
	if r.m == nil {
		return nil, false
	}
	return r.m.Get(k)
}

// At returns the entries of the route k, nil if it has none.
func (r RouteStatuses) At(k types.NamespacedName) []gatewayv1.RouteParentStatus {
	v, _ := r.Get(k)
	return v
}

// Set returns the map with k's entries set to v.
func (r RouteStatuses) Set(k types.NamespacedName, v []gatewayv1.RouteParentStatus) RouteStatuses {
	m := r.m
	if m == nil {
		m = immutable.NewMap[types.NamespacedName, []gatewayv1.RouteParentStatus](nnHasher{})
	}
	return RouteStatuses{m: m.Set(k, v)}
}

// Delete returns the map without k.
func (r RouteStatuses) Delete(k types.NamespacedName) RouteStatuses {
	if r.m == nil {
		return r
	}
	return RouteStatuses{m: r.m.Delete(k)}
}

// All iterates over the map in no particular order.
func (r RouteStatuses) All() iter.Seq2[types.NamespacedName, []gatewayv1.RouteParentStatus] {
	return func(yield func(types.NamespacedName, []gatewayv1.RouteParentStatus) bool) {
		if r.m == nil {
			return
		}
		it := r.m.Iterator()
		for !it.Done() {
			k, v, _ := it.Next()
			if !yield(k, v) {
				return
			}
		}
	}
}

// RouteStatusesOf returns a map holding the entries of m.
func RouteStatusesOf(m map[types.NamespacedName][]gatewayv1.RouteParentStatus) RouteStatuses {
	if len(m) == 0 {
		return RouteStatuses{}
	}
	b := immutable.NewMapBuilder[types.NamespacedName, []gatewayv1.RouteParentStatus](nnHasher{})
	for k, v := range m {
		b.Set(k, v)
	}
	return RouteStatuses{m: b.Map()}
}

// nnSeed seeds the hash of every RouteStatuses of the process; a map's
// hashes must not change over its life.
var nnSeed = maphash.MakeSeed()

type nnHasher struct{}

func (nnHasher) Hash(k types.NamespacedName) uint32 {
	return uint32(maphash.Comparable(nnSeed, k))
}

func (nnHasher) Equal(a, b types.NamespacedName) bool { return a == b }
