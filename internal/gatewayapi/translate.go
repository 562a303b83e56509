/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/ir"
)

// Input is a snapshot of every object the translator reads. Nil entries in
// the slices are ignored.
type Input struct {
	ControllerName  string // e.g. "shardgate.io/gateway-controller"
	GatewayClasses  []*gatewayv1.GatewayClass
	Gateways        []*gatewayv1.Gateway
	HTTPRoutes      []*gatewayv1.HTTPRoute
	GRPCRoutes      []*gatewayv1.GRPCRoute
	TLSRoutes       []*gatewayv1.TLSRoute
	TCPRoutes       []*gatewayv1.TCPRoute
	ListenerSets    []*gatewayv1.ListenerSet
	ReferenceGrants []*gatewayv1beta1.ReferenceGrant
	Services        []*corev1.Service
	Secrets         []*corev1.Secret
	// ConfigMaps are those that may hold CA certificates (key ca.crt, the
	// only one read): for Gateway frontend client certificate validation
	// and for BackendTLSPolicy caCertificateRefs.
	ConfigMaps        []*corev1.ConfigMap
	Namespaces        []*corev1.Namespace
	GatewayParameters []*shardgatev1alpha1.GatewayParameters
	// BackendTLSPolicies say which backends the Gateways speak TLS to.
	BackendTLSPolicies []*gatewayv1.BackendTLSPolicy
	// Runtime facts about each Gateway that come from outside the translator
	// (the Envoy Service's addresses, the xDS publish result). Missing entry =
	// nothing known yet.
	Runtime map[types.NamespacedName]GatewayRuntime
	// ShardRefusals are the Gateways whose parameters would make them shards
	// but which may not be shards where they live (a tenant's namespace, or
	// one outside the config's shardNamespaces), with the reason. They are
	// Accepted=False InvalidParameters and serve nothing. The controller
	// computes them (sharding.Discover); nil refuses nothing.
	ShardRefusals map[types.NamespacedName]string
	// TenantNamespaces are the namespaces, of those that hold a Gateway or
	// a GatewayClass's parameters, that belong to a tenant (an owner
	// marking, or not known yet), with why. A Gateway in one is
	// Accepted=False GatewayInTenantNamespace and serves nothing; a class
	// whose parametersRef points into one is Accepted=False
	// InvalidParameters. The controller computes them
	// (tenancy.Policy.TenantNamespace); nil refuses nothing.
	TenantNamespaces map[string]string
	// Ownership says which routes shards may serve (see Ownership); nil
	// means there are no shards to protect.
	Ownership *Ownership
	// TenantLimits bound each tenant's routes on each shard (see
	// TenantLimits); the zero value limits nothing.
	TenantLimits TenantLimits
	// RouteByKey, when set, returns a route of the snapshot (or a newer
	// version of it) by key, nil if there is none, without walking the
	// lists; the Store's snapshots set it.
	RouteByKey func(RouteKey) Object `json:"-"`
}

// GatewayRuntime is what the rest of the controller knows about a Gateway's
// data plane.
type GatewayRuntime struct {
	Addresses      []gatewayv1.GatewayStatusAddress // from the Envoy Service status.loadBalancer
	AddressReason  string                           // "" or a Programmed=False reason such as AddressNotAssigned / AddressNotUsable
	AddressMessage string
	PublishError   string // non-empty: last xDS publish was refused (validation/NACK): Programmed=False reason Invalid with this message
}

// Output is the translation: IR to serve and status to write.
type Output struct {
	Gateways        []*ir.Gateway                                    // one per Gateway of an Accepted class we own, sorted ns/name
	GatewayClasses  map[string]gatewayv1.GatewayClassStatus          // only classes with our controllerName
	GatewayStatus   map[types.NamespacedName]gatewayv1.GatewayStatus // only Gateways of our classes
	HTTPRouteStatus RouteStatuses                                    // ONLY our controller's parent entries
	GRPCRouteStatus RouteStatuses
	TLSRouteStatus  RouteStatuses
	TCPRouteStatus  RouteStatuses
	// BackendTLSPolicyStatus holds ONLY our controller's ancestor entries,
	// for the policies that apply to a cluster of one of our Gateways.
	BackendTLSPolicyStatus PolicyStatuses
	// ListenerSetStatus holds the ListenerSets whose parentRef names a
	// Gateway of our classes.
	ListenerSetStatus map[types.NamespacedName]gatewayv1.ListenerSetStatus

	// Seq numbers the Outputs of one Translator, from 1; Translate leaves
	// it 0. Unless StatusAllChanged, StatusChanged lists every route whose
	// desired status may differ from that of Output Seq-1 (every other
	// route's is the same).
	Seq              uint64
	StatusAllChanged bool
	StatusChanged    []RouteKey
}

// Facts are the inputs of a translation that do not come from Kubernetes
// objects (see Input).
type Facts struct {
	Runtime          map[types.NamespacedName]GatewayRuntime
	ShardRefusals    map[types.NamespacedName]string
	TenantNamespaces map[string]string
	Ownership        *Ownership
	TenantLimits     TenantLimits
}

