package sharding

import (
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	gwparams "github.com/shardgate/shardgate/internal/params"
	"github.com/shardgate/shardgate/internal/tenancy"
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
	// Routes says which routes the shard serves (GatewayParameters
	// shard.routes); "" is the default, Generated.
	Routes shardgatev1alpha1.ShardRoutes
	// TLS is the shard's automatic HTTPS (GatewayParameters shard.tls);
	// nil: off. Shared with the parameters: read-only.
	TLS *shardgatev1alpha1.ShardTLS
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
	// ReasonDuplicateShardName: another shard Gateway, in another provider
	// namespace, has the same name. Shard names key LeaseHost
	// status.shards[], so only the oldest of them (creationTimestamp, then
	// UID) is a shard: a newer Gateway never displaces a serving shard, and
	// since tenant namespaces hold no shards, no tenant can cause this.
	ReasonDuplicateShardName = "DuplicateShardName"
	// ReasonShardInTenantNamespace: the Gateway's namespace carries an owner
	// marking, so it belongs to a tenant and may not hold a shard.
	ReasonShardInTenantNamespace = shardgatev1alpha1.ReasonShardInTenantNamespace
	// ReasonShardNamespaceNotAllowed: the config's shardNamespaces does not
	// list the Gateway's namespace.
	ReasonShardNamespaceNotAllowed = shardgatev1alpha1.ReasonShardNamespaceNotAllowed
)

// Placement says which namespaces may hold shards. The zero Placement
// allows every namespace (for tests of the rest of Discover).
type Placement struct {
	// Policy reads a namespace's owner marking: a marked namespace belongs
	// to a tenant and never holds a shard.
	Policy tenancy.Policy
	// Namespaces are the cluster's namespaces by name. When it is not nil,
	// a Gateway whose namespace is missing from it is not a shard (it
	// cannot be checked).
	Namespaces map[string]*corev1.Namespace
	// Allowed, when not empty, lists the only namespaces that may hold
	// shards (the config's shardNamespaces).
	Allowed []string
}

// refusal says why a Gateway in namespace ns may not be a shard ("" when it
// may), and the reason.
func (p Placement) refusal(ns string) (reason, msg string) {
	if p.Namespaces != nil {
		n, ok := p.Namespaces[ns]
		if !ok {
			return ReasonShardInTenantNamespace, fmt.Sprintf("namespace %s is not known yet, so it cannot be shown to be a provider namespace", ns)
		}
		if _, key, marked := p.Policy.NamespaceOwner(n); marked {
			return ReasonShardInTenantNamespace, fmt.Sprintf("namespace %s carries an owner marking (%s), so it belongs to a tenant and may not hold a shard", ns, key)
		}
	}
	if len(p.Allowed) > 0 && !slices.Contains(p.Allowed, ns) {
		return ReasonShardNamespaceNotAllowed, fmt.Sprintf("namespace %s is not in the controller's shardNamespaces", ns)
	}
	return "", ""
}

// Discover returns the shards among gateways, sorted by Gateway
// namespace/name, and the problems found on the way.
//
// A shard's identity is its Gateway's namespace/name. A Gateway whose
// namespace placement refuses (a tenant's namespace, or one missing from
// shardNamespaces) is not a shard. Among the remaining shard Gateways, two
// with one name cannot both key LeaseHost status.shards[]: the oldest
// (creationTimestamp, then UID) is the shard, never the first by name.
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
func Discover(controllerName string, classes []*gatewayv1.GatewayClass, gateways []*gatewayv1.Gateway, params []*shardgatev1alpha1.GatewayParameters, placement Placement) ([]Shard, []Problem) {
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
	type candidate struct {
		gw    *gatewayv1.Gateway
		shard Shard
	}
	var candidates []candidate
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
		if reason, msg := placement.refusal(gw.Namespace); reason != "" {
			problem(reason, "%s; this Gateway is not a shard", msg)
			continue
		}
		domain := normalise(spec.Domain)
		canonical := normalise(spec.CanonicalHostname)
		if canonical == "" {
			canonical = DefaultCanonicalHostname(gw.Name, domain)
			if err := ValidateHost(canonical); err != nil {
				problem(ReasonInvalidCanonicalHostname, "the default canonical hostname is not usable (%v); set shard.canonicalHostname in GatewayParameters %s/%s", err, p.Namespace, p.Name)
				canonical = ""
			}
		}
		candidates = append(candidates, candidate{gw: gw, shard: Shard{
			Name:              gw.Name,
			Gateway:           key,
			Domain:            domain,
			CanonicalHostname: canonical,
			LeaseSelector:     leaseSel,
			NamespaceSelector: nsSel,
			Routes:            spec.Routes,
			TLS:               spec.TLS,
		}})
	}
	// One shard per name: the oldest Gateway keeps it.
	oldest := map[string]*gatewayv1.Gateway{}
	for _, c := range candidates {
		if o, ok := oldest[c.gw.Name]; !ok || older(c.gw, o) {
			oldest[c.gw.Name] = c.gw
		}
	}
	for _, c := range candidates {
		if first := oldest[c.gw.Name]; first != c.gw {
			problems = append(problems, Problem{Gateway: c.shard.Gateway, Reason: ReasonDuplicateShardName,
				Message: fmt.Sprintf("Gateway %s/%s, which is older, is already a shard named %q; shard names key LeaseHost status, so this Gateway is not a shard until one of them is renamed", first.Namespace, first.Name, c.gw.Name)})
			continue
		}
		shards = append(shards, c.shard)
	}
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].Gateway.String() < problems[j].Gateway.String() })
	return shards, problems
}

// older orders Gateways by creationTimestamp, then UID, then namespace/name
// (the last only for objects without either, as in tests).
func older(a, b *gatewayv1.Gateway) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.UID != b.UID {
		return a.UID < b.UID
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// parametersFor resolves the GatewayParameters that apply to gw: nil, nil
// when neither the Gateway nor its class references any.
func parametersFor(gw *gatewayv1.Gateway, class *gatewayv1.GatewayClass, byKey map[types.NamespacedName]*shardgatev1alpha1.GatewayParameters) (*shardgatev1alpha1.GatewayParameters, error) {
	return gwparams.Resolve(gw, class, func(k types.NamespacedName) *shardgatev1alpha1.GatewayParameters { return byKey[k] })
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
