package leasehosts

import (
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/tenancy"
)

// Kind is what differs between the kinds of object that claim names in the
// one hostname engine: LeaseHosts (LeaseHostKind) and the provider's own
// objects (Akash ProviderHosts, whose Kind internal/akash gives). Each
// claims as a LeaseHost (its LeaseHost-shaped claim, under its own UID),
// and everything else of the claim logic is shared (Claims).
type Kind struct {
	// Provider: the objects are the provider's, not a tenant's: an
	// unmarked namespace does not refuse them (Policy).
	Provider bool
	// RouteAnnotations are the annotation keys shardgate owns on the
	// kind's generated routes: each must be on the stored route exactly as
	// on the desired one, present or absent. Nil: the desired route's
	// annotations must be on the stored one, which may carry others.
	RouteAnnotations []string
}

// LeaseHostKind is the Kind of LeaseHosts.
var LeaseHostKind = Kind{}

// Policy is the owner policy the kind's plans follow: p, without
// RequireOwner for the provider's objects.
func (k Kind) Policy(p tenancy.Policy) tenancy.Policy {
	if k.Provider {
		p.RequireOwner = false
	}
	return p
}

// RouteUpToDate: the stored route existing already has desired's spec,
// labels, annotations (as RouteAnnotations says) and controller reference
// (when desired has one), so that writing desired would change nothing.
func (k Kind) RouteUpToDate(existing, desired *gatewayv1.HTTPRoute) bool {
	if !equality.Semantic.DeepEqual(existing.Spec, desired.Spec) {
		return false
	}
	for key, v := range desired.Labels {
		if existing.Labels[key] != v {
			return false
		}
	}
	if k.RouteAnnotations == nil {
		for key, v := range desired.Annotations {
			if e, ok := existing.Annotations[key]; !ok || e != v {
				return false
			}
		}
	} else {
		for _, key := range k.RouteAnnotations {
			e, eOK := existing.Annotations[key]
			d, dOK := desired.Annotations[key]
			if e != d || eOK != dOK {
				return false
			}
		}
	}
	if ref := metav1.GetControllerOf(desired); ref != nil {
		got := metav1.GetControllerOf(existing)
		return got != nil && got.UID == ref.UID
	}
	return true
}

// Claims are one kind's objects' claims in the shared hostname engine, and
// the bookkeeping around them: which objects (by name, and by UID: one,
// or two for as long as it takes to notice that an object was deleted and
// created again under its name) have claims, the route each may have
// written, and which objects a change of the engine's decisions concerns.
// What each UID claims is the engine's own record (Engine.ClaimsOf), so
// the claims of a replaced object are released by its UID, never under
// the new one's. Claims is safe for concurrent use.
type Claims struct {
	engine *hostnames.Engine
	kind   Kind

	mu sync.Mutex
	// objects: name → the UIDs of the objects of that name with claims;
	// owners: UID → name; routes: UID → the route it may have written.
	objects map[types.NamespacedName][]types.UID
	owners  map[types.UID]types.NamespacedName
	routes  map[types.UID]types.NamespacedName
}

// NewClaims returns the claims of kind's objects in engine, none yet.
func NewClaims(engine *hostnames.Engine, kind Kind) *Claims {
	return &Claims{engine: engine, kind: kind, objects: map[types.NamespacedName][]types.UID{},
		owners: map[types.UID]types.NamespacedName{}, routes: map[types.UID]types.NamespacedName{}}
}

// Kind is the kind of the objects.
func (c *Claims) Kind() Kind { return c.kind }

// Engine is the hostname engine the claims are in.
func (c *Claims) Engine() *hostnames.Engine { return c.engine }

// Record notes that the object nn with uid has (or may get) claims in the
// engine, and that route is the route it writes (the zero name: as
// recorded before).
func (c *Claims) Record(nn types.NamespacedName, uid types.UID, route types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.objects[nn], uid) {
		c.objects[nn] = append(c.objects[nn], uid)
	}
	c.owners[uid] = nn
	if route != (types.NamespacedName{}) {
		c.routes[uid] = route
	}
}

