/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/ir"
)

// gwState is what assembling a Gateway leaves behind, which a Translator
// keeps so that the next translation can reuse it whole (nothing the
// Gateway depends on changed) or patch it (only some of its HTTPRoutes
// changed).
type gwState struct {
	gw                      *gatewayv1.Gateway
	listeners               []*listenerState
	acceptReason, acceptMsg string
	pending                 map[RouteKey][]*pendingParent
	crs                     map[RouteKey]*compiledRoute // every route naming the Gateway
	result                  *GatewayResult
	build                   *irBuild // nil when the Gateway is not accepted
	// clusters counts, per cluster, the backends of emitted routes that
	// use it, which is all a cluster's IR depends on besides its Service;
	// bySvc names the clusters of each Service (for policy statuses).
	clusters map[string]*clusterUse
	bySvc    map[types.NamespacedName]refs[string]
	// patchable: only HTTPRoutes are attached (no HTTPRoute/GRPCRoute
	// hostname conflicts to settle across routes).
	patchable bool
	// book accounts each tenant's routes against the shard's limits (nil:
	// none apply); limitFlips are the routes the last patch attached again
	// because a change of another route of their tenant changed their
	// admission (their status changed too).
	book       *tenantBook
	limitFlips []RouteKey
}

// state indexes an assembly for patching.
func (a *assembly) state() *gwState {
	b := a.build
	st := &gwState{
		gw: a.gw, listeners: a.listeners, acceptReason: a.acceptReason, acceptMsg: a.acceptMsg,
		pending: map[RouteKey][]*pendingParent{}, crs: map[RouteKey]*compiledRoute{},
		result: a.res, build: b, clusters: map[string]*clusterUse{}, bySvc: map[types.NamespacedName]refs[string]{},
		patchable: a.patchable, book: a.book,
	}
	for _, p := range a.pending {
		st.pending[p.cr.key] = append(st.pending[p.cr.key], p)
		st.crs[p.cr.key] = p.cr
	}
	if b != nil {
		for k := range b.emitted {
			if cr := st.crs[k]; cr != nil {
				st.addClusterRefs(cr)
			}
		}
	}
	return st
}

// clustersOf lists the Gateway's clusters of the given Services.
func (st *gwState) clustersOf(svcs set[types.NamespacedName]) []string {
	var out []string
	for svc := range svcs {
		for c := range st.bySvc[svc].all() {
			out = append(out, c)
		}
	}
	return out
}

// clusterUse is how the emitted routes of a Gateway use one cluster: a
// cluster speaks the most capable protocol any of them asks for, and
// WebSocket if any asks for it (see Index.addCluster).
type clusterUse struct {
	n     int
	ranks [3]int // by protoRank
	ws    int
	b     backend // one of them, for the Service port
}

func (st *gwState) addClusterRefs(cr *compiledRoute) {
	for _, b := range cr.backends {
		u := st.clusters[b.cluster]
		if u == nil {
			u = &clusterUse{}
			st.clusters[b.cluster] = u
			addTo(st.bySvc, nn(b.svc.Namespace, b.svc.Name), b.cluster)
		}
		u.n++
		u.ranks[protoRank(b.proto)]++
		if b.ws {
			u.ws++
		}
		u.b = b
	}
}

func (st *gwState) removeClusterRefs(cr *compiledRoute) {
	for _, b := range cr.backends {
		u := st.clusters[b.cluster]
		if u == nil {
			continue
		}
		u.n--
		u.ranks[protoRank(b.proto)]--
		if b.ws {
			u.ws--
		}
		if u.n <= 0 {
			delete(st.clusters, b.cluster)
			removeFrom(st.bySvc, nn(u.b.svc.Namespace, u.b.svc.Name), b.cluster)
		}
	}
}

// cluster is the IR of a cluster in use.
func (idx *Index) clusterOf(gw *gatewayv1.Gateway, name string, u *clusterUse) *ir.Cluster {
	c := &ir.Cluster{Name: name, Protocol: ir.ClusterTCP, WebSocket: u.ws > 0, Service: u.b.servicePort()}
	idx.applyBackendTLS(gw, c, u.b)
	switch {
	case u.ranks[2] > 0:
		c.Protocol = ir.ClusterH2C
	case u.ranks[1] > 0:
		c.Protocol = ir.ClusterHTTP1
	}
	return c
}

// specificHosts: every hostname is a plain name (no wildcard, not "any").
func specificHosts(cr *compiledRoute) bool {
	if cr == nil {
		return true
	}
	if len(cr.hostnames) == 0 {
		return false
	}
	for _, h := range cr.hostnames {
		if h == "" || strings.HasPrefix(h, "*") {
			return false
		}
	}
	return true
}

