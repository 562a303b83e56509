package leasehosts

import (
	"iter"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/sharding"
)

// FactsInput is what one translation's ownership facts are made of.
type FactsInput struct {
	LeaseHosts []*shardgatev1alpha1.LeaseHost
	// ProviderHosts are the provider's own claims (OwnershipInput).
	ProviderHosts []*shardgatev1alpha1.LeaseHost
	Namespaces    []*corev1.Namespace
	// Shards are the shards Discover found, and Problems what it refused:
	// a Gateway with a shard section that Discover could not use (a bad
	// selector, a duplicate name) still counts as a shard here, in the
	// strict Generated mode, so that it serves only what the engine allows.
	Shards   []sharding.Shard
	Problems []sharding.Problem
	Policy   tenancy.Policy
	Blocked  *hostnames.BlockList
	// Routes are the HTTPRoutes as stored: the handover looks for the new
	// holder's route among them.
	Routes []*gatewayv1.HTTPRoute
	// Now is when the facts are made: the LeaseHosts seen deleted are
	// remembered for DeletedMemory from then.
	Now time.Time
}

// Facts keeps the translator's ownership facts (gatewayapi.Ownership) from
// one translation to the next: the hostname engine's decisions over the
// live LeaseHosts (a Tracker), the names kept through a same-owner
// handover (Handover), the shards Discover refused, and the LeaseHosts
// seen deleted lately.
//
// It numbers the facts it makes (Ownership.Gen) and says how each differs
// from the one before (Ownership.Delta: the routes, by name, whose
// generated entry may differ, and whether the owners do), so that the
// translator redoes only those; facts that may differ in anything else (a
// shard refused, everything decided again) carry no delta. Facts identical
// to the last are the last itself. A Facts is not safe for concurrent use;
// the Ownerships it returns are never modified afterwards, and must not be
// modified by the caller.
type Facts struct {
	tracker *Tracker
	gen     uint64
	// last: the facts Next returned last; of: what they were made of.
	last *gatewayapi.Ownership
	of   factsInputs
	// deleted: the LeaseHosts seen deleted lately, by UID, with when.
	deleted map[types.UID]time.Time
	// deletedSet is deleted's keys as the facts carry them (nil: none).
	deletedSet map[types.UID]bool
}

// factsInputs is what the last facts were made of: the tracker's result
// (base), with the refused shards and the deleted LeaseHosts added
// (computed), and the routes its handover kept a name for.
type factsInputs struct {
	base     *gatewayapi.Ownership
	refused  []types.NamespacedName
	computed *gatewayapi.Ownership
	kept     []types.NamespacedName
}

// DeletedMemory is how long the LeaseHosts seen deleted count as deleted
// (Ownership.Deleted): the routes they controlled are being deleted, by
// the LeaseHost controller and the garbage collector, which is done in
// moments.
const DeletedMemory = 2 * time.Minute

// NewFacts returns a Facts that has made none.
func NewFacts() *Facts { return &Facts{tracker: NewTracker()} }

// Last is the facts Next returned last (nil: none yet).
func (f *Facts) Last() *gatewayapi.Ownership { return f.last }

// Next returns the ownership facts of in. The tracker decides again only
// the names of the LeaseHosts that changed (a change of the shards, the
// block list or the policy: every name), and reports the routes whose
// generated entry changed: the handover looks at those, and at the routes
// it kept a name for last time, only.
func (f *Facts) Next(in FactsInput) *gatewayapi.Ownership {
	refused := refusedShards(in.Problems)
	base, ch := f.tracker.Update(OwnershipInput{
		LeaseHosts: in.LeaseHosts, ProviderHosts: in.ProviderHosts, Namespaces: in.Namespaces,
		Shards: in.Shards, Policy: in.Policy, Blocked: in.Blocked,
	})
	deleted, deletedChanged := f.forget(ch.Gone, in.Now)
	was := f.of
	next := was.computed
	if next == nil || base != was.base || deletedChanged || !slices.Equal(refused, was.refused) {
		// The tracker's result is shared with its next one: the
		// additions go to a copy.
		o := *base
		o.Deleted = deleted
		copied := false
		for _, gw := range refused {
			if _, ok := o.Shards[gw]; !ok {
				if !copied {
					o.Shards, copied = maps.Clone(o.Shards), true
				}
				o.Shards[gw] = gatewayapi.RoutesGenerated
			}
		}
		next = &o
	} else if len(was.kept) == 0 {
		// The same facts as the last, which kept no name through a
		// handover: nothing changes hands.
		return f.last
	}
	// The routes whose generated entry may differ from the last facts':
	// those the tracker changed, and those the last handover kept a name
	// for (nil: every route).
	var changed []types.NamespacedName
	var candidates iter.Seq[types.NamespacedName]
	if !ch.All && f.last != nil {
		changed = slices.Concat(ch.Routes, was.kept)
		candidates = slices.Values(changed)
	}
	out, kept := Handover(f.last, next, in.Routes, f.tracker.Live, candidates)
	facts := *out
	f.gen++
	facts.Gen, facts.Delta = f.gen, nil
	// The candidates are all that may differ (Handover keeps names only
	// for them), with the owners, unless the shards may.
	if candidates != nil && slices.Equal(refused, was.refused) {
		facts.Delta = &gatewayapi.OwnershipDelta{Since: f.last.Gen, Routes: changed, Owners: ch.Owners}
	}
	f.last = &facts
	f.of = factsInputs{base: base, refused: refused, computed: next, kept: kept}
	return f.last
}

// refusedShards are the Gateways with a shard section that Discover could
// not use, other than for their parameters, each once, in order.
func refusedShards(problems []sharding.Problem) []types.NamespacedName {
	var out []types.NamespacedName
	for _, p := range problems {
		if p.Reason != sharding.ReasonInvalidParameters && !slices.Contains(out, p.Gateway) {
			out = append(out, p.Gateway)
		}
	}
	return out
}

// forget records the LeaseHosts gone as deleted at at, forgets those
// deleted more than DeletedMemory ago, and returns the rest (nil when
// empty), a new set when it changed.
func (f *Facts) forget(gone []types.UID, at time.Time) (map[types.UID]bool, bool) {
	changed := false
	for _, uid := range gone {
		if f.deleted == nil {
			f.deleted = map[types.UID]time.Time{}
		}
		f.deleted[uid] = at
		changed = true
	}
	for uid, t := range f.deleted {
		if at.Sub(t) > DeletedMemory {
			delete(f.deleted, uid)
			changed = true
		}
	}
	if !changed {
		return f.deletedSet, false
	}
	f.deletedSet = nil
	for uid := range f.deleted {
		if f.deletedSet == nil {
			f.deletedSet = map[types.UID]bool{}
		}
		f.deletedSet[uid] = true
	}
	return f.deletedSet, true
}
