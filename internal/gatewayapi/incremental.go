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
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// Translator translates the objects of a Store, redoing only what the
// Store marked dirty since the last translation. Its output is always
// exactly Translate's over the same objects (a property test checks it
// after every edit); only the cost differs.
//
// It is a layer over the pure functions compileRoute and assembleGateway
// (and patchGateway, which applies route changes to a Gateway's last
// assembly). What it remembers, and what forgets each entry:
//
//   - each route's compilation, by route key, until the Store marks the
//     route dirty (the route, a Service it names, a ReferenceGrant in a
//     namespace it refers into, or its Namespace changed);
//   - each Gateway's last assembly, until the Store marks the Gateway dirty
//     (the Gateway, a Secret it names, a ReferenceGrant it relies on, its
//     Namespace changed, or for a shard with automatic HTTPS a certificate
//     Secret) or any GatewayClass, GatewayParameters or Facts change;
//     dirty routes are patched into it when they can be (not when the
//     patch would add or remove a per-name HTTPS listener).
//
// EndpointSlices are not among its inputs: a cluster names its Service
// port, and the xDS side gives it that port's endpoints (xds/endpoints).
//
// Outputs share unchanged maps and slices with earlier outputs: they must be
// treated as read-only, which makes them safe to keep.
//
// A Translator is safe for concurrent use; translations run one at a time,
// and hold the Store's lock while they run.
type Translator struct {
	mu       sync.Mutex
	store    *Store
	compiled map[RouteKey]*compiledRoute
	gateways map[types.NamespacedName]*gwState
	policies map[types.NamespacedName]*resolvedPolicy
	facts    Facts
	last     *Output
	seq      uint64

	// Stats counts how Gateways were translated, for tests and metrics.
	Stats TranslatorStats
}

// TranslatorStats counts Gateway translations by how they were done.
type TranslatorStats struct {
	Full, Patched, Reused int
}

// NewTranslator returns a Translator over s with nothing remembered.
func NewTranslator(s *Store) *Translator {
	return &Translator{
		store:    s,
		compiled: map[RouteKey]*compiledRoute{},
		gateways: map[types.NamespacedName]*gwState{},
		policies: map[types.NamespacedName]*resolvedPolicy{},
	}
}

// Translate is Translate over the Store's objects with the facts f,
// reusing what it can.
func (t *Translator) Translate(f Facts) *Output {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.store
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.takeDirty()
	if t.last != nil && !d.All {
		if !sameRuntime(f, t.facts) || t.ownershipChanges(t.facts.Ownership, f.Ownership, &d) {
			d.All = true
		}
	}
	for k := range d.Routes {
		delete(t.compiled, k)
	}
	for k := range d.Policies {
		delete(t.policies, k)
	}
	idx := storeIndex(s, f)
	idx.policyCache = t.policies
	t.seq++
	var out *Output
	if t.last == nil || d.All {
		out = t.translateAll(idx)
	} else {
		out = t.translateChanges(idx, d)
	}
	out.BackendTLSPolicyStatus = t.policyStatuses(idx)
	t.facts = f
	out.Seq = t.seq
	t.last = out
	return out
}

// sameRuntime: a and b have the same Gateway runtime facts, shard
// refusals and tenant namespaces, which a Gateway's whole assembly (and a
// class's status) reads.
func sameRuntime(a, b Facts) bool {
	return a.TenantLimits == b.TenantLimits &&
		reflect.DeepEqual(a.Runtime, b.Runtime) && reflect.DeepEqual(a.ShardRefusals, b.ShardRefusals) &&
		maps.Equal(a.TenantNamespaces, b.TenantNamespaces)
}

