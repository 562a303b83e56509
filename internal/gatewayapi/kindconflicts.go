/*
Copyright The shardgate Authors.
*/

package gatewayapi

import "sort"

// resolveKindConflicts applies the GRPCRoute hostnames rule: on one
// listener, an HTTPRoute and a GRPCRoute with intersecting hostnames cannot
// both be accepted; the oldest (then alphabetical namespace/name) wins, and
// routes are considered in that order so a rejected route rejects nothing.
func resolveKindConflicts(l *listenerState) {
	nHTTP, nGRPC := 0, 0
	for k := range l.attached {
		switch k.Kind {
		case kindHTTPRoute:
			nHTTP++
		case kindGRPCRoute:
			nGRPC++
		}
	}
	if nHTTP == 0 || nGRPC == 0 {
		return
	}
	type item struct {
		key RouteKey
		a   *attachment
	}
	var items []item
	for k, a := range l.attached {
		if k.Kind == kindHTTPRoute || k.Kind == kindGRPCRoute {
			items = append(items, item{k, a})
		}
	}
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if !a.a.route.created.Equal(&b.a.route.created) {
			return a.a.route.created.Before(&b.a.route.created)
		}
		if a.key.NN != b.key.NN {
			return nsNameLess(a.key.NN.Namespace, a.key.NN.Name, b.key.NN.Namespace, b.key.NN.Name)
		}
		return a.key.Kind < b.key.Kind
	})
	accepted := map[string]map[string]bool{kindHTTPRoute: {}, kindGRPCRoute: {}}
	for _, it := range items {
		other := kindHTTPRoute
		if it.key.Kind == kindHTTPRoute {
			other = kindGRPCRoute
		}
		if hostsIntersect(it.a.hostname, accepted[other]) {
			delete(l.attached, it.key)
			continue
		}
		for _, h := range it.a.hostname {
			accepted[it.key.Kind][h] = true
		}
	}
}

// hostsIntersect says whether any hostname of a shares a request hostname
// with any of b.
func hostsIntersect(a []string, b map[string]bool) bool {
	if len(b) == 0 {
		return false
	}
	for _, h := range a {
		if b[h] {
			return true
		}
		if h == "" || b[""] {
			return true
		}
		var buf [256]byte
		for c, rest, ok := coverNext(coverStart(h), buf[:0]); ok; c, rest, ok = coverNext(rest, buf[:0]) {
			if b[string(c)] {
				return true
			}
		}
		if isWildcard(h) {
			for o := range b {
				if hostnameCovers(h, o) {
					return true
				}
			}
		}
	}
	return false
}
