package sharding

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// Shard is a Gateway of our class whose GatewayParameters have a shard
// section.
type Shard struct {
	// Name is the Gateway's name. It keys LeaseHost status.shards[], so
	// Discover keeps it unique (see ReasonDuplicateShardName).
	Name string
	// Gateway is the shard's Gateway.
	Gateway types.NamespacedName
	// Domain is the shard's DNS domain (lowercase).
	Domain string
	// CanonicalHostname is the shard's router name, the CNAME target for
	// tenants: the parameters' canonicalHostname or router-<name>.<domain>.
	CanonicalHostname string
	// LeaseSelector selects LeaseHosts by their labels; nil selects all.
	LeaseSelector labels.Selector
	// NamespaceSelector selects LeaseHosts by their namespace's labels; nil
	// selects all.
	NamespaceSelector labels.Selector
}

// Problem is a Gateway of our class that Discover could not make a shard of,
// or whose shard is degraded. The controller reports it on the Gateway or
// its GatewayParameters; Discover never fails as a whole.
type Problem struct {
	Gateway types.NamespacedName
	// Reason is one of the Reason* constants of this package; it is
	// CamelCase, fit for a condition reason.
	Reason  string
	Message string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s: %s: %s", p.Gateway, p.Reason, p.Message)
}

// Problem reasons.
const (
	// ReasonInvalidParameters: the parametersRef (the Gateway's, or the
	// class default) is not a GatewayParameters or names one that does not
	// exist. The Gateway API spec asks for Accepted=False with this reason;
	// the Gateway is not a shard.
	ReasonInvalidParameters = string(gatewayv1.GatewayReasonInvalidParameters)
	// ReasonInvalidSelector: leaseSelector or namespaceSelector cannot be
	// parsed. The shard is skipped rather than treated as selecting
	// everything or nothing, so a typo never publishes or withdraws a
	// provider's whole tenant set.
	ReasonInvalidSelector = "InvalidSelector"
	// ReasonInvalidCanonicalHostname: the default canonical hostname
	// router-<gateway>.<domain> is not a valid host (a long Gateway name).
	// The shard still serves; its CanonicalHostname is empty.
	ReasonInvalidCanonicalHostname = "InvalidCanonicalHostname"
	// ReasonDuplicateShardName: another shard Gateway, in another namespace,
	// has the same name. Shard names key LeaseHost status.shards[], so only
	// the first by namespace/name is a shard.
	ReasonDuplicateShardName = "DuplicateShardName"
)