// FactsOf returns the facts of a snapshot.
func FactsOf(in *Input) Facts {
	if in == nil {
		return Facts{}
	}
	return Facts{Runtime: in.Runtime, ShardRefusals: in.ShardRefusals, TenantNamespaces: in.TenantNamespaces, Ownership: in.Ownership, TenantLimits: in.TenantLimits}
}

// Translate computes the IR and the desired status for everything in the
// snapshot. It never panics and is deterministic.
func Translate(in *Input) *Output {
	if in == nil {
		return newOutput()
	}
	return translateIndex(NewIndex(in))
}

func newOutput() *Output {
	return &Output{
		StatusAllChanged: true,
		GatewayClasses:   map[string]gatewayv1.GatewayClassStatus{},
		GatewayStatus:    map[types.NamespacedName]gatewayv1.GatewayStatus{},

		ListenerSetStatus: map[types.NamespacedName]gatewayv1.ListenerSetStatus{},
	}
}

func translateIndex(idx *Index) *Output {
	out := newOutput()
	for _, name := range idx.classNames {
		out.GatewayClasses[name] = idx.classes[name].status
	}

	routes := 0
	for _, rs := range idx.routesByGW {
		routes += len(rs)
	}
	parents := make(map[RouteKey][]ParentEntry, routes)
	done := make(map[RouteKey]*compiledRoute, routes)
	for _, gw := range idx.gateways {
		res, _ := assembleGateway(idx, gw, idx.compileRoutesOf(nn(gw.Namespace, gw.Name), done))
		if res == nil {
			continue
		}
		out.GatewayStatus[types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}] = res.Status
		for k, st := range res.ListenerSets {
			out.ListenerSetStatus[k] = st
		}
		if res.IR != nil {
			out.Gateways = append(out.Gateways, res.IR)
		}
		for k, entries := range res.Routes {
			if have, ok := parents[k]; ok {
				parents[k] = append(have, entries...)
			} else {
				parents[k] = entries // res is not kept: no copy
			}
		}
	}
	out.setRouteStatuses(parents)
	if len(idx.policies) > 0 {
		out.BackendTLSPolicyStatus = idx.policyStatuses(irServices(out.Gateways))
	}
	return out
}

// setRouteStatuses sets the route statuses of o to the merged entries of
// parents.
func (o *Output) setRouteStatuses(parents map[RouteKey][]ParentEntry) {
	byKind := map[string]map[types.NamespacedName][]gatewayv1.RouteParentStatus{}
	for k, entries := range parents {
		m := byKind[k.Kind]
		if m == nil {
			m = make(map[types.NamespacedName][]gatewayv1.RouteParentStatus, len(parents))
			byKind[k.Kind] = m
		}
		m[k.NN] = MergeParents(entries)
	}
	for _, rk := range routeKinds {
		*rk.status(o) = RouteStatusesOf(byKind[rk.name])
	}
}

// RouteStatus returns the route statuses of a route kind (none for a kind
// that is not one).
func (o *Output) RouteStatus(kind string) RouteStatuses {
	if rk := routeKindNamed(kind); rk != nil {
		return *rk.status(o)
	}
	return RouteStatuses{}
}

// GatewayResult is the translation of one Gateway.
type GatewayResult struct {
	// IR is nil when the Gateway must not be served (not Accepted).
	IR     *ir.Gateway
	Status gatewayv1.GatewayStatus
	// ListenerSets are the statuses of the ListenerSets whose parentRef
	// names the Gateway.
	ListenerSets map[types.NamespacedName]gatewayv1.ListenerSetStatus
	// Routes are the status entries this Gateway contributes, per route.
	Routes map[RouteKey][]ParentEntry
}

// Object is a Kubernetes object, as the Store and the translator take
// them. It has the methods of controller-runtime's client.Object, so an
// informer's objects are Objects, without this package importing
// controller-runtime.
type Object interface {
	metav1.Object
	runtime.Object
}

// RouteKey names a route of one kind (HTTPRoute, GRPCRoute, TLSRoute,
// TCPRoute).
type RouteKey struct {
	Kind string
	NN   types.NamespacedName
}

// ParentEntry is one status.parents[] entry with the index of the parentRef
// it answers, so that entries from several Gateways merge in spec order.
type ParentEntry struct {
	RefIndex int
	Status   gatewayv1.RouteParentStatus
}

// MergeParents orders the entries several Gateways contributed for one route
// into its status.parents (our entries only), in parentRef order.
func MergeParents(entries []ParentEntry) []gatewayv1.RouteParentStatus {
	if len(entries) > 1 {
		slices.SortStableFunc(entries, func(a, b ParentEntry) int { return cmp.Compare(a.RefIndex, b.RefIndex) })
	}
	out := make([]gatewayv1.RouteParentStatus, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Status)
	}
	return out
}