// ownershipChanges marks in d what differs between a and b, the ownership
// facts of the last translation and of this one, as the translator reads
// them, and reports whether everything must be translated again:
//
//   - other shards, or a shard in another routes mode: everything;
//   - a route's Generated entry (a LeaseHost's route, the names it holds
//     on each shard): that route, which is admitted again on its shards,
//     and the ACME solver-shaped routes of its namespace;
//   - the holders, the namespace owners or the block list: the shards
//     that read them, those in Owned mode (every route's names are checked
//     against the holders) and those with ListenerSets (their listeners'
//     names are). A shard in Generated mode reads only Generated;
//   - the namespace owners: also every TCPRoute (shardAdmitsTCP).
//
// Retiring and Deleted, which only the status writer reads, are not
// compared. When b carries a Delta from a's generation, the routes and
// owners it names are marked without comparing anything: O(change).
// Otherwise the comparison costs O(routes generated), map lookups only.
// What it marks costs what any change of those routes and Gateways does.
func (t *Translator) ownershipChanges(a, b *Ownership, d *dirtySet) (all bool) {
	if a == b {
		return false
	}
	if a == nil || b == nil {
		return true
	}
	if t.facts.TenantLimits.enabled() {
		t.tenantChanges(a.NamespaceOwners, b.NamespaceOwners, d)
	}
	if dl := b.Delta; dl != nil && a.Gen != 0 && dl.Since == a.Gen {
		for _, k := range dl.Routes {
			d.Routes.add(RouteKey{Kind: kindHTTPRoute, NN: k})
			t.store.markNamespaceRoutes(k.Namespace, d)
		}
		if dl.Owners {
			for _, gw := range t.ownerReaders(b) {
				d.Gateways.add(gw)
			}
			t.store.markTCPRoutes(d)
		}
		return false
	}
	if !maps.Equal(a.Shards, b.Shards) {
		return true
	}
	for k, ga := range a.Generated {
		if gb, ok := b.Generated[k]; !ok || !ga.Equal(gb) {
			d.Routes.add(RouteKey{Kind: kindHTTPRoute, NN: k})
			t.store.markNamespaceRoutes(k.Namespace, d)
		}
	}
	for k := range b.Generated {
		if _, ok := a.Generated[k]; !ok {
			d.Routes.add(RouteKey{Kind: kindHTTPRoute, NN: k})
			t.store.markNamespaceRoutes(k.Namespace, d)
		}
	}
	if !maps.Equal(a.NamespaceOwners, b.NamespaceOwners) {
		t.store.markTCPRoutes(d)
	}
	readers := t.ownerReaders(b)
	if len(readers) > 0 && !(maps.Equal(a.Holders, b.Holders) && maps.Equal(a.NamespaceOwners, b.NamespaceOwners) &&
		(a.Blocked == b.Blocked || reflect.DeepEqual(a.Blocked, b.Blocked))) {
		for _, gw := range readers {
			d.Gateways.add(gw)
		}
	}
	return false
}

// ownerReaders are the shards of o that read its holders, namespace owners
// and block list: those in Owned mode and those with ListenerSets.
func (t *Translator) ownerReaders(o *Ownership) []types.NamespacedName {
	var out []types.NamespacedName
	for gw, mode := range o.Shards {
		if mode == RoutesOwned || t.store.hasListenerSets(gw) {
			out = append(out, gw)
		}
	}
	return out
}

// translateAll assembles every Gateway again, reusing the compilations.
func (t *Translator) translateAll(idx *Index) *Output {
	out := newOutput()
	for _, name := range idx.classNames {
		out.GatewayClasses[name] = idx.classes[name].status
	}
	clear(t.gateways)
	compiled := make(map[RouteKey]*compiledRoute, len(t.compiled))
	parents := make(map[RouteKey][]ParentEntry, len(t.compiled))
	for _, gw := range idx.gateways {
		key := nn(gw.Namespace, gw.Name)
		res, a := assembleGateway(idx, gw, t.compileFor(idx, key, compiled))
		if res == nil {
			continue
		}
		t.Stats.Full++
		t.gateways[key] = a.state()
		out.GatewayStatus[key] = res.Status
		for k, st := range res.ListenerSets {
			out.ListenerSetStatus[k] = st
		}
		if res.IR != nil {
			out.Gateways = append(out.Gateways, res.IR)
		}
		for k, entries := range res.Routes {
			parents[k] = append(parents[k], entries...)
		}
	}
	t.compiled = compiled // only the routes of our Gateways
	out.setRouteStatuses(parents)
	return out
}

// compileFor returns the compilations of the routes naming gw, compiling
// those not in t.compiled, and records them in into.
func (t *Translator) compileFor(idx *Index, gw types.NamespacedName, into map[RouteKey]*compiledRoute) []*compiledRoute {
	keys, n := t.store.routesOf(gw)
	crs := make([]*compiledRoute, 0, n)
	for k := range keys {
		cr := into[k]
		if cr == nil {
			cr = t.compiled[k]
		}
		if cr == nil {
			obj := t.store.route(k)
			if obj == nil {
				continue
			}
			cr = compileRoute(idx, obj)
		}
		into[k] = cr
		crs = append(crs, cr)
	}
	return crs
}

