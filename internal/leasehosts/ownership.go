package leasehosts

import (
	"fmt"
	"iter"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

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
	// ProviderHosts are claims made for the provider's own objects (Akash
	// ProviderHosts, as LeaseHosts in their lease namespaces, see
	// internal/akash): an unmarked namespace does not refuse them, and
	// their routes carry no controller reference.
	ProviderHosts []*shardgatev1alpha1.LeaseHost
}

// Ownership computes the translator's ownership facts: which shards there
// are, which routes shardgate generates and for which names, who holds each
// name, and each namespace's owner. It runs the same hostname engine over
// the same claimants as the LeaseHost controller, so every replica comes
// to the same holders without reading anything a tenant could forge
// (labels, ownerReferences and LeaseHost status do not make a route
// generated; only the engine's decision for the LeaseHost that controls
// the route does). It costs O(LeaseHosts): it is the definition, which
// the controller keeps up to date with a Tracker (equal to it, a property
// test checks) instead of running it on every change.
func Ownership(in OwnershipInput) *gatewayapi.Ownership {
	out := &gatewayapi.Ownership{
		Shards:          shardModes(in.Shards, in.Routes),
		Generated:       map[types.NamespacedName]gatewayapi.GeneratedRoute{},
		NamespaceOwners: map[string]string{},
		Holders:         map[string]string{},
		Blocked:         in.Blocked,
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
	// The same block list the LeaseHost controller's engine has: the
	// config's, plus the names every shard keeps for the provider.
	engine := hostnames.New(in.Blocked.WithReserved(ProviderNames(in.Shards)))
	type planned struct {
		lh       *shardgatev1alpha1.LeaseHost
		plan     Plan
		provider bool
	}
	var plans []planned
	var claimants []hostnames.Claimant
	// A LeaseHost that holds no name, or is being deleted, has its route
	// deleted by the LeaseHost controller (a ProviderHost's route is not
	// one of its LeaseHost's dependents: not counted).
	retire := func(lh *shardgatev1alpha1.LeaseHost) {
		if out.Retiring == nil {
			out.Retiring = map[types.NamespacedName]types.UID{}
		}
		out.Retiring[types.NamespacedName{Namespace: lh.Namespace, Name: RouteName(lh)}] = lh.UID
	}
	providerPolicy := in.Policy
	providerPolicy.RequireOwner = false
	for i, list := range [][]*shardgatev1alpha1.LeaseHost{in.LeaseHosts, in.ProviderHosts} {
		policy := in.Policy
		if i == 1 {
			policy = providerPolicy
		}
		for _, lh := range list {
			if lh == nil {
				continue
			}
			if lh.DeletionTimestamp != nil {
				if i == 0 {
					retire(lh)
				}
				continue
			}
			p := PlanIn(lh, in.Shards, namespaces[lh.Namespace], policy)
			claimants = append(claimants, Claimants(lh, p)...)
			plans = append(plans, planned{lh, p, i == 1})
		}
	}
	// Decided as a cold start is: at once, with each LeaseHost's status
	// hint, so the result does not depend on the order of in.LeaseHosts.
	// The LeaseHost controller's live engine keeps a name with its live
	// holder and writes that holder's status hint, which this reads.
	engine.Restore(claimants)
	for _, pl := range plans {
		held := map[string]bool{}
		for _, h := range pl.plan.Hosts {
			if d, ok := engine.Decision(ClaimUID(string(pl.lh.UID), h)); ok && d.Reserved {
				held[h] = true
			}
		}
		g, ok := generatedRoute(pl.lh, pl.plan, held, pl.provider)
		if !ok {
			if !pl.provider {
				retire(pl.lh)
			}
			continue
		}
		out.Generated[types.NamespacedName{Namespace: pl.lh.Namespace, Name: RouteName(pl.lh)}] = g
	}
	for host, c := range engine.Snapshot().Holders {
		out.Holders[host] = c.Key.Owner
	}
	return out
}

// shardModes are the shards' route modes: routes' entry, else the
// shard's own, else Generated.
func shardModes(shards []sharding.Shard, routes map[types.NamespacedName]gatewayapi.ShardRoutes) map[types.NamespacedName]gatewayapi.ShardRoutes {
	out := make(map[types.NamespacedName]gatewayapi.ShardRoutes, len(shards))
	for _, s := range shards {
		mode := routes[s.Gateway]
		if mode == "" {
			mode = gatewayapi.ShardRoutes(s.Routes)
		}
		if mode == "" {
			mode = gatewayapi.RoutesGenerated
		}
		out[s.Gateway] = mode
	}
	return out
}

// generatedRoute is the route shardgate generates for lh (a provider's
// claim when provider) under plan, holding the names in held: false when
// it holds none, and then generates no route.
func generatedRoute(lh *shardgatev1alpha1.LeaseHost, plan Plan, held map[string]bool, provider bool) (gatewayapi.GeneratedRoute, bool) {
	if len(held) == 0 {
		return gatewayapi.GeneratedRoute{}, false
	}
	g := gatewayapi.GeneratedRoute{LeaseHost: lh.UID, Hosts: map[types.NamespacedName][]string{}, Unowned: provider}
	for _, sh := range plan.Shards {
		if h := normalised(sh.Host); sh.Err == nil && held[h] && !slices.Contains(g.Hosts[sh.Shard.Gateway], h) {
			g.Hosts[sh.Shard.Gateway] = append(g.Hosts[sh.Shard.Gateway], h)
		}
	}
	return g, true
}

// Handover keeps a name served while it changes hands within one owner
// (a takeover, or the promotion of the owner's waiting LeaseHost), so that
// the new holder's route is programmed before the old one stops serving.
//
// prev is the previous translation's ownership, next the one just computed
// (neither is modified), routes the HTTPRoutes as stored and live says
// which LeaseHost UIDs are live. candidates, when not nil, are the routes
// to look at: it must hold every route whose Generated entry differs
// between prev and next (a route whose entry is the same in both serves
// the same names: nothing to keep); nil looks at every route of prev. For a name N on a shard that prev let a generated
// route R1 serve and next gives to another LeaseHost: while the current
// holder's generated route does not carry N yet, R1 keeps serving N, if
// R1's LeaseHost is alive and the new holder has the same owner as the old
// one. Across owners nothing is kept: the old holder stops at once. The
// result is next itself when nothing is kept, or a copy with the kept
// names added to R1's entry; the grace lasts as long as it is carried from
// one translation to the next, so it ends when the new route carries N or
// when the name leaves the owner. It also returns the routes that keep a
// name (to look at next time, with the routes that changed).
func Handover(prev, next *gatewayapi.Ownership, routes []*gatewayv1.HTTPRoute, live func(types.UID) bool, candidates iter.Seq[types.NamespacedName]) (*gatewayapi.Ownership, []types.NamespacedName) {
	if prev == nil || next == nil {
		return next, nil
	}
	if candidates == nil {
		candidates = maps.Keys(prev.Generated)
	}
	type moved struct {
		route types.NamespacedName
		uid   types.UID
		// unowned: an Akash route (GeneratedRoute.Unowned).
		unowned bool
		shard   types.NamespacedName
		host    string
	}
	var kept []moved
	var holders map[shardHost]types.NamespacedName // lazily: who holds each name per shard now
	var stored map[types.NamespacedName]*gatewayv1.HTTPRoute
	for r1 := range candidates {
		g1, ok := prev.Generated[r1]
		if !ok || !live(g1.LeaseHost) {
			continue
		}
		now, still := next.Generated[r1]
		if still && now.LeaseHost != g1.LeaseHost {
			continue // another LeaseHost's route by that name now
		}
		for gw, hosts := range g1.Hosts {
			if _, shard := next.Shards[gw]; !shard {
				continue
			}
			for _, h := range hosts {
				if still && slices.Contains(now.Hosts[gw], h) {
					continue
				}
				owner := prev.Holders[h]
				if owner == "" || next.Holders[h] != owner {
					continue // released, or moved to another owner: never kept
				}
				if holders == nil {
					holders = generatedHolders(next)
					stored = map[types.NamespacedName]*gatewayv1.HTTPRoute{}
					for _, r := range routes {
						if r != nil {
							stored[types.NamespacedName{Namespace: r.Namespace, Name: r.Name}] = r
						}
					}
				}
				r2, held := holders[shardHost{gw, h}]
				if !held || r2 == r1 {
					continue // nobody generates it on this shard now
				}
				if carries(stored[r2], next.Generated[r2], h) {
					continue // the new holder's route serves it: hand over
				}
				kept = append(kept, moved{route: r1, uid: g1.LeaseHost, unowned: g1.Unowned, shard: gw, host: h})
			}
		}
	}
	if len(kept) == 0 {
		return next, nil
	}
	out := *next
	out.Generated = make(map[types.NamespacedName]gatewayapi.GeneratedRoute, len(next.Generated)+len(kept))
	for k, v := range next.Generated {
		out.Generated[k] = v
	}
	for _, m := range kept {
		g, ok := out.Generated[m.route]
		if !ok {
			g = gatewayapi.GeneratedRoute{LeaseHost: m.uid, Unowned: m.unowned}
		}
		hosts := make(map[types.NamespacedName][]string, len(g.Hosts)+1)
		for gw, hs := range g.Hosts {
			hosts[gw] = slices.Clone(hs)
		}
		if !slices.Contains(hosts[m.shard], m.host) {
			hosts[m.shard] = append(hosts[m.shard], m.host)
			slices.Sort(hosts[m.shard])
		}
		g.Hosts = hosts
		out.Generated[m.route] = g
	}
	var keptRoutes []types.NamespacedName
	for _, m := range kept {
		if !slices.Contains(keptRoutes, m.route) {
			keptRoutes = append(keptRoutes, m.route)
		}
	}
	return &out, keptRoutes
}

type shardHost struct {
	shard types.NamespacedName
	host  string
}

// generatedHolders: for each shard and name, the generated route that may
// serve it.
func generatedHolders(o *gatewayapi.Ownership) map[shardHost]types.NamespacedName {
	out := map[shardHost]types.NamespacedName{}
	for r, g := range o.Generated {
		for gw, hosts := range g.Hosts {
			for _, h := range hosts {
				out[shardHost{gw, h}] = r
			}
		}
	}
	return out
}

// carries: r is the route shardgate generated as g (controlled by g's
// LeaseHost, or without a controller when g is Unowned) and lists host
// among its hostnames.
func carries(r *gatewayv1.HTTPRoute, g gatewayapi.GeneratedRoute, host string) bool {
	if r == nil || g.LeaseHost == "" {
		return false
	}
	ref := metav1.GetControllerOf(r)
	if g.Unowned {
		if ref != nil {
			return false
		}
	} else if ref == nil || ref.UID != g.LeaseHost {
		return false
	}
	for _, h := range r.Spec.Hostnames {
		if normalised(string(h)) == host {
			return true
		}
	}
	return false
}

// ProviderNames are the names every shard keeps for the provider, with why:
// its canonical hostname (the name Envoy's router answers to) and its apex
// domain. A tenant asking for one is refused Blocked.
func ProviderNames(shards []sharding.Shard) map[string]string {
	names := map[string]string{}
	for _, s := range shards {
		if s.Domain != "" {
			names[s.Domain] = fmt.Sprintf("it is the apex domain of shard %s", s.Gateway)
		}
	}
	for _, s := range shards { // a canonical hostname says so, even if it is another shard's domain
		if s.CanonicalHostname != "" {
			names[s.CanonicalHostname] = fmt.Sprintf("it is the canonical hostname of shard %s", s.Gateway)
		}
	}
	return names
}
