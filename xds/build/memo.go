/*
Copyright The shardgate Authors.
*/

package build

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/translate"
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
// What changed is said by the IR (ir.Gateway.Change): a virtual host of the
// IR the memo last translated that the change does not name is that very
// host again, and its remembered message is handed out. An IR without a
// Change relative to the one last translated (a first IR, a full
// translation, an IR built by hand, or one after an IR the memo never saw)
// has every virtual host compared with the IR host the remembered message
// was built from (by content: an IR is never modified once built, so the
// very same host is an equal one), and built again
// unless equal; a table all of whose hosts are the remembered ones is the
// remembered message. Clusters likewise: one the change
// does not name is the remembered message; one it names, or any when it
// cannot tell, is compared with the IR remembered under its name.
//
// Messages returned from memory are shared with earlier translations:
// callers must not modify them (clone first). A Memo is not safe for
// concurrent use.
type Memo struct {
	// generation is the ir.Change.Generation of the IR last translated
	// (zero: none, or not numbered).
	generation uint64
	// tables: per route configuration name, its virtual hosts in order.
	tables   map[string][]*memoVhost
	clusters []*memoCluster // in IR order
	sorted   bool           // clusters are sorted by name
	// lastClusters are the messages of the IR clusters last translated.
	lastClusters []*clusterv3.Cluster
	websocket    string // the WebSocket clusters the virtual hosts were built with
	// routeDefaults: the Gateway's route defaults they were built with.
	routeDefaults routeDefaults
	// httpListeners: per HTTP listener name, the message last built and
	// what it was built from (listenerKey).
	httpListeners map[string]memoListener
	// httpsListeners: per HTTPS listener name, the message last built,
	// the key it was built with, and its filter chains by TLS server.
	httpsListeners map[string]memoHTTPS
	// secrets: the IR secrets last translated and their messages, in IR
	// order.
	secrets []memoSecret
	// rcs: per route table, the message last handed out.
	rcs map[string]*routev3.RouteConfiguration
	// newRefs: the virtual hosts of the last translation that now send to
	// a cluster their previous version did not (see Introducing).
	newRefs []vhostRefs
	// built: the places of the clusters whose messages the last list
	// built (see adopt); unadopted: entries of earlier lists may still
	// hold messages a check passed.
	built     []int
	unadopted bool
	// vbuilt: the virtual hosts built since the last adoption.
	vbuilt []*memoVhost
	// list: the route table list last handed out (memo_tables.go);
	// lastSecrets, the secret list.
	list        memoTables
	lastSecrets []*tlsv3.Secret
	// visited counts the route tables the last translation looked at,
	// rebuilt the virtual hosts it built.
	visited, rebuilt int
}

// vhostRefs names clusters of one virtual host of one route table.
type vhostRefs struct {
	table, vhost string
	clusters     []string
}

// routeDefaults are the Gateway's traffic settings that go into route
// actions.
type routeDefaults struct {
	idle          time.Duration
	webSocketsAll bool
}

// memoListener is an HTTP listener's message and the key it was built
// from: its name, port and route table, and the Gateway's traffic settings.
type memoListener struct {
	key string
	msg *listenerv3.Listener
}

// listenerKey says everything an HTTP listener's message is built from.
func listenerKey(l *ir.Listener, traffic *ir.Traffic) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%d|%s|%d|%t|", l.Name, l.Port, traffic.IdleTimeout.Duration, traffic.TrustedHops, traffic.ProxyProtocol)
	fmt.Fprintf(&b, "%t|", traffic.WebSocketsAll)
	if a := traffic.AccessLog; a != nil {
		fmt.Fprintf(&b, "%q|", a.Text)
		for _, k := range slices.Sorted(maps.Keys(a.JSON)) {
			fmt.Fprintf(&b, "%q=%q,", k, a.JSON[k])
		}
	}
	return b.String()
}

type memoVhost struct {
	name   string
	scheme string
	// ir is the IR virtual host vh was built from (never modified once
	// built): an IR without a change (a full one) hands out vh again for
	// a host equal to it.
	ir *ir.VirtualHost
	vh *routev3.VirtualHost
	// refs are the clusters the host's routes send to, and carried the
	// retained clusters it has never-matching routes for; both sorted.
	refs    []string
	carried []string
}

