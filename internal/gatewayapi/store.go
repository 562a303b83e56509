/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/autotls"
	"github.com/shardgate/shardgate/internal/params"
)

// Store holds every object the translator reads, as the event handlers
// deliver them, and decides at insert time what each change affects. It
// keeps reverse indexes from each dependency to its dependents:
//
//   - Service → the routes whose backendRefs or mirrors name it;
//   - ReferenceGrant (by namespace) → the routes and Gateways that refer
//     into that namespace from another one;
//   - Secret → the Gateways whose listeners name it, or whose
//     spec.tls.frontend names it as a CA;
//   - ConfigMap → the Gateways whose spec.tls.frontend names it as a CA;
//   - Namespace → the routes in it (listener selectors read its labels) and
//     the Gateways in it;
//   - Gateway → the routes whose parentRefs name it, and the ListenerSets
//     whose parentRef names it;
//   - ListenerSet → the routes whose parentRefs name it; Secret,
//     ReferenceGrant (by namespace) and Namespace → the ListenerSets that
//     read them, whose Gateways a change marks (see storels.go);
//   - a Secret named like an automatic HTTPS certificate
//     (autotls.SecretName) → every Gateway whose GatewayParameters set
//     spec.shard.tls (such Secrets change rarely);
//   - Namespace → the HTTPRoutes in it of the shape of an ACME solver
//     route, which the Translator marks when a generated route's names
//     there change (markNamespaceRoutes).
//
// A change marks exactly those routes and Gateways dirty, once; a
// Translator built on the Store redoes only them. GatewayClasses and
// GatewayParameters are few and change the acceptance of every Gateway of a
// class: a change to one marks everything dirty (compilations are kept).
//
// Objects are the informers' own and are only read. A Store is safe for
// concurrent use.
type Store struct {
	mu             sync.Mutex
	controllerName string

	classes    objects[gatewayv1.GatewayClass]
	gateways   objects[gatewayv1.Gateway]
	http       objects[gatewayv1.HTTPRoute]
	grpc       objects[gatewayv1.GRPCRoute]
	tls        objects[gatewayv1.TLSRoute]
	tcp        objects[gatewayv1.TCPRoute]
	grantObjs  objects[gatewayv1beta1.ReferenceGrant]
	svcObjs    objects[corev1.Service]
	secretObjs objects[corev1.Secret]
	cmObjs     objects[corev1.ConfigMap]
	nsObjs     objects[corev1.Namespace]
	paramObjs  objects[shardgatev1alpha1.GatewayParameters]
	policyObjs objects[gatewayv1.BackendTLSPolicy]

	// The lookup maps an Index reads, kept up to date per event.
	services   map[types.NamespacedName]*corev1.Service
	secrets    map[types.NamespacedName]*corev1.Secret
	configMaps map[types.NamespacedName]*corev1.ConfigMap
	grants     map[string][]*gatewayv1beta1.ReferenceGrant // by namespace
	namespaces map[string]*corev1.Namespace
	params     map[types.NamespacedName]*shardgatev1alpha1.GatewayParameters

	// certs: the certificate checks of automatic HTTPS Secrets, which
	// the Translator's Indexes keep here across translations (certFor).
	certs map[types.NamespacedName]*certEntry

	// backendBuf is routeDependencies' scratch space.
	backendBuf []gatewayv1.BackendObjectReference

	// Reverse indexes, and what each object was indexed under.
	routeDeps     map[RouteKey]deps
	gatewayDeps   map[types.NamespacedName]deps
	routesBySvc   map[types.NamespacedName]refs[RouteKey]
	routesByGrant map[string]refs[RouteKey]
	routesByNS    map[string]refs[RouteKey]
	routesByGW    map[types.NamespacedName]refs[RouteKey]
	// solversByNS: the HTTPRoutes of the shape of an ACME solver route
	// (acmeSolverShape), by namespace.
	solversByNS    map[string]refs[RouteKey]
	gwsBySecret    map[types.NamespacedName]refs[types.NamespacedName]
	gwsByConfigMap map[types.NamespacedName]refs[types.NamespacedName]
	gwsByGrant     map[string]refs[types.NamespacedName]
	gwsByNS        map[string]refs[types.NamespacedName]
	policyDeps     map[types.NamespacedName]policyDeps
	policiesByCM   map[types.NamespacedName]refs[types.NamespacedName]
	listenerSetIndexes
	dirty          dirtySet
	relevantChecks int // Relevant calls, for tests
}

