package leasehosts

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/autotls"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/sharding"
)

// Observed are the facts from the cluster that the status reports.
type Observed struct {
	// Route is the stored HTTPRoute (for its status.parents), or nil.
	Route *gatewayv1.HTTPRoute
	// RouteConflict: a route with the generated name exists that this
	// LeaseHost does not control.
	RouteConflict bool
	// ServiceExists: spec.service names an existing Service.
	ServiceExists bool
	// ControllerName is ours: only our status.parents entries are read.
	ControllerName string
	// Certificate is the certificate controller's CertificateReady of a
	// name in the LeaseHost's namespace (false: not decided yet); nil
	// when automatic HTTPS does not run.
	Certificate func(namespace, host string) (autotls.State, bool)
	// ShardCertificate is the CertificateReady of a name under a shard's
	// domain, which the shard serves with its own certificate
	// (autotls.ShardCertificates: whether one of its HTTPS listeners
	// presents a certificate covering the name); nil reports
	// ShardCertificate from the domain alone.
	ShardCertificate func(shard sharding.Shard, host string) autotls.State
}

// StatusFor computes lh's status. It starts from the stored status so that
// a condition whose status did not change keeps its lastTransitionTime, and
// so that an unchanged LeaseHost yields an identical status (no write).
func StatusFor(lh *shardgatev1alpha1.LeaseHost, p Plan, decisions map[string]hostnames.Decision, obs Observed) shardgatev1alpha1.LeaseHostStatus {
	old := lh.Status.DeepCopy()
	st := shardgatev1alpha1.LeaseHostStatus{
		ObservedGeneration: lh.Generation,
		Conditions:         old.Conditions,
		ReservedHosts:      Reserved(p, decisions),
	}
	gen := lh.Generation
	routeWritten := len(st.ReservedHosts) > 0 && !obs.RouteConflict
	if routeWritten {
		st.Route = RouteName(lh)
	}

	reserved := reservedCondition(p, decisions, st.ReservedHosts, gen)
	meta.SetStatusCondition(&st.Conditions, reserved)

	oldShards := map[string]shardgatev1alpha1.ShardStatus{}
	for _, s := range old.Shards {
		oldShards[s.Name] = s
	}
	pendingAny, admitted := false, 0
	var refused []string
	for _, sh := range p.Shards {
		entry := shardgatev1alpha1.ShardStatus{
			Name:              sh.Shard.Name,
			Gateway:           sh.Shard.Gateway.String(),
			Host:              sh.Host,
			CanonicalHostname: sh.Shard.CanonicalHostname,
			Conditions:        oldShards[sh.Shard.Name].Conditions,
		}
		c := admittedCondition(lh, sh.Shard.Gateway.Namespace, sh.Shard.Gateway.Name, sh.Err, decisions[normalised(sh.Host)], obs, gen)
		switch {
		case c.Status == metav1.ConditionTrue:
			admitted++
		case c.Status == metav1.ConditionUnknown:
			pendingAny = true
		default:
			refused = append(refused, fmt.Sprintf("%s (%s)", sh.Shard.Name, c.Reason))
		}
		meta.SetStatusCondition(&entry.Conditions, c)
		setCertificateReady(&entry, lh, sh, decisions[normalised(sh.Host)], obs, gen)
		st.Shards = append(st.Shards, entry)
	}

	st.Admitted = fmt.Sprintf("%d/%d", admitted, len(p.Shards))

	ready := metav1.Condition{Type: shardgatev1alpha1.ConditionReady, ObservedGeneration: gen}
	switch {
	case reserved.Status != metav1.ConditionTrue:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, reserved.Reason, reserved.Message
	case obs.RouteConflict:
		ready.Status, ready.Reason = metav1.ConditionFalse, shardgatev1alpha1.ReasonRouteConflict
		ready.Message = fmt.Sprintf("an HTTPRoute named %q exists and is not controlled by this LeaseHost; it is left alone", RouteName(lh))
	case !obs.ServiceExists:
		ready.Status, ready.Reason = metav1.ConditionFalse, shardgatev1alpha1.ReasonBackendNotFound
		ready.Message = fmt.Sprintf("Service %s/%s not found; the name stays reserved", lh.Namespace, lh.Spec.Service.Name)
	case len(p.Shards) == 0:
		ready.Status, ready.Reason = metav1.ConditionFalse, shardgatev1alpha1.ReasonNoShards
		ready.Message = "no shard selects this LeaseHost; the route is attached to no Gateway"
	// Ready only when every selected shard admits: a shard that refuses
	// is never hidden behind another that admits.
	case admitted == len(p.Shards):
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, shardgatev1alpha1.ReasonAdmitted, "admitted by every shard that selects it"
	case admitted > 0 && len(refused) > 0:
		ready.Status, ready.Reason = metav1.ConditionFalse, shardgatev1alpha1.ReasonPartiallyAdmitted
		ready.Message = fmt.Sprintf("admitted by %d of %d shards; refused by %s; see status.shards", admitted, len(p.Shards), strings.Join(refused, ", "))
	case pendingAny:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, shardgatev1alpha1.ReasonPending, "waiting for the shards' Gateways to accept the route"
	default:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, shardgatev1alpha1.ReasonNotAdmitted, "no shard admitted the route; see status.shards"
	}
	meta.SetStatusCondition(&st.Conditions, ready)
	return st
}

