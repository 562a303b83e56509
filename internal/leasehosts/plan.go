package leasehosts

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/sharding"
)

// Plan is what one LeaseHost asks for, given the shards that select it.
type Plan struct {
	// Shards are the selected shards, each with its host (or the error that
	// makes its composed host invalid), sorted by Gateway.
	Shards []sharding.ShardHost
	// Hosts are the distinct names to claim, normalised and sorted. An
	// explicit hostname is claimed even when no shard selects it, so that
	// ownership does not depend on the provider's shard layout.
	Hosts []string
	// Refusal, when set, refuses every host without asking the ownership
	// engine (for example NamespaceOwnerMismatch): the LeaseHost claims
	// nothing, so it holds no name and gets no route. See RefusedDecisions.
	Refusal *hostnames.Decision
	// Takeover is whether the claims may take a name over from another
	// deployment of the same owner: spec.takeover, honoured only in a
	// namespace the provider marked with its owner.
	Takeover bool
}

// RefusedDecisions is the decision of every host of a plan with a Refusal.
func (p Plan) RefusedDecisions() map[string]hostnames.Decision {
	out := make(map[string]hostnames.Decision, len(p.Hosts))
	for _, h := range p.Hosts {
		d := *p.Refusal
		d.Host, d.Reserved = h, false
		out[h] = d
	}
	return out
}

// PlanFor computes the names lh claims on the selected shards. A name that
// does not normalise is still listed under its raw spelling: the engine
// refuses it with InvalidHostname, which is what the tenant must see.
func PlanFor(lh *shardgatev1alpha1.LeaseHost, selected []sharding.Shard) Plan {
	p := Plan{Shards: sharding.HostsFor(lh, selected)}
	add := func(h string) {
		if n, err := hostnames.Normalise(h); err == nil {
			h = n
		}
		if !slices.Contains(p.Hosts, h) {
			p.Hosts = append(p.Hosts, h)
		}
	}
	if lh.Spec.Hostname != "" {
		add(lh.Spec.Hostname)
	}
	for _, sh := range p.Shards {
		if sh.Err == nil && sh.Host != "" {
			add(sh.Host)
		}
	}
	slices.Sort(p.Hosts)
	return p
}

// ClaimUID is the engine's identity of one (LeaseHost, name) claim: a
// LeaseHost with a subdomain claims one name per shard.
func ClaimUID(lhUID, host string) string { return lhUID + "/" + host }

// PlanIn is the plan of lh on shards, with lh's namespace ns (nil when it
// does not exist): the shards that select it, the names it claims, the
// namespace-owner refusal and whether a takeover is honoured.
func PlanIn(lh *shardgatev1alpha1.LeaseHost, shards []sharding.Shard, ns *corev1.Namespace, policy tenancy.Policy) Plan {
	var nsLabels map[string]string
	if ns != nil {
		nsLabels = ns.Labels
	}
	p := PlanFor(lh, sharding.Select(shards, lh, nsLabels))
	p.Refusal = NamespaceOwnerRefusal(policy, lh, ns)
	// A takeover moves a name between deployments of one owner, so it needs
	// a namespace the provider marked as that owner's: in an unmarked
	// namespace (requireNamespaceOwner: false) spec.lease.owner is only the
	// tenant's word.
	_, _, marked := policy.NamespaceOwner(ns)
	p.Takeover = lh.Spec.Takeover && marked
	return p
}

// NamespaceOwnerRefusal applies the namespace-owner rule to lh in ns: nil
// when lh may claim names. A LeaseHost acts for its namespace's owner only.
// When the namespace carries an owner marking, lh's spec.lease.owner, and
// its shardgate.io/lease-owner label if it has one, must equal it (compared
// verbatim; an empty marking matches nobody): otherwise
// NamespaceOwnerMismatch. When it carries none and the policy requires
// one: NamespaceOwnerMissing. The message never names the namespace's
// owner.
func NamespaceOwnerRefusal(p tenancy.Policy, lh *shardgatev1alpha1.LeaseHost, ns *corev1.Namespace) *hostnames.Decision {
	var reason, msg string
	switch p.Check(ns, lh.Spec.Lease.Owner) {
	case tenancy.Missing:
		keys := p.Keys
		if len(keys) == 0 {
			keys = []string{tenancy.OwnerKey}
		}
		reason = shardgatev1alpha1.ReasonNamespaceOwnerMissing
		msg = fmt.Sprintf("namespace %s carries no owner marking (%s), so nothing in it may claim hostnames; the provider marks each tenant namespace with its owner", lh.Namespace, strings.Join(keys, " or "))
	case tenancy.Mismatch:
		reason = shardgatev1alpha1.ReasonNamespaceOwnerMismatch
		msg = fmt.Sprintf("namespace %s belongs to another owner; lease owner %q may not claim hostnames in it", lh.Namespace, lh.Spec.Lease.Owner)
	default:
		marked, key, found := p.NamespaceOwner(ns)
		label, hasLabel := lh.Labels[shardgatev1alpha1.LabelLeaseOwner]
		if !found || !hasLabel || label == marked {
			return nil
		}
		reason = shardgatev1alpha1.ReasonNamespaceOwnerMismatch
		msg = fmt.Sprintf("label %s=%q does not match the owner of namespace %s (%s)", shardgatev1alpha1.LabelLeaseOwner, label, lh.Namespace, key)
	}
	return &hostnames.Decision{Reason: hostnames.Reason(reason), Message: msg}
}

// Claimants are lh's claims in the hostname engine under plan: one per
// name, none when the plan is refused. Holding carries the status hint,
// which the engine reads on a cold start (Restore) only; Object ties every
// claim to lh's UID, so a deleted object's claims are released by its own
// UID.
func Claimants(lh *shardgatev1alpha1.LeaseHost, plan Plan) []hostnames.Claimant {
	if plan.Refusal != nil {
		return nil
	}
	out := make([]hostnames.Claimant, 0, len(plan.Hosts))
	for _, h := range plan.Hosts {
		out = append(out, hostnames.Claimant{
			ClaimID:  hostnames.ClaimID{UID: ClaimUID(string(lh.UID), h), Created: lh.CreationTimestamp.Time},
			Key:      hostnames.LeaseKey{Owner: lh.Spec.Lease.Owner, DSeq: lh.Spec.Lease.DSeq, GSeq: lh.Spec.Lease.GSeq},
			Host:     h,
			Takeover: plan.Takeover,
			Holding:  slices.Contains(lh.Status.ReservedHosts, h),
			Object:   string(lh.UID),
		})
	}
	return out
}