// dirtySet is what changed since a Translator last took it.
type dirtySet struct {
	// All: a GatewayClass or GatewayParameters changed; every Gateway is
	// translated again.
	All bool
	// Routes must be compiled and attached again.
	Routes set[RouteKey]
	// Gateways must be translated again in full.
	Gateways set[types.NamespacedName]
	// Clusters: the Services whose ports, or BackendTLSPolicy (or its CA
	// ConfigMaps), changed: their clusters are built again.
	Clusters set[types.NamespacedName]
	// Policies: the BackendTLSPolicies to resolve again.
	Policies set[types.NamespacedName]
}

func newDirty() dirtySet {
	return dirtySet{Routes: set[RouteKey]{}, Gateways: set[types.NamespacedName]{}, Clusters: set[types.NamespacedName]{},
		Policies: set[types.NamespacedName]{}}
}

type set[K comparable] map[K]struct{}

func (s set[K]) add(k K) { s[k] = struct{}{} }

// deps is what one route or Gateway depends on besides itself.
type deps struct {
	services []types.NamespacedName
	grantNS  []string // namespaces it refers into from its own
	secrets  []types.NamespacedName
	cms      []types.NamespacedName // CA ConfigMaps
	gateways []types.NamespacedName
	// listenerSets its parentRefs name (routes only)
	listenerSets []types.NamespacedName
	ns           string
	// solver: an HTTPRoute of the shape of an ACME solver route.
	solver bool
}

// objects is one kind's objects by name, plus a list to hand out snapshots
// without walking a map.
//
// A snapshot is the list itself, copied on write: the list is copied when
// an object is replaced or removed in place after a snapshot was taken,
// never when one is added (an append writes past every snapshot's length,
// and a snapshot's capacity ends at its length). So the snapshots a burst
// of new objects takes cost nothing, and a change to an existing object
// costs one copy of its kind's list, however many snapshots came before.
type objects[T any] struct {
	at   map[types.NamespacedName]int
	list []*T
	// shared: list has been handed out by snapshot since it was last
	// copied.
	shared bool
}

func (o *objects[T]) get(k types.NamespacedName) *T {
	if i, ok := o.at[k]; ok {
		return o.list[i]
	}
	return nil
}

// own makes list the objects' own before it is changed in place.
func (o *objects[T]) own() {
	if o.shared {
		o.list = slices.Clone(o.list)
		o.shared = false
	}
}

// put stores v under k and returns the object it replaces.
func (o *objects[T]) put(k types.NamespacedName, v *T) *T {
	if o.at == nil {
		o.at = map[types.NamespacedName]int{}
	}
	if i, ok := o.at[k]; ok {
		o.own()
		old := o.list[i]
		o.list[i] = v
		return old
	}
	o.at[k] = len(o.list)
	o.list = append(o.list, v)
	return nil
}

// remove deletes k, moving the last object into its place.
func (o *objects[T]) remove(k types.NamespacedName, key func(*T) types.NamespacedName) *T {
	i, ok := o.at[k]
	if !ok {
		return nil
	}
	o.own()
	old := o.list[i]
	last := len(o.list) - 1
	if i != last {
		o.list[i] = o.list[last]
		o.at[key(o.list[i])] = i
	}
	o.list[last] = nil
	o.list = o.list[:last]
	delete(o.at, k)
	return old
}