// Claim records the object nn (lh is its claim, under its UID; route as
// for Record) and brings its claims in the engine in line with plan: the
// names it no longer claims are released, those it claims upserted. It
// returns its decisions by host and every change of a decision it caused
// (its own other claims among them: a LeaseHost's names on two shards are
// separate claimants; they are in the decisions already). A plan with a
// Refusal claims nothing and releases everything.
func (c *Claims) Claim(nn types.NamespacedName, lh *shardgatev1alpha1.LeaseHost, route types.NamespacedName, plan Plan) (map[string]hostnames.Decision, []hostnames.Change) {
	uid := string(lh.UID)
	c.Record(nn, lh.UID, route)
	claimed := plan.Hosts
	if plan.Refusal != nil {
		claimed = nil
	}
	wanted := make(map[string]bool, len(claimed))
	for _, h := range claimed {
		wanted[ClaimUID(uid, h)] = true
	}
	var changes []hostnames.Change
	for _, cl := range c.engine.ClaimsOf(uid) {
		if !wanted[cl.UID] {
			changes = append(changes, c.engine.Remove(cl.UID)...)
		}
	}
	if plan.Refusal != nil {
		return plan.RefusedDecisions(), changes
	}
	decisions := map[string]hostnames.Decision{}
	for _, cl := range Claimants(lh, plan) {
		d, ch := c.engine.Upsert(cl)
		decisions[cl.Host] = d
		changes = append(changes, ch...)
	}
	return decisions, changes
}

// Restored records the object nn (lh is its claim, under its UID, with
// its hint: the names it held) for the engine's cold start, and returns
// its claimants for Engine.Restore: none when plan refuses it.
func (c *Claims) Restored(nn types.NamespacedName, lh *shardgatev1alpha1.LeaseHost, route types.NamespacedName, plan Plan) []hostnames.Claimant {
	c.Record(nn, lh.UID, route)
	if plan.Refusal != nil {
		return nil
	}
	return Claimants(lh, plan)
}

// Drop forgets the objects named nn other than keep (the empty UID: all
// of them), and returns their UIDs and the routes they may have written.
// Their claims stay in the engine until Release.
func (c *Claims) Drop(nn types.NamespacedName, keep types.UID) ([]types.UID, []types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var gone []types.UID
	var routes []types.NamespacedName
	for _, u := range c.objects[nn] {
		if u == keep {
			continue
		}
		gone = append(gone, u)
		if rt, ok := c.routes[u]; ok {
			routes = append(routes, rt)
		}
		delete(c.owners, u)
		delete(c.routes, u)
	}
	if len(gone) == 0 {
		return nil, nil
	}
	c.objects[nn] = slices.DeleteFunc(c.objects[nn], func(u types.UID) bool { return u != keep })
	if len(c.objects[nn]) == 0 {
		delete(c.objects, nn)
	}
	return gone, routes
}

// Release releases every claim of the objects uids in the engine, by its
// record of what they claim, and returns the changes.
func (c *Claims) Release(uids []types.UID) []hostnames.Change {
	var changes []hostnames.Change
	for _, u := range uids {
		changes = append(changes, c.engine.ReleaseObject(string(u))...)
	}
	return changes
}

// Route is the route the object uid may have written, as recorded.
func (c *Claims) Route(uid types.UID) (types.NamespacedName, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rt, ok := c.routes[uid]
	return rt, ok
}

// HoldsRoute: an object recorded as writing route holds one of its names
// in the engine (another object of the same name may write it too).
func (c *Claims) HoldsRoute(route types.NamespacedName) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for u, other := range c.routes {
		if other != route {
			continue
		}
		for _, cl := range c.engine.ClaimsOf(string(u)) {
			if d, ok := c.engine.Decision(cl.UID); ok && d.Reserved {
				return true
			}
		}
	}
	return false
}

// Object is an object whose decision changed: its name and UID.
type Object struct {
	types.NamespacedName
	UID types.UID
}

// Changed are the recorded objects other than self whose decision is
// among changes, each once, in the order of changes.
func (c *Claims) Changed(changes []hostnames.Change, self types.NamespacedName) []Object {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Object
	for _, ch := range changes {
		uid, _, _ := strings.Cut(ch.UID, "/")
		nn, ok := c.owners[types.UID(uid)]
		obj := Object{NamespacedName: nn, UID: types.UID(uid)}
		if ok && nn != self && !slices.Contains(out, obj) {
			out = append(out, obj)
		}
	}
	return out
}