// Discover returns the shards among gateways, sorted by Gateway
// namespace/name, and the problems found on the way (same order).
//
// A Gateway is a shard when its GatewayClass has spec.controllerName ==
// controllerName and its GatewayParameters have a shard section. The
// parameters are the Gateway's spec.infrastructure.parametersRef (group
// shardgate.io, kind GatewayParameters, in the Gateway's namespace) when set;
// otherwise the class's spec.parametersRef, which carries a namespace. A
// Gateway's own reference replaces the class default entirely; it is not
// merged with it, and one that does not resolve gives a Problem, not a
// fallback to the class default. Gateways being deleted are not shards, so
// their entries leave LeaseHost status as soon as deletion starts.
//
// Nil entries in the slices are ignored. The result does not depend on the
// order of the input.
func Discover(controllerName string, classes []*gatewayv1.GatewayClass, gateways []*gatewayv1.Gateway, params []*shardgatev1alpha1.GatewayParameters) ([]Shard, []Problem) {
	ours := map[string]*gatewayv1.GatewayClass{}
	for _, c := range classes {
		if c != nil && string(c.Spec.ControllerName) == controllerName {
			ours[c.Name] = c
		}
	}
	byKey := map[types.NamespacedName]*shardgatev1alpha1.GatewayParameters{}
	for _, p := range params {
		if p != nil {
			byKey[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
		}
	}

	gws := make([]*gatewayv1.Gateway, 0, len(gateways))
	for _, gw := range gateways {
		if gw != nil {
			gws = append(gws, gw)
		}
	}
	sort.Slice(gws, func(i, j int) bool {
		if gws[i].Namespace != gws[j].Namespace {
			return gws[i].Namespace < gws[j].Namespace
		}
		return gws[i].Name < gws[j].Name
	})

	var shards []Shard
	var problems []Problem
	seen := map[string]types.NamespacedName{}
	for _, gw := range gws {
		class, ok := ours[string(gw.Spec.GatewayClassName)]
		if !ok || gw.DeletionTimestamp != nil {
			continue
		}
		key := types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
		problem := func(reason, format string, args ...any) {
			problems = append(problems, Problem{Gateway: key, Reason: reason, Message: fmt.Sprintf(format, args...)})
		}
		p, err := parametersFor(gw, class, byKey)
		if err != nil {
			problem(ReasonInvalidParameters, "%v", err)
			continue
		}
		if p == nil || p.Spec.Shard == nil {
			continue
		}
		spec := p.Spec.Shard
		leaseSel, err := selector(spec.LeaseSelector)
		if err != nil {
			problem(ReasonInvalidSelector, "GatewayParameters %s/%s: shard.leaseSelector: %v", p.Namespace, p.Name, err)
			continue
		}
		nsSel, err := selector(spec.NamespaceSelector)
		if err != nil {
			problem(ReasonInvalidSelector, "GatewayParameters %s/%s: shard.namespaceSelector: %v", p.Namespace, p.Name, err)
			continue
		}
		if first, dup := seen[gw.Name]; dup {
			problem(ReasonDuplicateShardName, "Gateway %s is already a shard named %q; shard names key LeaseHost status, so this Gateway is not a shard until one of them is renamed", first, gw.Name)
			continue
		}
		seen[gw.Name] = key
		domain := normalise(spec.Domain)
		canonical := normalise(spec.CanonicalHostname)
		if canonical == "" {
			canonical = DefaultCanonicalHostname(gw.Name, domain)
			if err := ValidateHost(canonical); err != nil {
				problem(ReasonInvalidCanonicalHostname, "the default canonical hostname is not usable (%v); set shard.canonicalHostname in GatewayParameters %s/%s", err, p.Namespace, p.Name)
				canonical = ""
			}
		}
		shards = append(shards, Shard{
			Name:              gw.Name,
			Gateway:           key,
			Domain:            domain,
			CanonicalHostname: canonical,
			LeaseSelector:     leaseSel,
			NamespaceSelector: nsSel,
		})
	}
	return shards, problems
}

// parametersFor resolves the GatewayParameters that apply to gw: nil, nil
// when neither the Gateway nor its class references any.
func parametersFor(gw *gatewayv1.Gateway, class *gatewayv1.GatewayClass, params map[types.NamespacedName]*shardgatev1alpha1.GatewayParameters) (*shardgatev1alpha1.GatewayParameters, error) {
	if gw.Spec.Infrastructure != nil && gw.Spec.Infrastructure.ParametersRef != nil {
		ref := gw.Spec.Infrastructure.ParametersRef
		if !isGatewayParameters(ref.Group, ref.Kind) {
			return nil, fmt.Errorf("spec.infrastructure.parametersRef is %s/%s; only %s/GatewayParameters is supported", ref.Group, ref.Kind, shardgatev1alpha1.GroupVersion.Group)
		}
		key := types.NamespacedName{Namespace: gw.Namespace, Name: ref.Name}
		p, ok := params[key]
		if !ok {
			return nil, fmt.Errorf("spec.infrastructure.parametersRef: GatewayParameters %s not found", key)
		}
		return p, nil
	}
	ref := class.Spec.ParametersRef
	if ref == nil {
		return nil, nil
	}
	if !isGatewayParameters(ref.Group, ref.Kind) {
		return nil, fmt.Errorf("GatewayClass %s spec.parametersRef is %s/%s; only %s/GatewayParameters is supported", class.Name, ref.Group, ref.Kind, shardgatev1alpha1.GroupVersion.Group)
	}
	if ref.Namespace == nil || *ref.Namespace == "" {
		return nil, fmt.Errorf("GatewayClass %s spec.parametersRef has no namespace; GatewayParameters is namespaced", class.Name)
	}
	key := types.NamespacedName{Namespace: string(*ref.Namespace), Name: ref.Name}
	p, ok := params[key]
	if !ok {
		return nil, fmt.Errorf("GatewayClass %s spec.parametersRef: GatewayParameters %s not found", class.Name, key)
	}
	return p, nil
}

func isGatewayParameters(group gatewayv1.Group, kind gatewayv1.Kind) bool {
	return string(group) == shardgatev1alpha1.GroupVersion.Group && kind == "GatewayParameters"
}

// selector converts an API selector; nil (unset) selects everything, as the
// API documents.
func selector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}

// Selects reports whether shard s serves lh, a LeaseHost in a namespace with
// labels nsLabels: both of its selectors must match. A nil selector matches
// everything.
func Selects(s Shard, lh *shardgatev1alpha1.LeaseHost, nsLabels map[string]string) bool {
	if lh == nil {
		return false
	}
	if s.LeaseSelector != nil && !s.LeaseSelector.Matches(labels.Set(lh.Labels)) {
		return false
	}
	if s.NamespaceSelector != nil && !s.NamespaceSelector.Matches(labels.Set(nsLabels)) {
		return false
	}
	return true
}

// Select returns the shards that serve lh, in the order of shards.
func Select(shards []Shard, lh *shardgatev1alpha1.LeaseHost, nsLabels map[string]string) []Shard {
	var out []Shard
	for _, s := range shards {
		if Selects(s, lh, nsLabels) {
			out = append(out, s)
		}
	}
	return out
}