// snapshot returns the objects as a list that does not change (see
// objects).
func (o *objects[T]) snapshot() []*T {
	if len(o.list) == 0 {
		return nil
	}
	o.shared = true
	return slices.Clip(o.list)
}

// NewStore returns an empty Store for the given controllerName.
func NewStore(controllerName string) *Store {
	return &Store{
		controllerName: controllerName,
		services:       map[types.NamespacedName]*corev1.Service{},
		secrets:        map[types.NamespacedName]*corev1.Secret{},
		configMaps:     map[types.NamespacedName]*corev1.ConfigMap{},
		grants:         map[string][]*gatewayv1beta1.ReferenceGrant{},
		namespaces:     map[string]*corev1.Namespace{},
		params:         map[types.NamespacedName]*shardgatev1alpha1.GatewayParameters{},
		certs:          map[types.NamespacedName]*certEntry{},
		policyDeps:     map[types.NamespacedName]policyDeps{},
		policiesByCM:   map[types.NamespacedName]refs[types.NamespacedName]{},
		routeDeps:      map[RouteKey]deps{},
		gatewayDeps:    map[types.NamespacedName]deps{},
		routesBySvc:    map[types.NamespacedName]refs[RouteKey]{},
		routesByGrant:  map[string]refs[RouteKey]{},
		routesByNS:     map[string]refs[RouteKey]{},
		routesByGW:     map[types.NamespacedName]refs[RouteKey]{},
		solversByNS:    map[string]refs[RouteKey]{},
		gwsBySecret:    map[types.NamespacedName]refs[types.NamespacedName]{},
		gwsByConfigMap: map[types.NamespacedName]refs[types.NamespacedName]{},
		gwsByGrant:     map[string]refs[types.NamespacedName]{},
		gwsByNS:        map[string]refs[types.NamespacedName]{},

		listenerSetIndexes: newListenerSetIndexes(),
		dirty:              newDirty(),
	}
}

func key(o Object) types.NamespacedName { return nn(o.GetNamespace(), o.GetName()) }

// Upsert stores a created or updated object (the informer's new version)
// and marks what it affects. It reports whether the change can alter a
// translation (Relevant against the stored version); an irrelevant update
// (a status write) is stored too, so that snapshots carry the current
// status, but marks nothing. A Service, EndpointSlice or ConfigMap that
// nothing names yet is stored and marked, but cannot alter a translation
// until a route (or Gateway, or policy) names it, which marks it again
// (false). Objects of kinds the translator does not read are ignored
// (false).
func (s *Store) Upsert(obj Object) bool {
	if obj == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(obj)
	if rk := routeKindOf(obj); rk != nil {
		return s.upsertRoute(RouteKey{Kind: rk.name, NN: k}, obj, rk.stored(s).put(k, obj))
	}
	switch o := obj.(type) {
	case *gatewayv1.GatewayClass:
		return s.upsertAll(o, s.classes.put(k, o))
	case *shardgatev1alpha1.GatewayParameters:
		old := s.paramObjs.put(k, o)
		s.params[k] = o
		return s.upsertAll(o, old)
	case *gatewayv1.Gateway:
		old := s.gateways.put(k, o)
		if !s.relevant(old, o) {
			return false
		}
		s.unindexGateway(k)
		s.indexGateway(o)
		s.dirty.Gateways.add(k)
		return true
	case *gatewayv1.ListenerSet:
		return s.upsertListenerSet(k, o)
	case *gatewayv1beta1.ReferenceGrant:
		old := s.grantObjs.put(k, o)
		s.setGrant(k.Namespace, old, o)
		if !s.relevant(old, o) {
			return false
		}
		s.grantChanged(k.Namespace)
		return true
	case *corev1.Service:
		old := s.svcObjs.put(k, o)
		s.services[k] = o
		if !s.relevant(old, o) {
			return false
		}
		s.serviceChanged(k)
		// A Service no route names yet (a new lease's, created before
		// its route) changes no translation: relevant only when named.
		return s.routesBySvc[k].len() > 0
	case *corev1.Secret:
		old := s.secretObjs.put(k, o)
		s.secrets[k] = o
		if !s.relevant(old, o) {
			return false
		}
		s.markGateways(s.gwsBySecret[k])
		s.markListenerSets(s.lsBySecret[k])
		s.autoTLSSecretChanged(k)
		return true
	case *corev1.ConfigMap:
		old := s.cmObjs.put(k, o)
		s.configMaps[k] = o
		if !s.relevant(old, o) {
			return false
		}
		// Most ConfigMaps are no CA anything names: relevant only when named.
		return s.configMapChanged(k)
	case *corev1.Namespace:
		old := s.nsObjs.put(k, o)
		s.namespaces[k.Name] = o
		if !s.relevant(old, o) {
			return false
		}
		s.namespaceChanged(k.Name)
		return true
	case *gatewayv1.BackendTLSPolicy:
		old := s.policyObjs.put(k, o)
		if !s.relevant(old, o) {
			return false
		}
		s.policyChanged(k, o)
		return true
	}
	return false
}

