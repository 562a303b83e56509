/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"iter"

	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// lsDeps is what one ListenerSet depends on besides itself: the Gateway
// its parentRef names (which it is assembled with), the Secrets its
// listeners name, the namespaces it refers into and its own namespace
// (the Gateway's allowedListeners selector reads its labels).
type lsDeps struct {
	gateway    types.NamespacedName
	hasGateway bool
	secrets    []types.NamespacedName
	grantNS    []string
	ns         string
}

// listenerSetIndexes are the Store's indexes of ListenerSets. A change to
// a ListenerSet, or to a Secret, ReferenceGrant or Namespace one reads,
// marks the Gateway its parentRef names (before and after the change).
type listenerSetIndexes struct {
	lsObjs     objects[gatewayv1.ListenerSet]
	lsDeps     map[types.NamespacedName]lsDeps
	lsByGW     map[types.NamespacedName]refs[types.NamespacedName]
	lsBySecret map[types.NamespacedName]refs[types.NamespacedName]
	lsByGrant  map[string]refs[types.NamespacedName]
	lsByNS     map[string]refs[types.NamespacedName]
	routesByLS map[types.NamespacedName]refs[RouteKey]
}

func newListenerSetIndexes() listenerSetIndexes {
	return listenerSetIndexes{
		lsDeps:     map[types.NamespacedName]lsDeps{},
		lsByGW:     map[types.NamespacedName]refs[types.NamespacedName]{},
		lsBySecret: map[types.NamespacedName]refs[types.NamespacedName]{},
		lsByGrant:  map[string]refs[types.NamespacedName]{},
		lsByNS:     map[string]refs[types.NamespacedName]{},
		routesByLS: map[types.NamespacedName]refs[RouteKey]{},
	}
}

func (s *Store) upsertListenerSet(k types.NamespacedName, o *gatewayv1.ListenerSet) bool {
	old := s.lsObjs.put(k, o)
	if !s.relevant(old, o) {
		return false
	}
	s.unindexListenerSet(k)
	s.indexListenerSet(o)
	return true
}

func (s *Store) deleteListenerSet(k types.NamespacedName) bool {
	if s.lsObjs.remove(k, objKey[gatewayv1.ListenerSet]) == nil {
		return false
	}
	s.unindexListenerSet(k)
	return true
}

// indexListenerSet records what ls depends on and marks its Gateway.
func (s *Store) indexListenerSet(ls *gatewayv1.ListenerSet) {
	k := nn(ls.Namespace, ls.Name)
	d := lsDeps{ns: ls.Namespace}
	d.gateway, d.hasGateway = listenerSetParent(ls)
	for _, l := range ls.Spec.Listeners {
		if l.TLS == nil {
			continue
		}
		for _, ref := range l.TLS.CertificateRefs {
			secretDep(ls.Namespace, ref, &d.secrets, &d.grantNS)
		}
	}
	if d.hasGateway {
		addTo(s.lsByGW, d.gateway, k)
		s.dirty.Gateways.add(d.gateway)
	}
	for _, sec := range d.secrets {
		addTo(s.lsBySecret, sec, k)
	}
	for _, ns := range d.grantNS {
		addTo(s.lsByGrant, ns, k)
	}
	addTo(s.lsByNS, d.ns, k)
	s.lsDeps[k] = d
}

// unindexListenerSet forgets what k depended on and marks its Gateway.
func (s *Store) unindexListenerSet(k types.NamespacedName) {
	d, ok := s.lsDeps[k]
	if !ok {
		return
	}
	if d.hasGateway {
		removeFrom(s.lsByGW, d.gateway, k)
		s.dirty.Gateways.add(d.gateway)
	}
	for _, sec := range d.secrets {
		removeFrom(s.lsBySecret, sec, k)
	}
	for _, ns := range d.grantNS {
		removeFrom(s.lsByGrant, ns, k)
	}
	removeFrom(s.lsByNS, d.ns, k)
	delete(s.lsDeps, k)
}

// markListenerSets marks the Gateways of the ListenerSets in sets.
func (s *Store) markListenerSets(sets refs[types.NamespacedName]) {
	for k := range sets.all() {
		if d := s.lsDeps[k]; d.hasGateway {
			s.dirty.Gateways.add(d.gateway)
		}
	}
}

// hasListenerSets: some ListenerSet names gw. Call with s.mu held.
func (s *Store) hasListenerSets(gw types.NamespacedName) bool {
	return s.lsByGW[gw].len() > 0
}

// listenerSetsOf returns the ListenerSets naming gw, in precedence order.
// Call with s.mu held.
func (s *Store) listenerSetsOf(gw types.NamespacedName) []*gatewayv1.ListenerSet {
	keys := s.lsByGW[gw]
	if keys.len() == 0 {
		return nil
	}
	out := make([]*gatewayv1.ListenerSet, 0, keys.len())
	for k := range keys.all() {
		if ls := s.lsObjs.get(k); ls != nil {
			out = append(out, ls)
		}
	}
	sortListenerSets(out)
	return out
}

// routeGateways lists the Gateways route k is attached through: those its
// parentRefs name, and the parents of the ListenerSets they name. Call with
// s.mu held.
func (s *Store) routeGateways(k RouteKey) []types.NamespacedName {
	d := s.routeDeps[k]
	if len(d.listenerSets) == 0 {
		return d.gateways
	}
	out := append([]types.NamespacedName(nil), d.gateways...)
	for _, ls := range d.listenerSets {
		if ld, ok := s.lsDeps[ls]; ok && ld.hasGateway {
			out = appendUnique(out, ld.gateway)
		}
	}
	return out
}

// routesOf iterates the routes attached to gw directly or through its
// ListenerSets, each once. Call with s.mu held.
func (s *Store) routesOf(gw types.NamespacedName) (iter.Seq[RouteKey], int) {
	direct := s.routesByGW[gw]
	sets := s.lsByGW[gw]
	if sets.len() == 0 {
		return direct.all(), direct.len()
	}
	n := direct.len()
	for ls := range sets.all() {
		n += s.routesByLS[ls].len()
	}
	return func(yield func(RouteKey) bool) {
		seen := make(map[RouteKey]bool, n)
		for k := range direct.all() {
			seen[k] = true
			if !yield(k) {
				return
			}
		}
		for ls := range sets.all() {
			for k := range s.routesByLS[ls].all() {
				if seen[k] {
					continue
				}
				seen[k] = true
				if !yield(k) {
					return
				}
			}
		}
	}, n
}