// translateChanges redoes the dirty Gateways, patches the Gateways whose
// routes (or clusters' Services) changed, reuses the others, and merges again the
// status of the routes whose entries may have changed.
func (t *Translator) translateChanges(idx *Index, d dirtySet) *Output {
	s := t.store
	prev := t.last
	out := &Output{
		GatewayClasses: prev.GatewayClasses,
		GatewayStatus:  maps.Clone(prev.GatewayStatus),

		ListenerSetStatus: prev.ListenerSetStatus,
	}
	for _, rk := range routeKinds {
		*rk.status(out) = *rk.status(prev)
	}
	// ListenerSet statuses of the Gateways translated again: those of
	// their previous results are dropped, then the new ones set (a
	// ListenerSet may move from one Gateway to another).
	var lsDrop []types.NamespacedName
	lsSet := map[types.NamespacedName]gatewayv1.ListenerSetStatus{}
	remerge := set[RouteKey]{}
	// The Gateways each dirty route named before and names now.
	changedByGW := map[types.NamespacedName][]RouteKey{}
	for k := range d.Routes {
		remerge.add(k)
		for g, st := range t.gateways {
			if _, ok := st.crs[k]; ok {
				changedByGW[g] = append(changedByGW[g], k)
			}
		}
		if s.route(k) == nil {
			continue
		}
		for _, g := range s.routeGateways(k) {
			if st := t.gateways[g]; st == nil || st.crs[k] == nil {
				changedByGW[g] = append(changedByGW[g], k)
			}
		}
	}

	live := make(set[types.NamespacedName], len(idx.gateways))
	for _, gw := range idx.gateways {
		key := nn(gw.Namespace, gw.Name)
		live.add(key)
		st := t.gateways[key]
		var res *GatewayResult
		var prevLS map[types.NamespacedName]gatewayv1.ListenerSetStatus
		if st != nil {
			prevLS = st.result.ListenerSets
		}
		if _, dirty := d.Gateways[key]; dirty || st == nil {
			res = t.assemble(idx, gw, st, remerge)
		} else {
			changed := changedByGW[key]
			rebuild := st.clustersOf(d.Clusters)
			if len(changed) == 0 && len(rebuild) == 0 {
				t.Stats.Reused++
				continue
			}
			newCRs := make(map[RouteKey]*compiledRoute, len(changed))
			for _, k := range changed {
				if obj := s.route(k); obj != nil && slices.Contains(s.routeGateways(k), key) {
					newCRs[k] = t.compile(idx, k, obj)
				}
			}
			var ok bool
			if res, ok = patchGateway(idx, st, gw, changed, newCRs, rebuild); ok {
				t.Stats.Patched++
				for _, k := range st.limitFlips {
					remerge.add(k)
				}
			} else {
				res = t.assemble(idx, gw, st, remerge)
			}
		}
		for k := range prevLS {
			lsDrop = append(lsDrop, k)
		}
		if res == nil {
			delete(out.GatewayStatus, key)
			continue
		}
		out.GatewayStatus[key] = res.Status
		maps.Copy(lsSet, res.ListenerSets)
	}
	for key, st := range t.gateways {
		if _, ok := live[key]; !ok {
			delete(t.gateways, key)
			delete(out.GatewayStatus, key)
			for k := range st.result.ListenerSets {
				lsDrop = append(lsDrop, k)
			}
			for k := range st.crs {
				remerge.add(k)
				if !t.attached(k) {
					delete(t.compiled, k) // no Gateway of ours needs it now
				}
			}
		}
	}
	if len(lsDrop) > 0 || len(lsSet) > 0 {
		out.ListenerSetStatus = maps.Clone(prev.ListenerSetStatus)
		if out.ListenerSetStatus == nil {
			out.ListenerSetStatus = map[types.NamespacedName]gatewayv1.ListenerSetStatus{}
		}
		for _, k := range lsDrop {
			delete(out.ListenerSetStatus, k)
		}
		maps.Copy(out.ListenerSetStatus, lsSet)
	}
	for _, gw := range idx.gateways {
		if st := t.gateways[nn(gw.Namespace, gw.Name)]; st != nil && st.result.IR != nil {
			out.Gateways = append(out.Gateways, st.result.IR)
		}
	}

	out.StatusChanged = make([]RouteKey, 0, len(remerge))
	for k := range remerge {
		var entries []ParentEntry
		if s.route(k) != nil {
			for _, g := range s.routeGateways(k) {
				if st := t.gateways[g]; st != nil {
					entries = append(entries, st.result.Routes[k]...)
				}
			}
		}
		rk := routeKindNamed(k.Kind)
		if rk == nil {
			continue
		}
		m := rk.status(out)
		out.StatusChanged = append(out.StatusChanged, k)
		if len(entries) == 0 {
			*m = m.Delete(k.NN)
			continue
		}
		*m = m.Set(k.NN, MergeParents(entries))
	}
	return out
}