// Delete removes an object and marks what it affected. It reports whether
// the Store held it.
func (s *Store) Delete(obj Object) bool {
	if obj == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(obj)
	if rk := routeKindOf(obj); rk != nil {
		return s.deleteRoute(RouteKey{Kind: rk.name, NN: k}, rk.stored(s).remove(k))
	}
	switch obj.(type) {
	case *gatewayv1.GatewayClass:
		if s.classes.remove(k, classKey) == nil {
			return false
		}
		s.dirty.All = true
	case *shardgatev1alpha1.GatewayParameters:
		if s.paramObjs.remove(k, objKey[shardgatev1alpha1.GatewayParameters]) == nil {
			return false
		}
		delete(s.params, k)
		s.dirty.All = true
	case *gatewayv1.Gateway:
		if s.gateways.remove(k, objKey[gatewayv1.Gateway]) == nil {
			return false
		}
		s.unindexGateway(k)
		s.dirty.Gateways.add(k)
	case *gatewayv1.ListenerSet:
		return s.deleteListenerSet(k)
	case *gatewayv1beta1.ReferenceGrant:
		old := s.grantObjs.remove(k, objKey[gatewayv1beta1.ReferenceGrant])
		if old == nil {
			return false
		}
		s.setGrant(k.Namespace, old, nil)
		s.grantChanged(k.Namespace)
	case *corev1.Service:
		if s.svcObjs.remove(k, objKey[corev1.Service]) == nil {
			return false
		}
		delete(s.services, k)
		s.serviceChanged(k)
	case *corev1.Secret:
		if s.secretObjs.remove(k, objKey[corev1.Secret]) == nil {
			return false
		}
		delete(s.secrets, k)
		s.markGateways(s.gwsBySecret[k])
		s.markListenerSets(s.lsBySecret[k])
		s.autoTLSSecretChanged(k)
	case *corev1.ConfigMap:
		if s.cmObjs.remove(k, objKey[corev1.ConfigMap]) == nil {
			return false
		}
		delete(s.configMaps, k)
		s.configMapChanged(k)
	case *corev1.Namespace:
		if s.nsObjs.remove(k, objKey[corev1.Namespace]) == nil {
			return false
		}
		delete(s.namespaces, k.Name)
		s.namespaceChanged(k.Name)
	case *gatewayv1.BackendTLSPolicy:
		if s.policyObjs.remove(k, objKey[gatewayv1.BackendTLSPolicy]) == nil {
			return false
		}
		s.policyChanged(k, nil)
	default:
		return false
	}
	return true
}

func objKey[T any, PT interface {
	*T
	Object
}](o *T) types.NamespacedName {
	return key(PT(o))
}

func classKey(o *gatewayv1.GatewayClass) types.NamespacedName { return nn("", o.Name) }

// relevant is Relevant against the stored version (nil: a new object).
// Call with s.mu held.
func (s *Store) relevant(old, obj Object) bool {
	if isNil(old) {
		return true
	}
	s.relevantChecks++
	return Relevant(old, obj)
}