// patchGateway applies the changes of the HTTPRoutes in changed to gw's
// last assembly st; newCRs holds the compilations of those that (still)
// name gw. It refuses (false, having changed nothing) what it cannot patch
// exactly: other route kinds, or routes whose hostnames include wildcards
// or none (their virtual hosts merge into others).
//
// rebuild names clusters whose Service (its ports, its backend TLS)
// changed; they are built again too.
func patchGateway(idx *Index, st *gwState, gw *gatewayv1.Gateway, changed []RouteKey, newCRs map[RouteKey]*compiledRoute, rebuild []string) (*GatewayResult, bool) {
	if !st.patchable {
		return nil, false
	}
	// A change of a route can change the admission of other routes of its
	// tenant (tenant limits): those are attached again as if changed.
	flips, commitBook := st.book.patch(idx, nn(gw.Namespace, gw.Name), changed, newCRs)
	if len(flips) > 0 {
		was := changed
		changed = slices.Clip(changed)
		newCRs = maps.Clone(newCRs)
		for _, k := range flips {
			if slices.Contains(was, k) {
				continue // changed itself: attached again already
			}
			cr := st.crs[k]
			if cr == nil {
				return nil, false
			}
			changed = append(changed, k)
			newCRs[k] = cr
		}
	}
	for _, k := range changed {
		if k.Kind != kindHTTPRoute || !specificHosts(st.crs[k]) {
			return nil, false
		}
	}
	for _, cr := range newCRs {
		if !specificHosts(cr) {
			return nil, false
		}
	}
	// Automatic HTTPS: a change that adds or removes a per-name HTTPS
	// listener (the route holds, or no longer holds, a name with a
	// certificate) changes the Gateway's listeners: assembled in full.
	for _, k := range changed {
		if !slices.Equal(autoTLSHostsIn(st.listeners, st.crs[k]), idx.autoTLSHostsOf(gw, newCRs[k])) {
			return nil, false
		}
	}

	// From here on the state changes.
	commitBook()
	st.limitFlips = flips
	// The previous result is the Translator's alone (it hands out only
	// Outputs), so it is updated in place.
	res := &GatewayResult{Routes: st.result.Routes}
	affected := map[*vhostGroup]map[string]bool{}
	clusters := map[string]bool{}
	for _, name := range rebuild {
		clusters[name] = true
	}
	mark := func(g *vhostGroup, hosts []string) {
		m := affected[g]
		if m == nil {
			m = map[string]bool{}
			affected[g] = m
		}
		for _, h := range hosts {
			m[h] = true
		}
	}
	for _, k := range changed {
		if old := st.crs[k]; old != nil {
			// The route is attached only to listeners its parent entries
			// matched, and has entries only in their groups (a shard with
			// automatic HTTPS has a listener and a group per name).
			was := attachedTo(st.pending[k])
			for _, l := range was {
				delete(l.attached, k)
			}
			if st.build != nil {
				for _, g := range st.build.groupsFor(was) {
					hosts := g.byRoute[k]
					mark(g, hosts)
					for _, h := range hosts {
						g.removeEntries(h, k)
					}
					delete(g.byRoute, k)
				}
				if st.build.emitted[k] {
					st.removeClusterRefs(old)
					for _, b := range old.backends {
						clusters[b.cluster] = true
					}
				}
				delete(st.build.emitted, k)
			}
			delete(st.crs, k)
			delete(st.pending, k)
			delete(res.Routes, k)
		}
	}
	var pending []*pendingParent
	for _, k := range sortedKeys(newCRs) {
		cr := newCRs[k]
		p := idx.attach(gw, st.listeners, nil, cr, nil, st.book.refusedOf(k)) // a Gateway with ListenerSets is not patchable
		st.pending[k] = p
		st.crs[k] = cr
		pending = append(pending, p...)
	}
	idx.finishParents(pending, res)

	if st.build != nil {
		for _, k := range sortedKeys(newCRs) {
			cr := newCRs[k]
			emitted := false
			for _, g := range st.build.groupsFor(attachedTo(st.pending[k])) {
				for _, l := range g.from {
					if a := l.attached[k]; a != nil && g.addRoute(l, k, a) {
						emitted = true
					}
				}
				mark(g, g.byRoute[k])
			}
			if emitted {
				st.build.emitted[k] = true
				st.addClusterRefs(cr)
				for _, b := range cr.backends {
					clusters[b.cluster] = true
				}
			}
		}
	}

	status, gwAccepted := idx.gatewayStatus(gw, st.listeners, st.acceptReason, st.acceptMsg)
	setAttachedListenerSets(gw, &status, 0) // patched Gateways have no ListenerSets
	res.Status = status
	if gwAccepted && st.build != nil {
		res.IR = idx.patchIR(st, affected, clusters)
		st.build.ir = res.IR
	}
	st.result = res
	return res, true
}