// policyStatuses is Index.policyStatuses over the Gateways' states: the
// Services each one's clusters use are indexed there already.
func (t *Translator) policyStatuses(idx *Index) PolicyStatuses {
	if len(idx.policies) == 0 {
		return nil
	}
	var served []types.NamespacedName
	for _, gw := range idx.gateways {
		k := nn(gw.Namespace, gw.Name)
		if st := t.gateways[k]; st != nil && st.result.IR != nil {
			served = append(served, k)
		}
	}
	return idx.policyStatuses(served, func(gw, svc types.NamespacedName) []string {
		var out []string
		for c := range t.gateways[gw].bySvc[svc].all() {
			out = append(out, c)
		}
		return out
	})
}

// assemble translates gw in full and records its state; the routes of its
// previous and new state are merged again.
func (t *Translator) assemble(idx *Index, gw *gatewayv1.Gateway, prev *gwState, remerge set[RouteKey]) *GatewayResult {
	key := nn(gw.Namespace, gw.Name)
	if prev != nil {
		for k := range prev.crs {
			remerge.add(k)
		}
	}
	res, a := assembleGateway(idx, gw, t.compileFor(idx, key, t.compiled))
	if res == nil {
		delete(t.gateways, key)
		return nil
	}
	t.Stats.Full++
	st := a.state()
	t.gateways[key] = st
	for k := range st.crs {
		remerge.add(k)
	}
	return res
}

// attached reports whether route k names one of the Gateways translated.
func (t *Translator) attached(k RouteKey) bool {
	for _, st := range t.gateways {
		if _, ok := st.crs[k]; ok {
			return true
		}
	}
	return false
}

// compile returns route k's compilation, from memory or compiled anew.
func (t *Translator) compile(idx *Index, k RouteKey, obj Object) *compiledRoute {
	if cr := t.compiled[k]; cr != nil {
		return cr
	}
	cr := compileRoute(idx, obj)
	t.compiled[k] = cr
	return cr
}

// Relevant reports whether replacing oldObj by newObj (two versions of one
// object) can change a translation. The translator reads the spec of the
// Gateway API kinds and of GatewayParameters (a change bumps
// metadata.generation), the HTTPRoute annotations it honours, Service
// ports, Secret types and data and Namespace labels; never status.
func Relevant(oldObj, newObj Object) bool {
	if oldObj == nil || newObj == nil {
		return true
	}
	if oldObj.GetUID() != newObj.GetUID() {
		return true // deleted and created again
	}
	if _, ok := newObj.(*gatewayv1.HTTPRoute); ok && settingsChanged(oldObj.GetAnnotations(), newObj.GetAnnotations()) {
		return true
	}
	// The labels decide whether shardgate.io/retry is honoured
	// (IsGeneratedAkashRoute).
	if _, ok := newObj.(*gatewayv1.HTTPRoute); ok && newObj.GetAnnotations()[shardgatev1alpha1.AnnotationRetry] != "" &&
		!maps.Equal(oldObj.GetLabels(), newObj.GetLabels()) {
		return true
	}
	if routeKindOf(newObj) != nil {
		return oldObj.GetGeneration() != newObj.GetGeneration() || newObj.GetGeneration() == 0
	}
	switch n := newObj.(type) {
	case *gatewayv1.GatewayClass, *gatewayv1.Gateway, *gatewayv1.ListenerSet, *gatewayv1beta1.ReferenceGrant, *shardgatev1alpha1.GatewayParameters,
		*gatewayv1.BackendTLSPolicy:
		return oldObj.GetGeneration() != newObj.GetGeneration() || newObj.GetGeneration() == 0
	case *corev1.Service:
		o, ok := oldObj.(*corev1.Service)
		return !ok || !equality.Semantic.DeepEqual(o.Spec.Ports, n.Spec.Ports)
	case *corev1.ConfigMap:
		// Only a CA bundle is read.
		o, ok := oldObj.(*corev1.ConfigMap)
		return !ok || o.Data[corev1.ServiceAccountRootCAKey] != n.Data[corev1.ServiceAccountRootCAKey]
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
