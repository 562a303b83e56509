/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/ir"
)

// routeKind is everything that tells one route kind from another, in one
// place: its name, the listeners it attaches to, how its backends speak,
// where its objects are kept and its status goes, and its compiler. Adding
// a kind is one entry in routeKinds plus its compiler (and the Input,
// Output and Store fields the entry names); withObjects fills in the
// fields from inputs to new.
type routeKind struct {
	name string // the API kind, "HTTPRoute"
	// irName starts the names of its IR routes ("httproute"); "" for
	// kinds that make no ir.Route (they forward streams).
	irName string
	// protocols are the listener protocols it attaches to.
	protocols []ir.Protocol
	// appProtocol: its backends are HTTP, and the Service port's
	// appProtocol says how Envoy talks to them; otherwise they are raw
	// streams (ir.ClusterTCP).
	appProtocol bool
	// grpc: its requests are gRPC calls: the IR routes say so, and the
	// backends speak HTTP/2 cleartext whatever their appProtocol.
	grpc bool
	// filters are the rule filter types the kind has, when not all of
	// HTTPRoute's (nil); another one is refused as unknown.
	filters []gatewayv1.HTTPRouteFilterType

	// spec reads what every route has: hostnames (none for TCPRoute) and
	// parentRefs.
	spec func(Object) ([]gatewayv1.Hostname, []gatewayv1.ParentReference)
	// backendRefs appends to buf every Service reference of the route's
	// rules: backendRefs, and mirrors where the kind has them.
	backendRefs func(obj Object, buf []gatewayv1.BackendObjectReference) []gatewayv1.BackendObjectReference
	// compile compiles the route's rules into cr and returns how many the
	// spec has.
	compile func(idx *Index, rk *routeKind, cr *compiledRoute, obj Object) int

	// inputs hands f every route of the kind in an Input; count is how
	// many the Input lists.
	inputs func(*Input, func(Object))
	count  func(*Input) int
	// at is the Input's route i of the kind (nil for a nil entry).
	at func(*Input, int) Object
	// stored is the Store's collection of the kind; snapshot puts it into
	// an Input, load makes it hold the Input's.
	stored   func(*Store) routeObjects
	snapshot func(*Store, *Input)
	load     func(*Store, *Input)
	// is says whether obj is of the kind (a typed pointer, possibly nil);
	// null, whether it is a nil one.
	is, null func(Object) bool
	// status is where the Output keeps the kind's route status.
	status func(*Output) *RouteStatuses
	// parents is the object's status.parents; new, an empty object.
	parents func(Object) *[]gatewayv1.RouteParentStatus
	new     func() Object
}

// routeKinds are the route kinds shardgate serves, in the order listeners
// report them in supportedKinds. (Set by init: the Store methods its
// entries call look kinds up here.)
var routeKinds []*routeKind

// kindsByProtocol are the names of the route kinds each listener protocol
// takes, in routeKinds order.
var kindsByProtocol = map[ir.Protocol][]string{}