type memoCluster struct {
	// ir is the IR cluster translated (never modified once built, and
	// held by the IR anyway: not a copy of it), or one found equal to it
	// since.
	ir      *ir.Cluster
	cluster *clusterv3.Cluster
}

// Translate is Translate(gw), from memory where it can. retained are
// clusters that left gw and that the caller keeps published for a while
// (it adds the clusters themselves): a virtual host whose routes sent to
// one of them before gets a RetainedRoute for it, until it is no longer
// retained. Only those hosts change: a proxyless gRPC client builds
// balancers for the clusters of the one virtual host it matches, so no
// other host needs the reference.
func (m *Memo) Translate(gw *ir.Gateway, retained ...string) (*translate.Resources, error) {
	// Route actions depend on whether their clusters speak WebSocket: a
	// change there rebuilds every virtual host.
	var ws []byte
	for i := range gw.Clusters {
		if gw.Clusters[i].WebSocket {
			ws = append(ws, gw.Clusters[i].Name...)
			ws = append(ws, 0)
		}
	}
	// So do the Gateway's idle timeout and WebSocket default, which
	// every HTTP route action carries.
	tr := ir.TrafficOf(gw)
	routeDefaults := routeDefaults{idle: tr.IdleTimeout.Duration, webSocketsAll: tr.WebSocketsAll}
	if string(ws) != m.websocket || m.tables == nil || routeDefaults != m.routeDefaults {
		m.tables = map[string][]*memoVhost{}
		m.list = memoTables{}
		m.websocket = string(ws)
		m.routeDefaults = routeDefaults
	}
	kept := make(map[string]bool, len(retained))
	for _, c := range retained {
		kept[c] = true
	}
	m.newRefs, m.visited, m.rebuilt = nil, 0, 0
	t := memoRun{memo: m, sc: translate.NewScope(gw), retained: kept, next: map[string][]*memoVhost{}, nextListeners: map[string]memoListener{},
		nextHTTPS: map[string]memoHTTPS{}, nextRCs: map[string]*routev3.RouteConfiguration{}}
	t.change = m.changeOf(gw.Change)
	m.generation = 0 // until this translation succeeds
	res, err := t.translate(gw)
	if err != nil {
		return nil, err
	}
	m.tables = t.next
	m.httpListeners = t.nextListeners
	m.httpsListeners = t.nextHTTPS
	m.secrets = t.nextSecrets
	m.rcs = t.nextRCs
	if gw.Change != nil {
		m.generation = gw.Change.Generation
	}
	return res, nil
}

// irChange is what changed since the IR last translated: the virtual hosts
// and clusters named, or all of them.
type irChange struct {
	all      bool
	vhosts   []ir.VirtualHostRef
	clusters []string
}

// changeOf returns what c says changed relative to the IR last translated,
// or all when it cannot tell: no change, a change relative to another IR,
// or no IR translated before. The same IR again (its Generation) changes
// nothing.
func (m *Memo) changeOf(c *ir.Change) irChange {
	switch {
	case c == nil || c.Generation == 0 || m.generation == 0:
		return irChange{all: true}
	case c.Generation == m.generation:
		return irChange{}
	case c.Since == m.generation:
		return irChange{vhosts: c.VirtualHosts, clusters: c.Clusters}
	}
	return irChange{all: true}
}

// memoRun is one translation through a Memo.
type memoRun struct {
	memo *Memo
	sc   *translate.Scope
	// retained: the clusters that left the Gateway and stay published
	// for a while; a virtual host that sent to one keeps a route to it
	// that never matches (translate.RetainedRoute).
	retained map[string]bool
	// next is what the memo remembers of the route tables after this
	// translation, nextListeners of the HTTP listeners.
	next          map[string][]*memoVhost
	nextListeners map[string]memoListener
	nextHTTPS     map[string]memoHTTPS
	nextSecrets   []memoSecret
	nextRCs       map[string]*routev3.RouteConfiguration
	// clustersKept: the cluster list is the memo's, as
	// built and sorted before.
	clustersKept bool
	// change is what the IR says changed since the one last translated.
	change irChange
}

