/*
Copyright The shardgate Authors.
*/

package build

import (
	"fmt"
	"slices"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/translate"
)

// The route table list in the memo. A shard with automatic HTTPS has a
// route table per name it serves: a translation whose IR change names a
// few virtual hosts (ir.Change) builds their tables again and hands out
// every other table where it was in the last list, without looking at
// it.

// tableKey names a route table by its listener and TLS server ("" for an
// HTTP listener's), as ir.VirtualHostRef names its hosts.
type tableKey struct{ listener, server string }

// tablePlace is where a route table comes from and goes: its listener's
// place in the IR, its own among the listener's tables
// (translate.RouteTableOf), its name, and its place in the route list
// handed out.
type tablePlace struct {
	listener, table, at int
	name                string
}

// memoTables is the memo's route table list: the last list handed out,
// sorted by name (the memo's own copy: the checker replaces the handed
// out list's entries by wire forms), where each table is, the IR's
// listeners (names and number of tables) it was made for, and the tables
// with virtual hosts that carry retained clusters. checked says a check
// passed the list last handed out (Memo.adopt): only then is it updated
// by place, as a refused list may hold what the next IR's change does
// not name again.
type memoTables struct {
	checked   bool
	list      []*routev3.RouteConfiguration
	places    map[tableKey]tablePlace
	listeners []string
	counts    []int
	carrying  map[tableKey]bool
}

// tablesToBuild returns the tables a translation of gw, whose change names
// some virtual hosts, builds again: those the change names a host of, and
// those with hosts that carry a cluster no longer retained. It returns
// false when the memo's list cannot be updated by place: none remembered
// or none that passed a check,
// the IR's listeners or tables are not those it was made for, or the
// change names a table it does not have.
func (t *memoRun) tablesToBuild(gw *ir.Gateway) ([]tablePlace, bool) {
	m := &t.memo.list
	checked := m.checked
	m.checked = false // until the list this translation hands out passes
	if t.change.all || !checked || m.list == nil || len(gw.Listeners) != len(m.listeners) {
		return nil, false
	}
	for i := range gw.Listeners {
		l := &gw.Listeners[i]
		if l.Name != m.listeners[i] || tableCount(l) != m.counts[i] {
			return nil, false
		}
	}
	var out []tablePlace
	seen := map[tableKey]bool{}
	add := func(k tableKey) bool {
		if seen[k] {
			return true
		}
		seen[k] = true
		p, ok := m.places[k]
		if !ok {
			return false
		}
		l := &gw.Listeners[p.listener]
		if l.Protocol == ir.ProtocolHTTPS && (p.table >= len(l.TLSServers) || l.TLSServers[p.table].Name != k.server) {
			return false
		}
		out = append(out, p)
		return true
	}
	for _, v := range t.change.vhosts {
		if !add(tableKey{listener: v.Listener, server: v.Server}) {
			return nil, false
		}
	}
	for k := range m.carrying {
		if p, ok := m.places[k]; ok && !t.allStillRetained(t.memo.tables[p.name]) && !add(k) {
			return nil, false
		}
	}
	slices.SortFunc(out, func(a, b tablePlace) int { return a.at - b.at })
	return out, true
}

// tableCount is the number of route tables of l, as
// translate.RouteTables makes them, without making them.
func tableCount(l *ir.Listener) int {
	switch l.Protocol {
	case ir.ProtocolHTTP:
		return 1
	case ir.ProtocolHTTPS:
		return len(l.TLSServers)
	}
	return 0
}

// translateChanged is translate for an IR whose change names virtual hosts
// (and clusters) only, the memo's route table list being that of the IR
// last translated: the named tables are built again at their places in
// the list, the others are the very messages handed out last. The memo's
// route table memory is updated in place (each entry a real IR to message
// mapping, so a translation that fails half-way leaves valid memory).
func (t *memoRun) translateChanged(gw *ir.Gateway, todo []tablePlace) (*translate.Resources, error) {
	m := t.memo
	t.next, t.nextRCs = m.tables, m.rcs
	r := &translate.Resources{}
	traffic := ir.TrafficOf(gw)
	for i := range gw.Listeners {
		l := &gw.Listeners[i]
		listener, err := t.listener(l, traffic)
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		if listener != nil {
			r.Listeners = append(r.Listeners, listener)
		}
	}
	for _, p := range todo {
		l := &gw.Listeners[p.listener]
		rt := translate.RouteTableOf(l, p.table)
		if rt.Name != p.name {
			return nil, fmt.Errorf("listener %s: route table %s at the place of %s", l.Name, rt.Name, p.name)
		}
		rc, err := t.routeConfigurationMemo(l.Name, rt)
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		m.list.list[p.at] = rc
		t.noteCarrying(tableKey{listener: l.Name, server: rt.Server}, rt.Name)
	}
	t.clustersMemo(gw, r)
	secretsKept := t.secretsMemo(gw, r)
	secrets := r.Secrets
	if secretsKept {
		r.Secrets = nil // sorted when they were built
	}
	r.Sort(t.clustersKept)
	if secretsKept {
		r.Secrets = secrets
	}
	r.Routes = slices.Clone(m.list.list) // in their order, by name
	return r, nil
}

// noteCarrying records whether table name (k) has hosts that carry
// retained clusters.
func (t *memoRun) noteCarrying(k tableKey, name string) {
	m := &t.memo.list
	for _, e := range t.next[name] {
		if len(e.carried) > 0 {
			if m.carrying == nil {
				m.carrying = map[tableKey]bool{}
			}
			m.carrying[k] = true
			return
		}
	}
	delete(m.carrying, k)
}

// rememberTables makes the memo's route table list that of a full
// translation of gw, r (sorted): tables are the places of its tables in
// gw. A list with a name twice is not remembered.
func (t *memoRun) rememberTables(gw *ir.Gateway, r *translate.Resources, tables []tablePlace) {
	m := &t.memo.list
	*m = memoTables{}
	at := make(map[string]int, len(r.Routes))
	for i, rc := range r.Routes {
		at[rc.GetName()] = i
	}
	if len(at) != len(r.Routes) || len(tables) != len(r.Routes) {
		return
	}
	places := make(map[tableKey]tablePlace, len(tables))
	for _, p := range tables {
		l := &gw.Listeners[p.listener]
		k := tableKey{listener: l.Name}
		if l.Protocol == ir.ProtocolHTTPS {
			k.server = l.TLSServers[p.table].Name
		}
		p.at = at[p.name]
		places[k] = p
		t.noteCarrying(k, p.name)
	}
	if len(places) != len(tables) {
		*m = memoTables{}
		return
	}
	m.places = places
	for i := range gw.Listeners {
		m.listeners = append(m.listeners, gw.Listeners[i].Name)
		m.counts = append(m.counts, tableCount(&gw.Listeners[i]))
	}
	m.list = slices.Clone(r.Routes)
}