func init() {
	routeKinds = []*routeKind{
		withObjects(&routeKind{
			name: kindHTTPRoute, irName: "httproute",
			protocols:   []ir.Protocol{ir.ProtocolHTTP, ir.ProtocolHTTPS},
			appProtocol: true,
			spec: func(o Object) ([]gatewayv1.Hostname, []gatewayv1.ParentReference) {
				r := o.(*gatewayv1.HTTPRoute)
				return r.Spec.Hostnames, r.Spec.ParentRefs
			},
			backendRefs: func(o Object, buf []gatewayv1.BackendObjectReference) []gatewayv1.BackendObjectReference {
				for i := range o.(*gatewayv1.HTTPRoute).Spec.Rules {
					rule := &o.(*gatewayv1.HTTPRoute).Spec.Rules[i]
					buf = mirrors(rule.Filters, buf)
					for _, br := range rule.BackendRefs {
						buf = append(buf, br.BackendObjectReference)
						buf = mirrors(br.Filters, buf)
					}
				}
				return buf
			},
			compile: compileHTTPRules,
			parents: func(o Object) *[]gatewayv1.RouteParentStatus { return &o.(*gatewayv1.HTTPRoute).Status.Parents },
			status:  func(o *Output) *RouteStatuses { return &o.HTTPRouteStatus },
		}, func(in *Input) *[]*gatewayv1.HTTPRoute { return &in.HTTPRoutes }, func(s *Store) *objects[gatewayv1.HTTPRoute] { return &s.http }),
		withObjects(&routeKind{
			name: kindGRPCRoute, irName: "grpcroute",
			protocols:   []ir.Protocol{ir.ProtocolHTTP, ir.ProtocolHTTPS},
			appProtocol: true, grpc: true,
			filters: []gatewayv1.HTTPRouteFilterType{
				gatewayv1.HTTPRouteFilterType(gatewayv1.GRPCRouteFilterRequestHeaderModifier),
				gatewayv1.HTTPRouteFilterType(gatewayv1.GRPCRouteFilterResponseHeaderModifier),
				gatewayv1.HTTPRouteFilterType(gatewayv1.GRPCRouteFilterRequestMirror),
				gatewayv1.HTTPRouteFilterType(gatewayv1.GRPCRouteFilterExtensionRef),
			},
			spec: func(o Object) ([]gatewayv1.Hostname, []gatewayv1.ParentReference) {
				r := o.(*gatewayv1.GRPCRoute)
				return r.Spec.Hostnames, r.Spec.ParentRefs
			},
			backendRefs: func(o Object, buf []gatewayv1.BackendObjectReference) []gatewayv1.BackendObjectReference {
				for i := range o.(*gatewayv1.GRPCRoute).Spec.Rules {
					rule := &o.(*gatewayv1.GRPCRoute).Spec.Rules[i]
					for _, fl := range rule.Filters {
						if fl.RequestMirror != nil {
							buf = append(buf, fl.RequestMirror.BackendRef)
						}
					}
					for _, br := range rule.BackendRefs {
						buf = append(buf, br.BackendObjectReference)
						for _, fl := range br.Filters {
							if fl.RequestMirror != nil {
								buf = append(buf, fl.RequestMirror.BackendRef)
							}
						}
					}
				}
				return buf
			},
			compile: compileGRPCRules,
			parents: func(o Object) *[]gatewayv1.RouteParentStatus { return &o.(*gatewayv1.GRPCRoute).Status.Parents },
			status:  func(o *Output) *RouteStatuses { return &o.GRPCRouteStatus },
		}, func(in *Input) *[]*gatewayv1.GRPCRoute { return &in.GRPCRoutes }, func(s *Store) *objects[gatewayv1.GRPCRoute] { return &s.grpc }),
		withObjects(&routeKind{
			name:      kindTLSRoute,
			protocols: []ir.Protocol{ir.ProtocolTLSPassthrough, ir.ProtocolTLSTerminate},
			spec: func(o Object) ([]gatewayv1.Hostname, []gatewayv1.ParentReference) {
				r := o.(*gatewayv1.TLSRoute)
				return r.Spec.Hostnames, r.Spec.ParentRefs
			},
			backendRefs: func(o Object, buf []gatewayv1.BackendObjectReference) []gatewayv1.BackendObjectReference {
				for _, rule := range o.(*gatewayv1.TLSRoute).Spec.Rules {
					for _, br := range rule.BackendRefs {
						buf = append(buf, br.BackendObjectReference)
					}
				}
				return buf
			},
			compile: func(idx *Index, rk *routeKind, cr *compiledRoute, o Object) int {
				rules := o.(*gatewayv1.TLSRoute).Spec.Rules
				for i := range rules {
					idx.compileStreamRule(rk, cr, i, rules[i].Name, rules[i].BackendRefs)
				}
				return len(rules)
			},
			parents: func(o Object) *[]gatewayv1.RouteParentStatus { return &o.(*gatewayv1.TLSRoute).Status.Parents },
			status:  func(o *Output) *RouteStatuses { return &o.TLSRouteStatus },
		}, func(in *Input) *[]*gatewayv1.TLSRoute { return &in.TLSRoutes }, func(s *Store) *objects[gatewayv1.TLSRoute] { return &s.tls }),
		withObjects(&routeKind{
			name:      kindTCPRoute,
			protocols: []ir.Protocol{ir.ProtocolTCP},
			spec: func(o Object) ([]gatewayv1.Hostname, []gatewayv1.ParentReference) {
				return nil, o.(*gatewayv1.TCPRoute).Spec.ParentRefs
			},
			backendRefs: func(o Object, buf []gatewayv1.BackendObjectReference) []gatewayv1.BackendObjectReference {
				for _, rule := range o.(*gatewayv1.TCPRoute).Spec.Rules {
					for _, br := range rule.BackendRefs {
						buf = append(buf, br.BackendObjectReference)
					}
				}
				return buf
			},
			compile: func(idx *Index, rk *routeKind, cr *compiledRoute, o Object) int {
				rules := o.(*gatewayv1.TCPRoute).Spec.Rules
				for i := range rules {
					idx.compileStreamRule(rk, cr, i, rules[i].Name, rules[i].BackendRefs)
				}
				return len(rules)
			},
			parents: func(o Object) *[]gatewayv1.RouteParentStatus { return &o.(*gatewayv1.TCPRoute).Status.Parents },
			status:  func(o *Output) *RouteStatuses { return &o.TCPRouteStatus },
		}, func(in *Input) *[]*gatewayv1.TCPRoute { return &in.TCPRoutes }, func(s *Store) *objects[gatewayv1.TCPRoute] { return &s.tcp }),
	}
	for _, rk := range routeKinds {
		for _, p := range rk.protocols {
			kindsByProtocol[p] = append(kindsByProtocol[p], rk.name)
		}
	}
}