func reservedCondition(p Plan, decisions map[string]hostnames.Decision, held []string, gen int64) metav1.Condition {
	c := metav1.Condition{Type: shardgatev1alpha1.ConditionReserved, ObservedGeneration: gen}
	var refused []string
	var first *hostnames.Decision
	for _, h := range p.Hosts {
		d, ok := decisions[h]
		if !ok || d.Reserved {
			continue
		}
		if first == nil {
			first = &d
		}
		refused = append(refused, fmt.Sprintf("%s (%s)", h, d.Reason))
	}
	switch {
	case len(p.Hosts) == 0 && len(p.Shards) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, shardgatev1alpha1.ReasonInvalidHost
		c.Message = "no shard composes a valid name from this subdomain; see status.shards"
	case len(p.Hosts) == 0:
		c.Status, c.Reason = metav1.ConditionFalse, shardgatev1alpha1.ReasonNoShards
		c.Message = "no shard selects this LeaseHost, so its subdomain composes no name"
	case len(held) == len(p.Hosts):
		c.Status, c.Reason = metav1.ConditionTrue, shardgatev1alpha1.ReasonReserved
		c.Message = "reserved " + strings.Join(held, ", ")
	case len(held) > 0:
		c.Status, c.Reason = metav1.ConditionTrue, shardgatev1alpha1.ReasonPartiallyReserved
		c.Message = fmt.Sprintf("reserved %s; refused %s", strings.Join(held, ", "), strings.Join(refused, ", "))
	case first != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, string(first.Reason), first.Message
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, shardgatev1alpha1.ReasonPending, "not yet evaluated"
	}
	return c
}

func admittedCondition(lh *shardgatev1alpha1.LeaseHost, gwNamespace, gwName string, hostErr error, d hostnames.Decision, obs Observed, gen int64) metav1.Condition {
	c := metav1.Condition{Type: shardgatev1alpha1.ConditionAdmitted, ObservedGeneration: gen, Status: metav1.ConditionFalse}
	switch {
	case hostErr != nil:
		c.Reason, c.Message = shardgatev1alpha1.ReasonInvalidHost, hostErr.Error()
		return c
	case d.Reason == "":
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, shardgatev1alpha1.ReasonPending, "not yet evaluated"
		return c
	case !d.Reserved:
		c.Reason, c.Message = string(d.Reason), d.Message
		return c
	case obs.RouteConflict:
		c.Reason, c.Message = shardgatev1alpha1.ReasonRouteConflict, "the generated route's name is taken by another HTTPRoute"
		return c
	}
	parent := parentStatus(obs, lh.Namespace, gwNamespace, gwName)
	if parent == nil {
		c.Status, c.Reason = metav1.ConditionUnknown, shardgatev1alpha1.ReasonPending
		c.Message = "waiting for the Gateway to report on the route"
		return c
	}
	for _, t := range []gatewayv1.RouteConditionType{gatewayv1.RouteConditionAccepted, gatewayv1.RouteConditionResolvedRefs} {
		pc := meta.FindStatusCondition(parent.Conditions, string(t))
		if pc == nil {
			c.Status, c.Reason = metav1.ConditionUnknown, shardgatev1alpha1.ReasonPending
			c.Message = fmt.Sprintf("the Gateway has not reported %s yet", t)
			return c
		}
		if pc.Status != metav1.ConditionTrue {
			c.Reason = pc.Reason
			c.Message = fmt.Sprintf("%s: %s", t, pc.Message)
			return c
		}
	}
	c.Status, c.Reason, c.Message = metav1.ConditionTrue, shardgatev1alpha1.ReasonAdmitted, "the Gateway accepted the route and resolved its backend"
	return c
}

func parentStatus(obs Observed, routeNamespace, gwNamespace, gwName string) *gatewayv1.RouteParentStatus {
	if obs.Route == nil {
		return nil
	}
	for i := range obs.Route.Status.Parents {
		ps := &obs.Route.Status.Parents[i]
		if string(ps.ControllerName) != obs.ControllerName || string(ps.ParentRef.Name) != gwName {
			continue
		}
		if ps.ParentRef.Kind != nil && *ps.ParentRef.Kind != "Gateway" {
			continue
		}
		ns := routeNamespace
		if ps.ParentRef.Namespace != nil {
			ns = string(*ps.ParentRef.Namespace)
		}
		if ns == gwNamespace {
			return ps
		}
	}
	return nil
}

// setCertificateReady sets the entry's CertificateReady on a shard with
// automatic HTTPS, for a held name: under the shard's domain, whether the
// shard's own certificate covers it (Observed.ShardCertificate), else the certificate controller's state (Unknown
// Pending until it has one). A name not held, or a shard without tls, has
// none: Admitted says why.
func setCertificateReady(entry *shardgatev1alpha1.ShardStatus, lh *shardgatev1alpha1.LeaseHost, sh sharding.ShardHost, d hostnames.Decision, obs Observed, gen int64) {
	if sh.Shard.TLS == nil || sh.Err != nil || !d.Reserved || obs.RouteConflict {
		meta.RemoveStatusCondition(&entry.Conditions, shardgatev1alpha1.ConditionCertificateReady)
		return
	}
	host := normalised(sh.Host)
	if autotls.Covered(&sh.Shard, host) {
		st := autotls.ShardCertificateState(sh.Shard.Domain)
		if obs.ShardCertificate != nil {
			st = obs.ShardCertificate(sh.Shard, host)
		}
		meta.SetStatusCondition(&entry.Conditions, st.Condition(gen))
		return
	}
	if obs.Certificate != nil {
		if s, ok := obs.Certificate(lh.Namespace, host); ok {
			meta.SetStatusCondition(&entry.Conditions, s.Condition(gen))
			return
		}
	}
	meta.SetStatusCondition(&entry.Conditions, metav1.Condition{Type: shardgatev1alpha1.ConditionCertificateReady,
		Status: metav1.ConditionUnknown, Reason: shardgatev1alpha1.ReasonPending, ObservedGeneration: gen,
		Message: "waiting for the certificate controller"})
}
