/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

const (
	kindGateway   = "Gateway"
	kindHTTPRoute = "HTTPRoute"
	kindGRPCRoute = "GRPCRoute"
	kindTLSRoute  = "TLSRoute"
	kindTCPRoute  = "TCPRoute"
	kindService   = "Service"
	kindSecret    = "Secret"
	groupGateway  = gatewayv1.GroupName
)

// Index is the snapshot arranged for lookups. Build it once per snapshot
// with NewIndex; TranslateGateway only reads it (except for what it
// resolves once, on first use).
type Index struct {
	controllerName string
	classNames     []string
	classes        map[string]*classInfo
	gateways       []*gatewayv1.Gateway // ours only, sorted ns/name
	namespaces     map[string]*corev1.Namespace
	services       map[types.NamespacedName]*corev1.Service
	secrets        map[types.NamespacedName]*corev1.Secret
	configMaps     map[types.NamespacedName]*corev1.ConfigMap
	grants         map[string][]*gatewayv1beta1.ReferenceGrant // by namespace
	params         map[types.NamespacedName]*shardgatev1alpha1.GatewayParameters
	runtime        map[types.NamespacedName]GatewayRuntime
	shardRefusals  map[types.NamespacedName]string
	// tenantNS: Input.TenantNamespaces.
	tenantNS     map[string]string
	ownership    *Ownership
	tenantLimits TenantLimits
	// BackendTLSPolicies (their CA ConfigMaps are in configMaps).
	policies []*gatewayv1.BackendTLSPolicy
	// Resolved once per Index, on first use.
	btls        *backendTLS
	clientCerts map[types.NamespacedName]clientCert
	// policyCache, over a Store, keeps each policy's resolution across
	// translations; the Translator drops an entry when the policy or a
	// ConfigMap it names changes.
	policyCache map[types.NamespacedName]*resolvedPolicy
	// certs keeps the certificate checks of automatic HTTPS Secrets
	// (certFor); over a Store, the Store's, across translations.
	certs map[types.NamespacedName]*certEntry
	// held are the names generated routes hold, by shard and namespace,
	// made when first asked (heldIn).
	held map[heldKey]bool

	// Routes by the Gateway their parentRefs name (NewIndex only; an
	// Index over a Store finds them in the Store), kind by kind in
	// routeKinds order.
	routesByGW map[types.NamespacedName][]Object
	// Routes by the ListenerSet their parentRefs name (NewIndex only).
	routesByLS map[types.NamespacedName][]Object

	// ListenerSets by the Gateway their parentRef names, in precedence
	// order: lsByGW (NewIndex), or lsOf (over a Store).
	lsByGW map[types.NamespacedName][]*gatewayv1.ListenerSet
	lsOf   func(types.NamespacedName) []*gatewayv1.ListenerSet
}

type classInfo struct {
	class    *gatewayv1.GatewayClass
	accepted bool
	message  string
	status   gatewayv1.GatewayClassStatus
}

// NewIndex arranges the snapshot for TranslateGateway.
func NewIndex(in *Input) *Index {
	idx := &Index{
		controllerName: in.ControllerName,
		classes:        map[string]*classInfo{},
		namespaces:     make(map[string]*corev1.Namespace, len(in.Namespaces)),
		services:       make(map[types.NamespacedName]*corev1.Service, len(in.Services)),
		secrets:        map[types.NamespacedName]*corev1.Secret{},
		configMaps:     map[types.NamespacedName]*corev1.ConfigMap{},
		grants:         map[string][]*gatewayv1beta1.ReferenceGrant{},
		params:         map[types.NamespacedName]*shardgatev1alpha1.GatewayParameters{},
		runtime:        in.Runtime,
		shardRefusals:  in.ShardRefusals,
		tenantNS:       in.TenantNamespaces,
		ownership:      in.Ownership,
		tenantLimits:   in.TenantLimits,
		policies:       in.BackendTLSPolicies,
	}
	for _, ns := range in.Namespaces {
		if ns != nil {
			idx.namespaces[ns.Name] = ns
		}
	}
	for _, s := range in.Services {
		if s != nil {
			idx.services[nn(s.Namespace, s.Name)] = s
		}
	}
	for _, s := range in.Secrets {
		if s != nil {
			idx.secrets[nn(s.Namespace, s.Name)] = s
		}
	}
	for _, c := range in.ConfigMaps {
		if c != nil {
			idx.configMaps[nn(c.Namespace, c.Name)] = c
		}
	}
	for _, g := range in.ReferenceGrants {
		if g != nil {
			idx.grants[g.Namespace] = append(idx.grants[g.Namespace], g)
		}
	}
	for _, p := range in.GatewayParameters {
		if p != nil {
			idx.params[nn(p.Namespace, p.Name)] = p
		}
	}

	idx.addClassesAndGateways(in.GatewayClasses, in.Gateways)
	idx.indexRoutes(in)
	idx.indexListenerSets(in.ListenerSets)
	return idx
}