// changedIn returns the change's virtual hosts in the route table of
// listener and TLS server (sorted by name, a part of the change's own
// list), or all when the change names every virtual host.
func (t *memoRun) changedIn(listener, server string) (refs []ir.VirtualHostRef, all bool) {
	if t.change.all {
		return nil, true
	}
	vs := t.change.vhosts
	lo, _ := slices.BinarySearchFunc(vs, ir.VirtualHostRef{Listener: listener, Server: server}, ir.CompareVirtualHostRefs)
	hi := lo
	for hi < len(vs) && vs[hi].Listener == listener && vs[hi].Server == server {
		hi++
	}
	return vs[lo:hi], false
}

// clusterChanged: the IR's change names cluster name (or every one
// changed).
func (t *memoRun) clusterChanged(name string) bool {
	if t.change.all {
		return true
	}
	_, found := slices.BinarySearch(t.change.clusters, name)
	return found
}

// translate is translate.Translate, unit by unit, from memory where it can.
//
// An IR whose change names virtual hosts (and clusters) only builds the
// tables of those hosts again, in the route table list last handed out
// (translateChanged); any other walks every listener's tables.
func (t *memoRun) translate(gw *ir.Gateway) (*translate.Resources, error) {
	if todo, ok := t.tablesToBuild(gw); ok {
		return t.translateChanged(gw, todo)
	}
	r := &translate.Resources{}
	traffic := ir.TrafficOf(gw)
	var tables []tablePlace
	whole := true // every listener's tables are in the list
	for i := range gw.Listeners {
		l := &gw.Listeners[i]
		listener, err := t.listener(l, traffic)
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		if listener == nil {
			whole = whole && tableCount(l) == 0
			continue
		}
		r.Listeners = append(r.Listeners, listener)
		for j, rt := range translate.RouteTables(l) {
			rc, err := t.routeConfigurationMemo(l.Name, rt)
			if err != nil {
				return nil, fmt.Errorf("listener %s: %w", l.Name, err)
			}
			r.Routes = append(r.Routes, rc)
			tables = append(tables, tablePlace{listener: i, table: j, name: rt.Name})
		}
	}
	t.clustersMemo(gw, r)
	t.secretsMemo(gw, r)
	r.Sort(t.clustersKept)
	t.memo.list = memoTables{}
	if whole {
		t.rememberTables(gw, r, tables)
	}
	return r, nil
}

// listener is l's listener. An HTTP listener does not depend on its
// virtual hosts: an unchanged one is the very message built before, so
// that a route change costs no listener serialization. An HTTPS listener
// is built from its TLS servers' filter chains (httpsListener). The others
// (few) are built again.
func (t *memoRun) listener(l *ir.Listener, traffic *ir.Traffic) (*listenerv3.Listener, error) {
	if l.Protocol == ir.ProtocolHTTPS {
		return t.httpsListener(l, traffic), nil
	}
	if l.Protocol != ir.ProtocolHTTP {
		return t.sc.Listener(l)
	}
	key := listenerKey(l, traffic)
	if m, ok := t.memo.httpListeners[l.Name]; ok && m.key == key {
		t.nextListeners[l.Name] = m
		return m.msg, nil
	}
	lst, err := t.sc.Listener(l)
	if err != nil {
		return nil, err
	}
	t.nextListeners[l.Name] = memoListener{key: key, msg: lst}
	return lst, nil
}

// routeConfigurationMemo builds route table rt of listener, reusing the
// remembered message of every virtual host the IR's change does not name.
//
// The memory of the table is updated in place while the new IR keeps the
// old one's positions (an edit of a virtual host); only an added or removed
// host makes it a new list. (Each entry describes a real IR → message
// mapping, so a translation that fails half-way leaves valid memory.)
func (t *memoRun) routeConfigurationMemo(listener string, rt translate.RouteTable) (*routev3.RouteConfiguration, error) {
	name, vhosts := rt.Name, rt.VirtualHosts
	t.memo.visited++
	prev := t.memo.tables[name]
	// A table the IR's change names no virtual host of is the table last
	// handed out (ir.Change), unless a host of it carries a retained
	// cluster that is no longer retained. A shard with automatic HTTPS
	// has a table per name it serves: a route change walks none of the
	// others.
	if changed, all := t.changedIn(listener, rt.Server); !all && len(changed) == 0 {
		if rc, ok := t.memo.rcs[name]; ok && len(prev) == len(vhosts) && t.allStillRetained(prev) {
			t.next[name] = prev
			t.nextRCs[name] = rc
			return rc, nil
		}
	}
	rc, err := t.buildRouteConfiguration(listener, rt, prev)
	if err == nil {
		t.nextRCs[name] = rc
	}
	return rc, err
}

