package leasehosts

import (
	"slices"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/hostnames"
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