// addClassesAndGateways keeps our classes and the Gateways of our classes.
func (idx *Index) addClassesAndGateways(classes []*gatewayv1.GatewayClass, gateways []*gatewayv1.Gateway) {
	for _, c := range classes {
		if c == nil || string(c.Spec.ControllerName) != idx.controllerName {
			continue
		}
		if _, dup := idx.classes[c.Name]; dup {
			continue
		}
		idx.classes[c.Name] = idx.classStatus(c)
		idx.classNames = append(idx.classNames, c.Name)
	}
	sort.Strings(idx.classNames)

	seen := map[types.NamespacedName]bool{}
	for _, g := range gateways {
		if g == nil {
			continue
		}
		if _, ok := idx.classes[string(g.Spec.GatewayClassName)]; !ok {
			continue
		}
		k := nn(g.Namespace, g.Name)
		if seen[k] {
			continue
		}
		seen[k] = true
		idx.gateways = append(idx.gateways, g)
	}
	sort.Slice(idx.gateways, func(i, j int) bool {
		return nsNameLess(idx.gateways[i].Namespace, idx.gateways[i].Name, idx.gateways[j].Namespace, idx.gateways[j].Name)
	})
}

// storeIndex arranges a Store's objects for lookups: the maps are the
// Store's own (read under its lock), the classes and Gateways few. It costs
// O(classes + Gateways).
func storeIndex(s *Store, f Facts) *Index {
	idx := &Index{
		controllerName: s.controllerName,
		classes:        map[string]*classInfo{},
		namespaces:     s.namespaces,
		services:       s.services,
		secrets:        s.secrets,
		configMaps:     s.configMaps,
		grants:         s.grants,
		params:         s.params,
		runtime:        f.Runtime,
		shardRefusals:  f.ShardRefusals,
		tenantNS:       f.TenantNamespaces,
		ownership:      f.Ownership,
		tenantLimits:   f.TenantLimits,
		policies:       s.policyObjs.list,
		lsOf:           s.listenerSetsOf,
		certs:          s.certs,
	}
	idx.addClassesAndGateways(s.classes.list, s.gateways.list)
	return idx
}

// indexRoutes arranges the routes by the Gateways they name.
func (idx *Index) indexRoutes(in *Input) {
	// Routes by parent Gateway; a route naming the same Gateway twice is
	// indexed once.
	idx.routesByGW = map[types.NamespacedName][]Object{}
	idx.routesByLS = map[types.NamespacedName][]Object{}
	for _, rk := range routeKinds {
		rk.inputs(in, func(r Object) {
			_, refs := rk.spec(r)
			ns := r.GetNamespace()
			for _, g := range parentGateways(ns, refs) {
				idx.routesByGW[g] = append(idx.routesByGW[g], r)
			}
			for _, l := range parentListenerSets(ns, refs) {
				idx.routesByLS[l] = append(idx.routesByLS[l], r)
			}
		})
	}
}

// indexListenerSets arranges the ListenerSets by the Gateway they name, in
// precedence order; of two with one name, the first wins.
func (idx *Index) indexListenerSets(list []*gatewayv1.ListenerSet) {
	idx.lsByGW = map[types.NamespacedName][]*gatewayv1.ListenerSet{}
	seen := map[types.NamespacedName]bool{}
	for _, ls := range list {
		if ls == nil || seen[nn(ls.Namespace, ls.Name)] {
			continue
		}
		seen[nn(ls.Namespace, ls.Name)] = true
		if g, ok := listenerSetParent(ls); ok {
			idx.lsByGW[g] = append(idx.lsByGW[g], ls)
		}
	}
	for _, l := range idx.lsByGW {
		sortListenerSets(l)
	}
}

// parentGateways lists the distinct Gateways a route's parentRefs name.
func parentGateways(routeNS string, refs []gatewayv1.ParentReference) []types.NamespacedName {
	var out []types.NamespacedName
	for _, ref := range refs {
		g, ok := refGateway(routeNS, ref)
		if !ok {
			continue
		}
		dup := false
		for _, o := range out {
			if o == g {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, g)
		}
	}
	return out
}

// refGateway says which Gateway a parentRef names, if it names one.
func refGateway(routeNS string, ref gatewayv1.ParentReference) (types.NamespacedName, bool) {
	if ref.Group != nil && string(*ref.Group) != groupGateway {
		return types.NamespacedName{}, false
	}
	if ref.Kind != nil && string(*ref.Kind) != kindGateway {
		return types.NamespacedName{}, false
	}
	ns := routeNS
	if ref.Namespace != nil && *ref.Namespace != "" {
		ns = string(*ref.Namespace)
	}
	return nn(ns, string(ref.Name)), true
}

func nn(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

func nsNameLess(ans, an, bns, bn string) bool {
	if ans != bns {
		return ans < bns
	}
	return an < bn
}
