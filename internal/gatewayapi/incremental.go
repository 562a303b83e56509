/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"maps"
	"reflect"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/ir"
)

// Translator translates snapshot after snapshot and reuses the work of the
// previous translation for the objects that did not change. Its output is
// always exactly Translate's (a property test checks it after random
// edits); only the cost differs.
//
// It relies on what an informer cache guarantees: a stored object is never
// modified, an update stores a new object. So an object's address names its
// content, and the memo holds on to the objects it is keyed by, so an
// address cannot be reused while it is remembered.
//
// What it remembers:
//   - each route's compilation, keyed by the route object, for as long as
//     no Service or ReferenceGrant (all that compiling reads besides the
//     route) changes in a way the translator can see;
//   - each route's status entries per parentRef, on its compilation, and
//     its merged status.parents, so an unchanged route yields the very same
//     slice (the status writer skips those without comparing);
//   - each cluster's endpoints, keyed by the EndpointSlice objects.
//
// Translations with the same inputs besides the routes (the context) reuse
// each Gateway's last translation, or patch it when only HTTPRoutes with
// plain hostnames changed (patch.go); any other change translates the
// Gateways in full, still reusing the compilations above.
//
// Outputs share unchanged maps and slices with earlier outputs: they must be
// treated as read-only, which makes them safe to keep. Like an informer
// cache, the input must hold one object per kind and name.
//
// A Translator is safe for concurrent use; translations run one at a time.
type Translator struct {
	mu        sync.Mutex
	compiled  map[any]*compiledRoute
	seen      map[any]bool
	statuses  map[RouteKey]memoStatus
	endpoints map[string]memoEndpoints

	// Gateway states (patch.go), valid while the context (every input
	// but the routes) is the same.
	gateways      map[types.NamespacedName]*gwState
	ctx           map[ctxKey]*ctxRec
	runtime       map[types.NamespacedName]GatewayRuntime
	shardRefusals map[types.NamespacedName]string
	ownership     *Ownership
	sameContext   bool
	// endpointsChanged: the Services whose EndpointSlices changed since the
	// last translation (with the same context otherwise).
	endpointsChanged map[types.NamespacedName]bool
	last             *Output
	lastIdx          *Index
	routes           map[RouteKey]*routeRec
	epoch            uint64
	changedByGW      map[types.NamespacedName][]RouteKey

	// Stats counts how Gateways were translated, for tests and metrics.
	Stats TranslatorStats
}

// TranslatorStats counts Gateway translations by how they were done.
type TranslatorStats struct {
	Full, Patched, Reused int
}

type memoStatus struct {
	entries []ParentEntry
	status  []gatewayv1.RouteParentStatus
}

type memoEndpoints struct {
	slices []*discoveryv1.EndpointSlice
	port   string
	eps    []ir.Endpoint
}

// NewTranslator returns a Translator with nothing remembered.
func NewTranslator() *Translator {
	return &Translator{
		compiled:  map[any]*compiledRoute{},
		seen:      map[any]bool{},
		statuses:  map[RouteKey]memoStatus{},
		endpoints: map[string]memoEndpoints{},
		gateways:  map[types.NamespacedName]*gwState{},
		routes:    map[RouteKey]*routeRec{},
		ctx:       map[ctxKey]*ctxRec{},
	}
}