func isNil(o Object) bool {
	if rk := routeKindOf(o); rk != nil {
		return rk.null(o)
	}
	switch o := o.(type) {
	case nil:
		return true
	case *gatewayv1.GatewayClass:
		return o == nil
	case *gatewayv1.Gateway:
		return o == nil
	case *gatewayv1.ListenerSet:
		return o == nil
	case *gatewayv1beta1.ReferenceGrant:
		return o == nil
	case *corev1.Service:
		return o == nil
	case *corev1.Secret:
		return o == nil
	case *corev1.ConfigMap:
		return o == nil
	case *corev1.Namespace:
		return o == nil
	case *shardgatev1alpha1.GatewayParameters:
		return o == nil
	case *gatewayv1.BackendTLSPolicy:
		return o == nil
	}
	return false
}

func (s *Store) upsertAll(obj, old Object) bool {
	if !s.relevant(old, obj) {
		return false
	}
	s.dirty.All = true
	return true
}

func (s *Store) upsertRoute(k RouteKey, obj, old Object) bool {
	if !s.relevant(old, obj) {
		return false
	}
	s.unindexRoute(k)
	s.indexRoute(k, obj)
	s.dirty.Routes.add(k)
	return true
}

func (s *Store) deleteRoute(k RouteKey, held bool) bool {
	if !held {
		return false
	}
	s.unindexRoute(k)
	s.dirty.Routes.add(k)
	return true
}

func (s *Store) grantChanged(ns string) {
	for k := range s.routesByGrant[ns].all() {
		s.dirty.Routes.add(k)
	}
	s.markGateways(s.gwsByGrant[ns])
	s.markListenerSets(s.lsByGrant[ns])
}

func (s *Store) serviceChanged(k types.NamespacedName) {
	for r := range s.routesBySvc[k].all() {
		s.dirty.Routes.add(r)
	}
	s.dirty.Clusters.add(k)
}

func (s *Store) namespaceChanged(ns string) {
	for r := range s.routesByNS[ns].all() {
		s.dirty.Routes.add(r)
	}
	s.markGateways(s.gwsByNS[ns])
	s.markListenerSets(s.lsByNS[ns])
}

// autoTLSSecretChanged marks, when k may be the Secret of a name served
// by automatic HTTPS (autotls.SecretName), every Gateway whose
// GatewayParameters turn it on, and forgets k's certificate check. Such
// Secrets change rarely (issuance, renewal, revocation), so the whole
// shard is translated again.
func (s *Store) autoTLSSecretChanged(k types.NamespacedName) {
	if !autotls.IsSecretName(k.Name) {
		return
	}
	delete(s.certs, k)
	for _, gw := range s.gateways.list {
		class := s.classes.get(nn("", string(gw.Spec.GatewayClassName)))
		p, _ := params.Resolve(gw, class, func(k types.NamespacedName) *shardgatev1alpha1.GatewayParameters { return s.params[k] })
		if p != nil && p.Spec.Shard != nil && p.Spec.Shard.TLS != nil {
			s.dirty.Gateways.add(nn(gw.Namespace, gw.Name))
		}
	}
}

// markNamespaceRoutes marks the routes of namespace ns that have the shape
// of an ACME solver route in d: their admission reads the names the
// generated routes of their namespace hold (Ownership.admitsSolver).
func (s *Store) markNamespaceRoutes(ns string, d *dirtySet) {
	for r := range s.solversByNS[ns].all() {
		d.Routes.add(r)
	}
}

func (s *Store) markGateways(gws refs[types.NamespacedName]) {
	for g := range gws.all() {
		s.dirty.Gateways.add(g)
	}
}