// routeKindNamed is the route kind called name, or nil.
func routeKindNamed(name string) *routeKind {
	for _, rk := range routeKinds {
		if rk.name == name {
			return rk
		}
	}
	return nil
}

// routeKindOf is the route kind of obj, or nil when obj is no route.
func routeKindOf(obj Object) *routeKind {
	for _, rk := range routeKinds {
		if rk.is(obj) {
			return rk
		}
	}
	return nil
}

// withObjects fills in the plumbing every kind has the same way, from where
// its objects are: the Input's list and the Store's collection.
func withObjects[T any, PT interface {
	*T
	Object
}](rk *routeKind, list func(*Input) *[]*T, objs func(*Store) *objects[T]) *routeKind {
	rk.inputs = func(in *Input, f func(Object)) {
		for _, r := range *list(in) {
			if r != nil {
				f(PT(r))
			}
		}
	}
	rk.count = func(in *Input) int { return len(*list(in)) }
	rk.at = func(in *Input, i int) Object {
		if r := (*list(in))[i]; r != nil {
			return PT(r)
		}
		return nil
	}
	rk.stored = func(s *Store) routeObjects { return typedObjects[T, PT]{objs(s)} }
	rk.snapshot = func(s *Store, in *Input) { *list(in) = objs(s).snapshot() }
	rk.load = func(s *Store, in *Input) { loadKind[T, PT](s, objs(s), *list(in)) }
	rk.is = func(o Object) bool {
		_, ok := o.(PT)
		return ok
	}
	rk.null = func(o Object) bool {
		p, ok := o.(PT)
		return ok && p == nil
	}
	rk.new = func() Object { return PT(new(T)) }
	return rk
}

// hasFilter says whether rules of the kind have filters of type t.
func (rk *routeKind) hasFilter(t gatewayv1.HTTPRouteFilterType) bool {
	if rk.filters == nil {
		return true
	}
	for _, f := range rk.filters {
		if f == t {
			return true
		}
	}
	return false
}

// mirrors appends to buf the backend of every RequestMirror filter of fs.
func mirrors(fs []gatewayv1.HTTPRouteFilter, buf []gatewayv1.BackendObjectReference) []gatewayv1.BackendObjectReference {
	for i := range fs {
		if m := fs[i].RequestMirror; m != nil {
			buf = append(buf, m.BackendRef)
		}
	}
	return buf
}