// allStillRetained: every host of the table carries only clusters still
// retained.
func (t *memoRun) allStillRetained(hosts []*memoVhost) bool {
	for _, e := range hosts {
		if !t.stillRetained(e.carried) {
			return false
		}
	}
	return true
}

// buildRouteConfiguration is routeConfigurationMemo's table built from
// the memory of its virtual hosts, prev.
func (t *memoRun) buildRouteConfiguration(listener string, rt translate.RouteTable, prev []*memoVhost) (*routev3.RouteConfiguration, error) {
	name, scheme, vhosts := rt.Name, rt.Scheme, rt.VirtualHosts
	var cur []*memoVhost
	// While inPlace, the new list so far is prev[:i], and j == i.
	inPlace := true
	leave := func(i int) {
		if inPlace {
			inPlace = false
			cur = append(make([]*memoVhost, 0, len(vhosts)), prev[:i]...)
		}
	}
	rc := translate.RouteConfigurationShell(name, len(vhosts))
	rc.VirtualHosts = rc.VirtualHosts[:len(vhosts)]
	// changed is the table's part of the IR's change; both it and vhosts
	// are sorted by name, so k walks it once alongside.
	changed, all := t.changedIn(listener, rt.Server)
	// kept: every host so far is the one of the previous table at its
	// place (and then the table's previous message can be handed out).
	last, kept := t.memo.rcs[name], len(vhosts) == len(prev)
	kept = kept && last != nil && len(last.VirtualHosts) == len(prev)
	k := 0
	j := 0
	for i, v := range vhosts {
		for k < len(changed) && changed[k].Name < v.Name {
			k++
		}
		named := all || (k < len(changed) && changed[k].Name == v.Name)
		if j < len(prev) && prev[j].name == v.Name && prev[j].scheme == scheme && t.stillRetained(prev[j].carried) &&
			(!named || t.change.all && sameVhostIR(prev[j].ir, v)) {
			if t.change.all {
				prev[j].ir = v // the same, in the IR now translated
			}
			rc.VirtualHosts[i] = prev[j].vh
			kept = kept && inPlace && last.VirtualHosts[i] == prev[j].vh
			if !inPlace {
				cur = append(cur, prev[j])
			}
			j++
			continue
		}
		kept = false
		// Both lists are sorted by name: skip what was removed.
		for j < len(prev) && prev[j].name < v.Name {
			leave(i)
			j++
		}
		var old *memoVhost
		if j < len(prev) && prev[j].name == v.Name {
			old = prev[j]
		}
		refs := clusterRefs(v)
		carried := t.carry(old, refs)
		vh, err := t.sc.VirtualHost(scheme, v, carried)
		if err != nil {
			if rt.Server != "" {
				return nil, fmt.Errorf("tls server %s: virtual host %s: %w", rt.Server, v.Name, err)
			}
			return nil, fmt.Errorf("virtual host %s: %w", v.Name, err)
		}
		rc.VirtualHosts[i] = vh
		if old != nil {
			if added := minus(refs, old.refs); len(added) > 0 {
				t.memo.newRefs = append(t.memo.newRefs, vhostRefs{table: name, vhost: v.Name, clusters: added})
			}
		}
		t.memo.rebuilt++
		e := &memoVhost{name: v.Name, scheme: scheme, ir: v, vh: vh, refs: refs, carried: carried}
		t.memo.noteVhost(e)
		if old != nil {
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
	if kept && inPlace {
		// Every host is the previous table's at its place: the table
		// is the message handed out before (checked already).
		return last, nil
	}
	return rc, nil
}

// sameVhostIR: the IR virtual host a (remembered) is equal to b, so the
// message built from a is b's too (within a translation whose WebSocket
// clusters and route defaults are those a was built with: otherwise the
// memo forgot every host).
func sameVhostIR(a, b *ir.VirtualHost) bool {
	return a != nil && reflect.DeepEqual(a, b)
}

// stillRetained: every cluster in carried is still retained.
func (t *memoRun) stillRetained(carried []string) bool {
	for _, c := range carried {
		if !t.retained[c] {
			return false
		}
	}
	return true
}

// carry returns the retained clusters a rebuilt virtual host keeps
// never-matching routes for: those its previous version sent to or
// carried, that are still retained and that its routes do not send to now.
func (t *memoRun) carry(old *memoVhost, refs []string) []string {
	if old == nil || len(t.retained) == 0 {
		return nil
	}
	var out []string
	for _, list := range [][]string{old.refs, old.carried} {
		for _, c := range list {
			if t.retained[c] && !slices.Contains(refs, c) && !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	slices.Sort(out)
	return out
}

// clusterRefs returns the clusters v's routes send to (backends and
// mirrors), sorted, without repeats.
func clusterRefs(v *ir.VirtualHost) []string {
	var out []string
	for i := range v.Routes {
		r := &v.Routes[i]
		for _, b := range r.Backends {
			out = append(out, b.Cluster)
		}
		for _, m := range r.Mirrors {
			out = append(out, m.Cluster)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// minus returns the members of the sorted list a that are not in the
// sorted list b.
func minus(a, b []string) []string {
	var out []string
	for _, c := range a {
		if _, found := slices.BinarySearch(b, c); !found {
			out = append(out, c)
		}
	}
	return out
}

// Introducing returns, per route table, the virtual hosts of the last
// translation that existed before it and now send to one of the clusters
// named in introduced, with those clusters. These are the only hosts whose
// proxyless gRPC clients need a cluster before the route that uses it.
func (m *Memo) Introducing(introduced []string) map[string]map[string][]string {
	var out map[string]map[string][]string
	for _, r := range m.newRefs {
		var cs []string
		for _, c := range r.clusters {
			if slices.Contains(introduced, c) {
				cs = append(cs, c)
			}
		}
		if len(cs) == 0 {
			continue
		}
		if out == nil {
			out = map[string]map[string][]string{}
		}
		if out[r.table] == nil {
			out[r.table] = map[string][]string{}
		}
		out[r.table][r.vhost] = cs
	}
	return out
}

// clustersMemo translates gw's clusters, reusing the remembered message of
// every cluster the IR's change does not name (and of a named one whose IR
// is the same). No cluster changed: the very same list as last time,
// which callers must not modify.
func (t *memoRun) clustersMemo(gw *ir.Gateway, r *translate.Resources) {
	m := t.memo
	if !t.change.all && len(t.change.clusters) == 0 && m.lastClusters != nil && len(gw.Clusters) == len(m.clusters) {
		r.Clusters = m.lastClusters
		t.clustersKept = true // sorted when they were built (by sort, if not before)
		return
	}
	prev := m.clusters
	m.newList()
	cur := make([]*memoCluster, 0, len(gw.Clusters))
	r.Clusters = make([]*clusterv3.Cluster, 0, len(gw.Clusters))
	// The list is sorted when the previous one was and every cluster not
	// taken from it (in its order) sits between its neighbours.
	sorted := m.sorted || len(prev) == 0
	j := 0
	for i, c := range gw.Clusters {
		// Both lists are sorted by name: skip what was removed.
		for j < len(prev) && prev[j].ir.Name < c.Name {
			j++
		}
		var e *memoCluster
		if j < len(prev) && prev[j].ir.Name == c.Name && !t.clusterChanged(c.Name) {
			e = prev[j]
			j++
		} else if j < len(prev) && prev[j].ir.Name == c.Name && sameCluster(prev[j].ir, c) {
			e = prev[j]
			e.ir = c // the same, in the IR now translated: the earlier one may go
			j++
		} else {
			e = &memoCluster{ir: c, cluster: translate.Cluster(c)}
			m.built = append(m.built, i)
			if i > 0 && gw.Clusters[i-1].Name >= c.Name || i+1 < len(gw.Clusters) && c.Name >= gw.Clusters[i+1].Name {
				sorted = false
			}
		}
		cur = append(cur, e)
		r.Clusters = append(r.Clusters, e.cluster)
	}
	m.clusters, m.sorted = cur, sorted
	t.clustersKept = sorted
	r.Clusters = slices.Clip(r.Clusters)
	m.lastClusters = r.Clusters
}

// adopt makes the memo hold, for each cluster of its last translation, the
// wire form c published for it (wire.go), instead of the message, once c
// passed that very list: the checked bytes, which c holds anyway, are then
// the only copy, and the message goes (c keeps what its checks read of a
// cluster). The next translation hands out the wire forms of unchanged
// clusters, which c recognises as the last check's.
//
// It does nothing for a list c's last passed check did not have (the
// caller added retained clusters, or the check failed), or when the memo's
// lists were not sorted by name. Call it after each check that passed; a
// memo that is never adopted works as before.
func (m *Memo) adopt(c *Checker) {
	m.list.checked = m.list.list != nil
	m.adoptVhosts(c)
	// An unsorted IR list had the translation sort the memo's lists in
	// place: their places no longer match m.clusters'.
	if !m.sorted || len(m.clusters) == 0 {
		return
	}
	// Only the places built since the last adoption hold messages, unless
	// an adoption was missed: then every place is looked at.
	places, all := m.built, m.unadopted
	ok := adopt(c, &m.lastClusters, &c.lastClusters, c.lastWireClusters, len(m.clusters), places, all, func(i int) **clusterv3.Cluster {
		return &m.clusters[i].cluster
	})
	if ok {
		m.built, m.unadopted = nil, false
		c.adopted()
	}
}

// noteVhost records a virtual host built, for the next adoption; past a
// bound (a memo nobody adopts for) it records no more, and the next
// adoption looks at every host.
func (m *Memo) noteVhost(e *memoVhost) {
	if len(m.vbuilt) < 1<<16 {
		m.vbuilt = append(m.vbuilt, e)
	}
}

// adoptVhosts replaces the virtual hosts the last check that passed
// serialized by their wire forms (Checker.wireVhosts), in the checker and
// here alike: a host the checker knows by its wire form must come back as
// that wire form, or it is serialized again. The hosts built since the
// last adoption are looked at, or every one when those do not account for
// every wire form.
func (m *Memo) adoptVhosts(c *Checker) {
	wire := c.wireVhosts()
	built := m.vbuilt
	m.vbuilt = nil
	if len(wire) == 0 {
		return
	}
	adopted := 0
	for _, e := range built {
		if w := wire[e.vh]; w != nil {
			e.vh = w
			adopted++
		}
	}
	if adopted == len(wire) {
		return
	}
	for _, hosts := range m.tables {
		for _, e := range hosts {
			if w := wire[e.vh]; w != nil {
				e.vh = w
			}
		}
	}
}

// newList notes that the memo is about to hand out new lists: what the
// last ones built and no check adopted is left behind.
func (m *Memo) newList() {
	if len(m.built) > 0 {
		m.unadopted = true
	}
	m.built = m.built[:0]
}

// adopt replaces, at the given places of the memo's list *mine (all n of
// them with all; the memo's entry at place i is held at at(i)), the
// message by its wire form from wire, when *checked (the list c last
// passed) is *mine; both lists then become wire. It reports whether *mine
// is wire.
func adopt[T interface {
	comparable
	proto.Message
}](c *Checker, mine, checked *[]T, wire []T, n int, places []int, all bool, at func(int) *T) bool {
	if wire == nil || len(*mine) != n || len(wire) != n || !SameList(*mine, *checked) {
		return false
	}
	if n == 0 || &(*mine)[0] == &wire[0] {
		*checked = wire
		return true // adopted already
	}
	if all {
		places = make([]int, n)
		for i := range places {
			places[i] = i
		}
	}
	for _, i := range places {
		p, w := at(i), wire[i]
		if *p == w {
			continue
		}
		// The message goes: nothing hands it out again, so the
		// checker's memory of it goes too.
		orig := *p
		*p = w
		if c.wire[orig] == proto.Message(w) {
			delete(c.wire, orig)
			delete(c.known, orig)
		}
	}
	*mine, *checked = wire, wire
	return true
}

// sameCluster: the same Cluster message (which does not carry the
// endpoints: xds/endpoints serves those).
func sameCluster(a, b *ir.Cluster) bool {
	return a.Name == b.Name && a.Protocol == b.Protocol && a.WebSocket == b.WebSocket && ir.SameUpstreamTLS(a.TLS, b.TLS)
}
