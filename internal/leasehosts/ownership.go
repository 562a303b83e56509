package leasehosts

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/sharding"
)

// OwnershipInput is what Ownership reads.
type OwnershipInput struct {
	LeaseHosts []*shardgatev1alpha1.LeaseHost
	Namespaces []*corev1.Namespace
	Shards     []sharding.Shard
	// Routes are the shards' route modes (default RoutesGenerated).
	Routes  map[types.NamespacedName]gatewayapi.ShardRoutes
	Policy  tenancy.Policy
	Blocked *hostnames.BlockList
}

// Ownership computes the translator's ownership facts: which shards there
// are, which routes shardgate generates and for which names, who holds each
// name, and each namespace's owner. It runs the same hostname engine over
// the same claimants as the LeaseHost controller, so every replica comes
// to the same holders without reading anything a tenant could forge
// (labels, ownerReferences and LeaseHost status do not make a route
// generated; only the engine's decision for the LeaseHost that controls
// the route does). It costs O(LeaseHosts).
func Ownership(in OwnershipInput) *gatewayapi.Ownership {
	out := &gatewayapi.Ownership{
		Shards:          map[types.NamespacedName]gatewayapi.ShardRoutes{},
		Generated:       map[types.NamespacedName]gatewayapi.GeneratedRoute{},
		NamespaceOwners: map[string]string{},
		Holders:         map[string]string{},
		Blocked:         in.Blocked,
	}
	for _, s := range in.Shards {
		routes := in.Routes[s.Gateway]
		if routes == "" {
			routes = gatewayapi.RoutesGenerated
		}
		out.Shards[s.Gateway] = routes
	}
	namespaces := map[string]*corev1.Namespace{}
	for _, ns := range in.Namespaces {
		if ns == nil {
			continue
		}
		namespaces[ns.Name] = ns
		if owner, _, ok := in.Policy.NamespaceOwner(ns); ok {
			out.NamespaceOwners[ns.Name] = owner
		}
	}
	engine := hostnames.New(in.Blocked)
	type planned struct {
		lh   *shardgatev1alpha1.LeaseHost
		plan Plan
	}
	var plans []planned
	for _, lh := range in.LeaseHosts {
		if lh == nil || lh.DeletionTimestamp != nil {
			continue
		}
		p := PlanIn(lh, in.Shards, namespaces[lh.Namespace], in.Policy)
		for _, c := range Claimants(lh, p) {
			engine.Upsert(c)
		}
		plans = append(plans, planned{lh, p})
	}
	for _, pl := range plans {
		held := map[string]bool{}
		for _, h := range pl.plan.Hosts {
			if d, ok := engine.Decision(ClaimUID(string(pl.lh.UID), h)); ok && d.Reserved {
				held[h] = true
			}
		}
		if len(held) == 0 {
			continue
		}
		g := gatewayapi.GeneratedRoute{LeaseHost: pl.lh.UID, Hosts: map[types.NamespacedName][]string{}}
		for _, sh := range pl.plan.Shards {
			if h := normalised(sh.Host); sh.Err == nil && held[h] && !slices.Contains(g.Hosts[sh.Shard.Gateway], h) {
				g.Hosts[sh.Shard.Gateway] = append(g.Hosts[sh.Shard.Gateway], h)
			}
		}
		out.Generated[types.NamespacedName{Namespace: pl.lh.Namespace, Name: RouteName(pl.lh)}] = g
	}
	for host, c := range engine.Snapshot().Holders {
		out.Holders[host] = c.Key.Owner
	}
	return out
}