// setGrant replaces old by obj in the namespace's grant list.
func (s *Store) setGrant(ns string, old, obj *gatewayv1beta1.ReferenceGrant) {
	list := s.grants[ns]
	out := list[:0:0]
	for _, g := range list {
		if g != old {
			out = append(out, g)
		}
	}
	if obj != nil {
		out = append(out, obj)
	}
	if len(out) == 0 {
		delete(s.grants, ns)
		return
	}
	s.grants[ns] = out
}

// indexRoute records what route k depends on. Call with s.mu held.
func (s *Store) indexRoute(k RouteKey, obj Object) {
	var d deps
	d, s.backendBuf = routeDependencies(k.NN.Namespace, obj, s.backendBuf)
	for _, svc := range d.services {
		addTo(s.routesBySvc, svc, k)
	}
	for _, ns := range d.grantNS {
		addTo(s.routesByGrant, ns, k)
	}
	for _, gw := range d.gateways {
		addTo(s.routesByGW, gw, k)
	}
	for _, ls := range d.listenerSets {
		addTo(s.routesByLS, ls, k)
	}
	addTo(s.routesByNS, d.ns, k)
	if hr, ok := obj.(*gatewayv1.HTTPRoute); ok && acmeSolverShape(hr) {
		d.solver = true
		addTo(s.solversByNS, d.ns, k)
	}
	s.routeDeps[k] = d
}

func (s *Store) unindexRoute(k RouteKey) {
	d, ok := s.routeDeps[k]
	if !ok {
		return
	}
	for _, svc := range d.services {
		removeFrom(s.routesBySvc, svc, k)
	}
	for _, ns := range d.grantNS {
		removeFrom(s.routesByGrant, ns, k)
	}
	for _, gw := range d.gateways {
		removeFrom(s.routesByGW, gw, k)
	}
	for _, ls := range d.listenerSets {
		removeFrom(s.routesByLS, ls, k)
	}
	removeFrom(s.routesByNS, d.ns, k)
	if d.solver {
		removeFrom(s.solversByNS, d.ns, k)
	}
	delete(s.routeDeps, k)
}

// secretDep records ref, a Secret named from namespace from, as a
// dependency, and its namespace as a ReferenceGrant dependency when it is
// another.
func secretDep(from string, ref gatewayv1.SecretObjectReference, secrets *[]types.NamespacedName, grantNS *[]string) {
	ns := from
	if ref.Namespace != nil && *ref.Namespace != "" {
		ns = string(*ref.Namespace)
	}
	*secrets = appendUnique(*secrets, nn(ns, string(ref.Name)))
	if ns != from {
		*grantNS = appendUnique(*grantNS, ns)
	}
}

func (s *Store) indexGateway(gw *gatewayv1.Gateway) {
	k := nn(gw.Namespace, gw.Name)
	d := deps{ns: gw.Namespace}
	for _, l := range gw.Spec.Listeners {
		if l.TLS == nil {
			continue
		}
		for _, ref := range l.TLS.CertificateRefs {
			secretDep(gw.Namespace, ref, &d.secrets, &d.grantNS)
		}
	}
	if gw.Spec.TLS != nil && gw.Spec.TLS.Backend != nil && gw.Spec.TLS.Backend.ClientCertificateRef != nil {
		secretDep(gw.Namespace, *gw.Spec.TLS.Backend.ClientCertificateRef, &d.secrets, &d.grantNS)
	}
	caSecrets, cms, caGrantNS := frontendCARefs(gw)
	d.secrets = append(d.secrets, caSecrets...)
	d.cms = cms
	d.grantNS = append(d.grantNS, caGrantNS...)
	for _, sec := range d.secrets {
		addTo(s.gwsBySecret, sec, k)
	}
	for _, cm := range d.cms {
		addTo(s.gwsByConfigMap, cm, k)
	}
	for _, ns := range d.grantNS {
		addTo(s.gwsByGrant, ns, k)
	}
	addTo(s.gwsByNS, d.ns, k)
	s.gatewayDeps[k] = d
}

