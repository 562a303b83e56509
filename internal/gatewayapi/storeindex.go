/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"iter"
	"slices"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// refs is a set that stays a short slice while it is small (most
// Services have one route, most routes one Service), and becomes a map
// when it grows.
type refs[K comparable] struct {
	few  []K
	many map[K]struct{}
}

const refsFew = 8

func (r refs[K]) len() int {
	if r.many != nil {
		return len(r.many)
	}
	return len(r.few)
}

func (r refs[K]) has(k K) bool {
	if r.many != nil {
		_, ok := r.many[k]
		return ok
	}
	return slices.Contains(r.few, k)
}

// all iterates the members.
func (r refs[K]) all() iter.Seq[K] {
	return func(yield func(K) bool) {
		if r.many != nil {
			for k := range r.many {
				if !yield(k) {
					return
				}
			}
			return
		}
		for _, k := range r.few {
			if !yield(k) {
				return
			}
		}
	}
}

func (r refs[K]) with(k K) refs[K] {
	switch {
	case r.has(k):
	case r.many != nil:
		r.many[k] = struct{}{}
	case len(r.few) < refsFew:
		r.few = append(r.few, k)
	default:
		r.many = make(map[K]struct{}, 2*refsFew)
		for _, x := range r.few {
			r.many[x] = struct{}{}
		}
		r.many[k] = struct{}{}
		r.few = nil
	}
	return r
}

func (r refs[K]) without(k K) refs[K] {
	if r.many != nil {
		delete(r.many, k)
		return r
	}
	if i := slices.Index(r.few, k); i >= 0 {
		r.few = slices.Delete(r.few, i, i+1)
	}
	return r
}

func addTo[K, V comparable](m map[K]refs[V], k K, v V) {
	m[k] = m[k].with(v)
}

func removeFrom[K, V comparable](m map[K]refs[V], k K, v V) {
	r, ok := m[k]
	if !ok {
		return
	}
	if r = r.without(v); r.len() == 0 {
		delete(m, k)
		return
	}
	m[k] = r
}

// routeDependencies lists what compiling and attaching a route reads: the
// Services its backendRefs and mirrors name (whatever their group and kind:
// a superset is harmless), the namespaces it refers into (ReferenceGrants
// there decide), the Gateways its parentRefs name and its namespace.
//
// buf is scratch space for the route's backend references, handed back
// (emptied) for the next call.
func routeDependencies(ns string, obj Object, buf []gatewayv1.BackendObjectReference) (deps, []gatewayv1.BackendObjectReference) {
	d := deps{ns: ns}
	ref := func(r gatewayv1.BackendObjectReference) {
		rns := ns
		if r.Namespace != nil && *r.Namespace != "" {
			rns = string(*r.Namespace)
		}
		d.services = appendUnique(d.services, nn(rns, string(r.Name)))
		if rns != ns {
			d.grantNS = appendUnique(d.grantNS, rns)
		}
	}
	if rk := routeKindOf(obj); rk != nil {
		_, refs := rk.spec(obj)
		d.gateways = parentGateways(ns, refs)
		d.listenerSets = parentListenerSets(ns, refs)
		buf = rk.backendRefs(obj, buf[:0])
		for _, r := range buf {
			ref(r)
		}
		clear(buf)
	}
	return d, buf[:0]
}

func appendUnique[T comparable](list []T, v T) []T {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}