// Translate is Translate(in), reusing what it can.
func (t *Translator) Translate(in *Input) *Output {
	t.mu.Lock()
	defer t.mu.Unlock()
	if in == nil {
		return Translate(nil)
	}
	prevRoutes, unique := t.diffRoutes(in) // advances the epoch
	diff := t.diffContext(in)
	endpoints := diff.endpoints
	same := t.last != nil && unique && !diff.changed && reflect.DeepEqual(in.Runtime, t.runtime) &&
		reflect.DeepEqual(in.ShardRefusals, t.shardRefusals) &&
		(in.Ownership == t.ownership || reflect.DeepEqual(in.Ownership, t.ownership))
	t.sameContext = same
	t.endpointsChanged = endpoints
	if !same {
		if diff.compileInputs {
			clear(t.compiled)
		}
		clear(t.gateways)
		clear(t.seen)
		t.runtime = in.Runtime
		t.shardRefusals = in.ShardRefusals
		t.ownership = in.Ownership
		idx := NewIndex(in)
		idx.memo = t
		out := translateIndex(idx)
		t.last, t.lastIdx = out, idx
		// Forget what the snapshot no longer has.
		for k := range t.compiled {
			if !t.seen[k] {
				delete(t.compiled, k)
			}
		}
		for k := range t.statuses {
			if _, ok := out.routeStatus(k); !ok {
				delete(t.statuses, k)
			}
		}
		for name := range t.endpoints {
			if _, used := idx.endpoints[name]; !used {
				delete(t.endpoints, name)
			}
		}
		return out
	}

	// Only routes changed: the previous index serves for everything else,
	// and only the changed routes' status is merged again.
	idx := &Index{}
	*idx = *t.lastIdx
	idx.in, idx.routesIndexed = in, false
	idx.httpByGW, idx.grpcByGW, idx.tlsByGW = nil, nil, nil
	idx.endpoints = map[string][]ir.Endpoint{}
	if len(endpoints) > 0 {
		idx.slices = indexSlices(in.EndpointSlices)
	}
	idx.memo = t
	prev := t.last
	out := &Output{
		GatewayClasses:  prev.GatewayClasses,
		GatewayStatus:   maps.Clone(prev.GatewayStatus),
		HTTPRouteStatus: prev.HTTPRouteStatus,
		GRPCRouteStatus: prev.GRPCRouteStatus,
		TLSRouteStatus:  prev.TLSRouteStatus,
	}
	results := make(map[types.NamespacedName]*GatewayResult, len(idx.gateways))
	changed := map[RouteKey][]types.NamespacedName{}
	for _, gw := range idx.gateways {
		key := nn(gw.Namespace, gw.Name)
		full := t.Stats.Full
		res := idx.translateGateway(gw)
		if res != nil && t.Stats.Full != full {
			// Translated in full: a route's status can change with
			// another's (HTTPRoute/GRPCRoute hostname conflicts), so
			// every route of the Gateway is merged again.
			for k := range res.Routes {
				changed[k] = nil
			}
		}
		if res == nil {
			continue
		}
		results[key] = res
		out.GatewayStatus[key] = res.Status
		if res.IR != nil {
			out.Gateways = append(out.Gateways, res.IR)
		}
	}
	for g, keys := range t.changedByGW {
		for _, k := range keys {
			changed[k] = append(changed[k], g)
		}
	}
	cloned := map[string]bool{}
	statusMap := func(kind string) map[types.NamespacedName][]gatewayv1.RouteParentStatus {
		var m *map[types.NamespacedName][]gatewayv1.RouteParentStatus
		switch kind {
		case kindHTTPRoute:
			m = &out.HTTPRouteStatus
		case kindGRPCRoute:
			m = &out.GRPCRouteStatus
		default:
			m = &out.TLSRouteStatus
		}
		if !cloned[kind] {
			*m = maps.Clone(*m)
			cloned[kind] = true
		}
		return *m
	}
	for k := range changed {
		var entries []ParentEntry
		var gws []types.NamespacedName
		if rec := t.routes[k]; rec != nil {
			gws = rec.parents
		}
		for _, g := range gws {
			if res := results[g]; res != nil {
				entries = append(entries, res.Routes[k]...)
			}
		}
		m := statusMap(k.Kind)
		if len(entries) == 0 {
			delete(m, k.NN)
			delete(t.statuses, k)
			continue
		}
		m[k.NN] = idx.mergeParents(k, entries)
	}
	// Compilations of replaced and removed routes are not needed again.
	for _, old := range prevRoutes {
		delete(t.compiled, old)
	}
	t.last, t.lastIdx = out, idx
	return out
}