// routeObjects is a Store collection of one route kind, typed away.
type routeObjects interface {
	get(types.NamespacedName) Object
	// put stores obj and returns the version it replaces (nil: none).
	put(types.NamespacedName, Object) Object
	// remove reports whether there was one to remove.
	remove(types.NamespacedName) bool
}

type typedObjects[T any, PT interface {
	*T
	Object
}] struct{ o *objects[T] }

func (t typedObjects[T, PT]) get(k types.NamespacedName) Object {
	if r := t.o.get(k); r != nil {
		return PT(r)
	}
	return nil
}

func (t typedObjects[T, PT]) put(k types.NamespacedName, obj Object) Object {
	if old := t.o.put(k, (*T)(obj.(PT))); old != nil {
		return PT(old)
	}
	return nil
}

func (t typedObjects[T, PT]) remove(k types.NamespacedName) bool {
	return t.o.remove(k, objKey[T, PT]) != nil
}

// compileRoute compiles one route of any kind against the Services and
// ReferenceGrants of idx. It is a pure function of the route and those
// objects; nil when obj is no route.
func compileRoute(idx *Index, obj Object) *compiledRoute {
	rk := routeKindOf(obj)
	if rk == nil {
		return nil
	}
	return compileRouteOf(idx, rk, obj)
}

// compileRouteOf is compileRoute for a route of kind rk.
func compileRouteOf(idx *Index, rk *routeKind, obj Object) *compiledRoute {
	hostnames, refs := rk.spec(obj)
	cr := &compiledRoute{
		key:        RouteKey{Kind: rk.name, NN: nn(obj.GetNamespace(), obj.GetName())},
		gen:        obj.GetGeneration(),
		created:    obj.GetCreationTimestamp(),
		uid:        obj.GetUID(),
		hostnames:  lowerHostnames(hostnames),
		refs:       refs,
		controller: controllerUID(obj),
	}
	if hr, ok := obj.(*gatewayv1.HTTPRoute); ok {
		cr.acmeSolver = acmeSolverShape(hr)
	}
	cr.finish(rk.compile(idx, rk, cr, obj))
	return cr
}

// RouteKinds are the names of the route kinds the translator serves, in the
// order listeners report them.
func RouteKinds() []string {
	out := make([]string, len(routeKinds))
	for i, rk := range routeKinds {
		out[i] = rk.name
	}
	return out
}

// NewRoute returns an empty route of kind, nil when the translator serves
// no such kind.
func NewRoute(kind string) Object {
	if rk := routeKindNamed(kind); rk != nil {
		return rk.new()
	}
	return nil
}

// RouteParents returns the kind of route obj and its status.parents, ok
// false when obj is no route of a kind the translator serves (or nil).
func RouteParents(obj Object) (kind string, parents *[]gatewayv1.RouteParentStatus, ok bool) {
	rk := routeKindOf(obj)
	if rk == nil || rk.null(obj) {
		return "", nil, false
	}
	return rk.name, rk.parents(obj), true
}

// EachRoute hands f every route of in (nil entries skipped), kind by kind.
func (in *Input) EachRoute(f func(kind string, obj Object)) {
	for _, rk := range routeKinds {
		rk.inputs(in, func(o Object) { f(rk.name, o) })
	}
}

// RouteAt is route i of in, of any kind (0 <= i < NumRoutes, kind by
// kind); obj is nil for a nil entry. Walking an Input this way takes no
// callback, so a caller's state does not escape to the heap.
func (in *Input) RouteAt(i int) (kind string, obj Object) {
	for _, rk := range routeKinds {
		if n := rk.count(in); i >= n {
			i -= n
			continue
		}
		return rk.name, rk.at(in, i)
	}
	return "", nil
}

// NumRoutes is the number of routes in, of every kind (nil entries
// included).
func (in *Input) NumRoutes() int {
	n := 0
	for _, rk := range routeKinds {
		n += rk.count(in)
	}
	return n
}
