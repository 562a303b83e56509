/*
Copyright The shardgate Authors.
*/

package build

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/shardgate/shardgate/xds/translate"
)

// The route table list and the secret list of a check, compared with the
// last check that passed. A shard with automatic HTTPS has a route table
// and a secret per name it serves: a route change must not look at the
// tables and secrets it leaves alone, as it does not serialize them.

// routeTables checks r's route tables and returns their wire forms, in
// order, and the set of their names. After a check that passed, when both
// lists are sorted by name (as the translation sorts them), only the
// tables that are not the last check's very messages are checked (by
// table), the others keep their wire forms, the tables that went are
// forgotten, and the name set is the last one, updated in place; removed
// then says whether a name went. Otherwise every table is checked and the
// names counted afresh (duplicates and empty names reported).
func (e *checkRun) routeTables(r *translate.Resources) (wires []*routev3.RouteConfiguration, names map[string]bool, removed bool) {
	c := e.c
	prev, prevWire := c.lastRoutesIn, c.lastRoutesWire
	if prev != nil && c.routeSet != nil && len(prevWire) == len(prev) {
		if d, ok := sortedChanges(prev, r.Routes, (*routev3.RouteConfiguration).GetName); ok {
			for _, name := range d.gone {
				c.dropTable(name)
				delete(c.routeSet, name)
			}
			wires = make([]*routev3.RouteConfiguration, len(r.Routes))
			i, k := 0, 0
			for j, rc := range r.Routes {
				if k < len(d.changed) && d.changed[k] == j {
					wires[j] = e.table(rc)
					c.routeSet[rc.GetName()] = true
					k++
					continue
				}
				// One of prev's very messages, in prev's order.
				for prev[i] != rc {
					i++
				}
				wires[j] = prevWire[i]
				i++
			}
			e.routesSorted = true
			return wires, c.routeSet, len(d.gone) > 0
		}
	}
	wires = make([]*routev3.RouteConfiguration, len(r.Routes))
	live := make(map[string]bool, len(r.Routes))
	for i, rc := range r.Routes {
		if live[rc.GetName()] {
			continue // a duplicate name, reported below
		}
		live[rc.GetName()] = true
		wires[i] = e.table(rc)
	}
	for name := range c.tables {
		if !live[name] {
			c.dropTable(name)
		}
	}
	names = translate.UniqueNames("route configuration", len(r.Routes), func(i int) string { return r.Routes[i].GetName() }, e.fail)
	e.routesSorted = true
	for i := 1; i < len(r.Routes) && e.routesSorted; i++ {
		e.routesSorted = r.Routes[i-1].GetName() < r.Routes[i].GetName()
	}
	return wires, names, !noneRemoved(c.lastRouteNames, names)
}

// dropTable forgets a route table that left the config.
func (c *Checker) dropTable(name string) {
	ts := c.tables[name]
	if ts == nil {
		return
	}
	for _, vs := range ts.vhosts {
		c.unindex(ts, vs)
	}
	delete(c.tables, name)
}

// secretList checks r's secrets: only those that are not the last
// check's very messages at their place (after a check that passed). It
// returns the set of their names: the last check's while the names are
// the same at the same places (same then says so), else counted afresh.
func (e *checkRun) secretList(r *translate.Resources) (names map[string]bool, same bool) {
	c := e.c
	prev := c.lastSecretList
	if prev != nil && SameList(r.Secrets, prev) && c.lastSecrets != nil {
		return c.lastSecrets, true
	}
	sameNames := walkChanged(r.Secrets, prev, (*tlsv3.Secret).GetName, func(s *tlsv3.Secret) {
		e.one("secret", s.GetName(), s)
	})
	if sameNames && prev != nil && c.lastSecrets != nil {
		return c.lastSecrets, true
	}
	return translate.UniqueNames("secret", len(r.Secrets), func(i int) string { return r.Secrets[i].GetName() }, e.fail), false
}

// routeDigests returns the digests of wires, the wire forms of the route
// tables of a check that passed, in order: those of the last check's list
// where an entry is its very wire form at the same place, looked up for
// the others; nil when one is not known.
func (c *Checker) routeDigests(wires []*routev3.RouteConfiguration) []Digest {
	prev, prevDigests := c.lastRoutesWire, c.lastRouteDigests
	out := make([]Digest, len(wires))
	same := len(prev) == len(wires) && len(prevDigests) == len(prev)
	for i, w := range wires {
		if same && prev[i] == w {
			out[i] = prevDigests[i]
			continue
		}
		d, ok := c.wires[w]
		if !ok {
			return nil
		}
		out[i] = d
	}
	return out
}

// RouteDigests returns the digests of the route tables of the last check
// that passed, in order, when list is that check's list of tables (their
// wire forms, as Check left them in Resources).
func (c *Checker) RouteDigests(list []*routev3.RouteConfiguration) ([]Digest, bool) {
	if c.lastRouteDigests == nil || !SameList(list, c.lastRoutesWire) {
		return nil, false
	}
	return c.lastRouteDigests, true
}

// RoutesSorted reports, when list is the route table list of the last
// check that passed (known), whether its names strictly increase.
func (c *Checker) RoutesSorted(list []*routev3.RouteConfiguration) (sorted, known bool) {
	if c.lastRoutesWire == nil || !SameList(list, c.lastRoutesWire) {
		return false, false
	}
	return c.routesSorted, true
}