// diffRoutes records the routes of in and, per Gateway, the routes that
// changed since the last translation (added, replaced or removed, naming the
// Gateway before or after). It returns the previous objects of the changed
// routes, and reports false when routes have duplicate names (the full
// translation settles those). It updates the records in place: a route that
// did not change costs one map lookup.
func (t *Translator) diffRoutes(in *Input) (prev map[RouteKey]any, unique bool) {
	t.epoch++
	unique = true
	prev = map[RouteKey]any{}
	changed := map[types.NamespacedName][]RouteKey{}
	note := func(k RouteKey, gws []types.NamespacedName) {
		for _, g := range gws {
			if n := len(changed[g]); n == 0 || changed[g][n-1] != k {
				changed[g] = append(changed[g], k)
			}
		}
	}
	live := 0
	add := func(kind, ns, name string, obj any, refs []gatewayv1.ParentReference) {
		k := RouteKey{Kind: kind, NN: nn(ns, name)}
		live++
		rec := t.routes[k]
		switch {
		case rec == nil:
			rec = &routeRec{obj: obj, parents: parentGateways(ns, refs)}
			t.routes[k] = rec
			note(k, rec.parents)
		case rec.epoch == t.epoch:
			unique = false
			live--
		case rec.obj != obj:
			prev[k] = rec.obj
			note(k, rec.parents)
			rec.obj, rec.parents = obj, parentGateways(ns, refs)
			note(k, rec.parents)
		}
		rec.epoch = t.epoch
	}
	for _, r := range in.HTTPRoutes {
		if r != nil {
			add(kindHTTPRoute, r.Namespace, r.Name, r, r.Spec.ParentRefs)
		}
	}
	for _, r := range in.GRPCRoutes {
		if r != nil {
			add(kindGRPCRoute, r.Namespace, r.Name, r, r.Spec.ParentRefs)
		}
	}
	for _, r := range in.TLSRoutes {
		if r != nil {
			add(kindTLSRoute, r.Namespace, r.Name, r, r.Spec.ParentRefs)
		}
	}
	if live < len(t.routes) { // some are gone
		for k, rec := range t.routes {
			if rec.epoch != t.epoch {
				prev[k] = rec.obj
				note(k, rec.parents)
				delete(t.routes, k)
			}
		}
	}
	t.changedByGW = changed
	return prev, unique
}

// ctxKey names a context object (any input but a route).
type ctxKey struct {
	kind     byte
	ns, name string
}

type ctxRec struct {
	obj   client.Object
	epoch uint64
}

// diffContext records the context objects of in and reports whether any
// changed in a way the translation can see (Relevant) since the last
// translation, or was added or removed. An object replaced by an update
// that changed nothing the translator reads (a status write, a label) is
// not a change: the last translation still holds.
//
// EndpointSlices are reported apart, as the Services whose endpoints
// changed: they change the endpoints of clusters, nothing else.
func (t *Translator) diffContext(in *Input) contextDiff {
	d := contextDiff{endpoints: map[types.NamespacedName]bool{}}
	// note records a changed object (its old or new version).
	note := func(o client.Object) {
		switch o := o.(type) {
		case *discoveryv1.EndpointSlice:
			d.endpoints[sliceService(o)] = true
		case *corev1.Service, *gatewayv1beta1.ReferenceGrant:
			d.changed, d.compileInputs = true, true
		default:
			d.changed = true
		}
	}
	live := 0
	see := func(kind byte, o client.Object) {
		k := ctxKey{kind: kind, ns: o.GetNamespace(), name: o.GetName()}
		live++
		rec := t.ctx[k]
		switch {
		case rec == nil:
			t.ctx[k] = &ctxRec{obj: o, epoch: t.epoch}
			note(o)
			return
		case rec.epoch == t.epoch: // a duplicate name: translate in full
			d.changed, d.compileInputs = true, true
			live--
		case rec.obj != o:
			if Relevant(rec.obj, o) {
				note(rec.obj)
				note(o)
			}
			rec.obj = o
		}
		rec.epoch = t.epoch
	}
	for _, o := range in.GatewayClasses {
		if o != nil {
			see('C', o)
		}
	}
	for _, o := range in.Gateways {
		if o != nil {
			see('G', o)
		}
	}
	for _, o := range in.ReferenceGrants {
		if o != nil {
			see('R', o)
		}
	}
	for _, o := range in.Services {
		if o != nil {
			see('S', o)
		}
	}
	for _, o := range in.EndpointSlices {
		if o != nil {
			see('E', o)
		}
	}
	for _, o := range in.Secrets {
		if o != nil {
			see('X', o)
		}
	}
	for _, o := range in.Namespaces {
		if o != nil {
			see('N', o)
		}
	}
	for _, o := range in.GatewayParameters {
		if o != nil {
			see('P', o)
		}
	}
	if live < len(t.ctx) {
		for k, rec := range t.ctx {
			if rec.epoch != t.epoch {
				delete(t.ctx, k)
				note(rec.obj)
			}
		}
	}
	return d
}