// attachedTo lists the listeners the parent entries ps attached to, each
// once.
func attachedTo(ps []*pendingParent) []*listenerState {
	var out []*listenerState
	for _, p := range ps {
		for _, l := range p.listeners {
			if !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
	}
	return out
}

// groupsFor lists the virtual host groups built from the listeners ls,
// each once, in build order.
func (b *irBuild) groupsFor(ls []*listenerState) []*vhostGroup {
	var out []*vhostGroup
	for _, l := range ls {
		for _, g := range b.groupsOf[l] {
			if !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	slices.SortFunc(out, func(a, b *vhostGroup) int {
		if a.listener != b.listener {
			return a.listener - b.listener
		}
		return a.server - b.server
	})
	return out
}

// removeEntries drops route k's entries under host h.
func (g *vhostGroup) removeEntries(h string, k RouteKey) {
	es := g.entries[h]
	kept := es[:0:0]
	for _, e := range es {
		if e.kind != k.Kind || e.ns != k.NN.Namespace || e.name != k.NN.Name {
			kept = append(kept, e)
		}
	}
	switch {
	case len(kept) > 0:
		g.entries[h] = kept
	case g.listenerHn[h]:
		g.entries[h] = nil
	default:
		delete(g.entries, h)
	}
}

// patchIR rebuilds the IR from the previous one: the affected virtual hosts
// and clusters are rebuilt, everything else is shared. Its Change names
// them, relative to the previous IR: the one thing that tells a consumer
// what changed.
func (idx *Index) patchIR(st *gwState, affected map[*vhostGroup]map[string]bool, clusters map[string]bool) *ir.Gateway {
	prev := st.build.ir
	change := &ir.Change{Generation: nextGeneration()}
	if prev.Change != nil {
		change.Since = prev.Change.Generation
	}
	out := &ir.Gateway{Namespace: prev.Namespace, Name: prev.Name, Secrets: prev.Secrets, Traffic: prev.Traffic, Change: change}
	// IR is never modified once built: the listener list (and a
	// listener's TLS servers) are copied before the first edit.
	out.Listeners = prev.Listeners
	listenersCopied := false
	serversCopied := map[int]bool{}
	for _, g := range st.build.groups {
		hosts := affected[g]
		if len(hosts) == 0 {
			continue
		}
		if !listenersCopied {
			out.Listeners, listenersCopied = slices.Clone(prev.Listeners), true
		}
		il := &out.Listeners[g.listener]
		server := ""
		if g.server >= 0 {
			server = il.TLSServers[g.server].Name
		}
		next := slices.Clone(g.hosts)
		for _, h := range sortedHosts(hosts) {
			d := domain(h)
			change.VirtualHosts = append(change.VirtualHosts, ir.VirtualHostRef{Listener: il.Name, Server: server, Name: d})
			i, found := sort.Find(len(next), func(i int) int { return strings.Compare(d, next[i].Name) })
			_, exists := g.entries[h]
			switch {
			case exists && found:
				next[i] = g.assemble(h)
			case exists:
				next = slices.Insert(next, i, g.assemble(h))
			case found:
				next = slices.Delete(next, i, i+1)
			}
		}
		g.hosts = next
		if g.server < 0 {
			il.VirtualHosts = next
			continue
		}
		if !serversCopied[g.listener] {
			il.TLSServers, serversCopied[g.listener] = slices.Clone(il.TLSServers), true
		}
		il.TLSServers[g.server].VirtualHosts = next
	}
	slices.SortFunc(change.VirtualHosts, ir.CompareVirtualHostRefs)
	change.VirtualHosts = slices.CompactFunc(change.VirtualHosts, func(a, b ir.VirtualHostRef) bool { return a == b })

	out.Clusters = prev.Clusters
	if len(clusters) > 0 {
		next := prev.Clusters
		cloned := false
		clone := func() {
			if !cloned {
				next, cloned = slices.Clone(next), true
			}
		}
		for _, name := range sortedHosts(clusters) {
			i, found := sort.Find(len(next), func(i int) int { return strings.Compare(name, next[i].Name) })
			u := st.clusters[name]
			if u == nil {
				if found {
					clone()
					next = slices.Delete(next, i, i+1)
					change.Clusters = append(change.Clusters, name)
				}
				continue
			}
			c := idx.clusterOf(st.gw, name, u)
			switch {
			case found && sameCluster(next[i], c):
				// A route changed but not the cluster: the previous
				// table stays, uncopied.
			case found:
				clone()
				next[i] = c
				change.Clusters = append(change.Clusters, name)
			default:
				clone()
				next = slices.Insert(next, i, c)
				change.Clusters = append(change.Clusters, name)
			}
		}
		if len(next) == 0 {
			next = nil // as a full translation leaves it
		}
		out.Clusters = next
	}
	return out
}

// generations numbers the IRs handed over (ir.Change.Generation), unique
// in the process, whichever Translator made them.
var generations atomic.Uint64

// nextGeneration is the number of a new IR.
func nextGeneration() uint64 { return generations.Add(1) }

func sameCluster(a, b *ir.Cluster) bool {
	return a.Name == b.Name && a.Protocol == b.Protocol && a.WebSocket == b.WebSocket && a.Service == b.Service &&
		ir.SameUpstreamTLS(a.TLS, b.TLS)
}

func sortedKeys[V any](m map[RouteKey]V) []RouteKey {
	keys := make([]RouteKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return routeKeyLess(keys[i], keys[j]) })
	return keys
}

func sortedHosts(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for h := range m {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}