func (s *Store) unindexGateway(k types.NamespacedName) {
	d, ok := s.gatewayDeps[k]
	if !ok {
		return
	}
	for _, sec := range d.secrets {
		removeFrom(s.gwsBySecret, sec, k)
	}
	for _, cm := range d.cms {
		removeFrom(s.gwsByConfigMap, cm, k)
	}
	for _, ns := range d.grantNS {
		removeFrom(s.gwsByGrant, ns, k)
	}
	removeFrom(s.gwsByNS, d.ns, k)
	delete(s.gatewayDeps, k)
}

// takeDirty hands out what changed and starts a new set. Call with s.mu
// held.
func (s *Store) takeDirty() dirtySet {
	d := s.dirty
	s.dirty = newDirty()
	return d
}

// route returns the stored route named by k, or nil.
func (s *Store) route(k RouteKey) Object {
	if rk := routeKindNamed(k.Kind); rk != nil {
		return rk.stored(s).get(k.NN)
	}
	return nil
}

// Input is a snapshot of the Store's objects (in no particular order) with
// the given facts. Its lists are copied on write (see objects): taking one
// costs O(kinds), not O(objects).
func (s *Store) Input(f Facts) *Input {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := &Input{
		ControllerName:     s.controllerName,
		GatewayClasses:     s.classes.snapshot(),
		Gateways:           s.gateways.snapshot(),
		ListenerSets:       s.lsObjs.snapshot(),
		ReferenceGrants:    s.grantObjs.snapshot(),
		Services:           s.svcObjs.snapshot(),
		Secrets:            s.secretObjs.snapshot(),
		Namespaces:         s.nsObjs.snapshot(),
		GatewayParameters:  s.paramObjs.snapshot(),
		BackendTLSPolicies: s.policyObjs.snapshot(),
		ConfigMaps:         s.cmObjs.snapshot(),
		Runtime:            f.Runtime,
		ShardRefusals:      f.ShardRefusals,
		TenantNamespaces:   f.TenantNamespaces,
		Ownership:          f.Ownership,
		TenantLimits:       f.TenantLimits,
		RouteByKey:         s.Route,
	}
	for _, rk := range routeKinds {
		rk.snapshot(s, in)
	}
	return in
}

// Route returns the stored route k, nil if there is none.
func (s *Store) Route(k RouteKey) Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.route(k)
}

// Load makes the Store hold exactly the objects of in, through the same
// Upsert and Delete an event handler calls: objects that are the same
// pointers as the stored ones are left alone. It is for callers that hold
// whole snapshots (tools, tests); it costs O(size of in).
func (s *Store) Load(in *Input) {
	if in == nil {
		in = &Input{}
	}
	loadKind(s, &s.classes, in.GatewayClasses)
	loadKind(s, &s.paramObjs, in.GatewayParameters)
	loadKind(s, &s.nsObjs, in.Namespaces)
	loadKind(s, &s.gateways, in.Gateways)
	loadKind(s, &s.lsObjs, in.ListenerSets)
	loadKind(s, &s.grantObjs, in.ReferenceGrants)
	loadKind(s, &s.svcObjs, in.Services)
	loadKind(s, &s.secretObjs, in.Secrets)
	loadKind(s, &s.cmObjs, in.ConfigMaps)
	loadKind(s, &s.policyObjs, in.BackendTLSPolicies)
	for _, rk := range routeKinds {
		rk.load(s, in)
	}
}

func loadKind[T any, PT interface {
	*T
	Object
}](s *Store, have *objects[T], want []*T) {
	s.mu.Lock()
	current := make(map[types.NamespacedName]*T, len(have.list))
	for _, o := range have.list {
		current[key(PT(o))] = o
	}
	s.mu.Unlock()
	seen := make(map[types.NamespacedName]bool, len(want))
	for _, o := range want {
		if o == nil {
			continue
		}
		k := key(PT(o))
		seen[k] = true
		if current[k] != o {
			s.Upsert(PT(o))
		}
	}
	for k, o := range current {
		if !seen[k] {
			s.Delete(PT(o))
		}
	}
}