// contextDiff is what changed in the context since the last translation.
type contextDiff struct {
	changed bool // anything but EndpointSlices
	// compileInputs: Services or ReferenceGrants, which compiling a route
	// reads.
	compileInputs bool
	// endpoints: the Services whose EndpointSlices changed.
	endpoints map[types.NamespacedName]bool
}

// Relevant reports whether replacing oldObj by newObj (two versions of one
// object) can change a translation. The translator reads the spec of the
// Gateway API kinds and of GatewayParameters (a change bumps
// metadata.generation), Service ports, Secret types and data, Namespace
// labels and all of an EndpointSlice; never status.
func Relevant(oldObj, newObj client.Object) bool {
	if oldObj == nil || newObj == nil {
		return true
	}
	if oldObj.GetUID() != newObj.GetUID() {
		return true // deleted and created again
	}
	switch n := newObj.(type) {
	case *gatewayv1.GatewayClass, *gatewayv1.Gateway, *gatewayv1.HTTPRoute, *gatewayv1.GRPCRoute,
		*gatewayv1.TLSRoute, *gatewayv1beta1.ReferenceGrant, *shardgatev1alpha1.GatewayParameters:
		return oldObj.GetGeneration() != newObj.GetGeneration() || newObj.GetGeneration() == 0
	case *corev1.Service:
		o, ok := oldObj.(*corev1.Service)
		return !ok || !equality.Semantic.DeepEqual(o.Spec.Ports, n.Spec.Ports)
	case *corev1.Secret:
		o, ok := oldObj.(*corev1.Secret)
		return !ok || o.Type != n.Type || !equality.Semantic.DeepEqual(o.Data, n.Data)
	case *shardgatev1alpha1.LeaseHost:
		// What the ownership facts read: spec, labels (the lease owner),
		// deletion and the names its status says it holds (the engine's
		// hints); not conditions or per-shard status.
		o, ok := oldObj.(*shardgatev1alpha1.LeaseHost)
		return !ok || o.Generation != n.Generation || !maps.Equal(o.Labels, n.Labels) ||
			(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
			!slices.Equal(o.Status.ReservedHosts, n.Status.ReservedHosts)
	case *corev1.Namespace:
		// Labels select routes; labels and annotations mark owners
		// (shards and ownership facts).
		return !maps.Equal(oldObj.GetLabels(), newObj.GetLabels()) || !maps.Equal(oldObj.GetAnnotations(), newObj.GetAnnotations())
	}
	return oldObj.GetResourceVersion() != newObj.GetResourceVersion() || oldObj.GetResourceVersion() == ""
}

// compiled returns route r's compilation, compiling it on a miss.
func (idx *Index) compiled(r any, compile func() *compiledRoute) *compiledRoute {
	t := idx.memo
	if t == nil {
		return compile()
	}
	t.seen[r] = true
	if cr, ok := t.compiled[r]; ok {
		return cr
	}
	cr := compile()
	t.compiled[r] = cr
	return cr
}

func (idx *Index) compiledHTTPRoute(r *gatewayv1.HTTPRoute) *compiledRoute {
	return idx.compiled(r, func() *compiledRoute { return idx.compileHTTPRoute(r) })
}

func (idx *Index) compiledGRPCRoute(r *gatewayv1.GRPCRoute) *compiledRoute {
	return idx.compiled(r, func() *compiledRoute { return idx.compileGRPCRoute(r) })
}

func (idx *Index) compiledTLSRoute(r *gatewayv1.TLSRoute) *compiledRoute {
	return idx.compiled(r, func() *compiledRoute { return idx.compileTLSRoute(r) })
}

type memoParentStatus struct {
	key    statusKey
	status gatewayv1.RouteParentStatus
}

// statusKey is what one parentRef's status entry depends on besides the
// compiled route.
type statusKey struct {
	refIndex    int
	reason, msg string
}

// parentStatusFor is parentStatus, remembered on the compiled route.
func (idx *Index) parentStatusFor(p *pendingParent) gatewayv1.RouteParentStatus {
	k := statusKey{refIndex: p.refIndex, reason: p.reason, msg: p.msg}
	for _, m := range p.cr.statuses {
		if m.key == k {
			return m.status
		}
	}
	st := parentStatus(idx.controllerName, p.ref, p.cr, p.reason, p.msg)
	if idx.memo != nil {
		// Most routes have one parentRef; a few keep a few entries. A
		// route whose entries keep changing (a Gateway's listeners come
		// and go) starts over rather than grow.
		if len(p.cr.statuses) >= 8 {
			p.cr.statuses = nil
		}
		p.cr.statuses = append(p.cr.statuses, memoParentStatus{key: k, status: st})
	}
	return st
}

// mergeParents is MergeParents, returning the previous slice when a route's
// entries are the same as last time.
func (idx *Index) mergeParents(k RouteKey, entries []ParentEntry) []gatewayv1.RouteParentStatus {
	t := idx.memo
	if t == nil {
		return MergeParents(entries)
	}
	if m, ok := t.statuses[k]; ok && sameEntries(m.entries, entries) {
		return m.status
	}
	st := MergeParents(slices.Clone(entries))
	t.statuses[k] = memoStatus{entries: entries, status: st}
	return st
}

func sameEntries(a, b []ParentEntry) bool {
	if len(a) != len(b) {
		return false
	}
	// Entries come in Gateway order, then parentRef order; compare as
	// sets keyed by the parentRef index, which is unique per route.
	for _, x := range a {
		found := false
		for _, y := range b {
			if x.RefIndex == y.RefIndex && x.cr == y.cr && x.sk == y.sk && x.cr != nil {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// endpointsMemo returns the remembered endpoints of cluster when its
// EndpointSlices and port are the ones they were computed from.
func (idx *Index) endpointsMemo(cluster, port string, sl []*discoveryv1.EndpointSlice) ([]ir.Endpoint, bool) {
	if idx.memo == nil {
		return nil, false
	}
	m, ok := idx.memo.endpoints[cluster]
	if !ok || m.port != port || !slices.Equal(m.slices, sl) {
		return nil, false
	}
	return m.eps, true
}

func (idx *Index) rememberEndpoints(cluster, port string, sl []*discoveryv1.EndpointSlice, eps []ir.Endpoint) {
	if idx.memo != nil {
		idx.memo.endpoints[cluster] = memoEndpoints{slices: sl, port: port, eps: eps}
	}
}

func (o *Output) routeStatus(k RouteKey) ([]gatewayv1.RouteParentStatus, bool) {
	switch k.Kind {
	case kindHTTPRoute:
		st, ok := o.HTTPRouteStatus[k.NN]
		return st, ok
	case kindGRPCRoute:
		st, ok := o.GRPCRouteStatus[k.NN]
		return st, ok
	case kindTLSRoute:
		st, ok := o.TLSRouteStatus[k.NN]
		return st, ok
	}
	return nil, false
}
