package leasehosts

import (
	"maps"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/sharding"
)

// Tracker keeps the ownership facts of a changing set of LeaseHosts up to
// date. Update returns what Ownership returns over the same input (a
// property test checks it after every step); only the cost differs.
// Ownership decides every name again, in O(LeaseHosts); Update redoes
// only the LeaseHosts that are new, changed or gone, those in a namespace
// that changed, and the names any of them claims or claimed, each decided
// among all its claimants as Ownership decides it: a name's decision is a
// function of its own claimants, their status hints and the block list.
// So a new lease costs its own names, plus finding what changed (a
// pointer comparison per object: the informers' objects are immutable)
// and copying the result maps it changes.
//
// A change of the shards, their route modes, the owner policy or the block
// list decides everything again. A Tracker is not safe for concurrent use;
// the Ownerships it returns are never modified afterwards, and must not be
// modified by the caller.
type Tracker struct {
	global     trackerGlobal
	engineList *hostnames.BlockList
	namespaces map[string]*corev1.Namespace
	entries    map[trackKey]*tracked
	// byObject: the entry of each object as last seen, which an
	// unchanged object finds without hashing its UID.
	byObject map[*shardgatev1alpha1.LeaseHost]*tracked
	// names: each valid name claimed, its claims by claim UID.
	names map[string]map[string]claimRef
	// routes: the LeaseHost ([0]) and the provider's claim ([1]) whose
	// generated route has that name.
	routes map[types.NamespacedName]*[2]*tracked
	out    *gatewayapi.Ownership
}

type trackerGlobal struct {
	shards  []sharding.Shard
	routes  map[types.NamespacedName]gatewayapi.ShardRoutes
	policy  tenancy.Policy
	blocked *hostnames.BlockList
}

func (g *trackerGlobal) same(o *trackerGlobal) bool {
	return reflect.DeepEqual(g.shards, o.shards) && maps.Equal(g.routes, o.routes) &&
		reflect.DeepEqual(g.policy, o.policy) && g.blocked == o.blocked
}

type trackKey struct {
	uid      types.UID
	provider bool
}

// tracked is one LeaseHost (or provider's claim) as last planned.
type tracked struct {
	key    trackKey
	lh     *shardgatev1alpha1.LeaseHost
	route  types.NamespacedName
	plan   Plan
	claims []hostnames.Claimant
	names  []string // the valid names of claims, normalised
	held   map[string]bool
}

type claimRef struct {
	e *tracked
	i int // index in e.claims
}

// NewTracker returns a Tracker that has seen nothing.
func NewTracker() *Tracker { return &Tracker{} }

// Change says how an Update's result differs from the previous one.
type Change struct {
	// All: everything was decided again (the first Update, or the shards,
	// their modes, the policy or the block list changed); Routes is then
	// empty.
	All bool
	// Routes are the routes whose Generated entry differs.
	Routes []types.NamespacedName
	// Owners: Holders or NamespaceOwners differ.
	Owners bool
	// Gone are the UIDs of the LeaseHosts (not the provider's claims) of
	// the previous input that this one lacks: deleted.
	Gone []types.UID
}

// Update returns Ownership(in), reusing what it decided for the previous
// input (the previous result itself when nothing it reads changed), and
// how it differs from the previous result.
func (t *Tracker) Update(in OwnershipInput) (*gatewayapi.Ownership, Change) {
	var ch Change
	g := trackerGlobal{shards: in.Shards, routes: in.Routes, policy: in.Policy, blocked: in.Blocked}
	var before map[trackKey]*tracked
	if t.out == nil || !t.global.same(&g) {
		before = t.entries
		t.reset(g)
		ch.All = true
	}
	u := update{t: t, touched: map[trackKey]*shardgatev1alpha1.LeaseHost{}, names: map[string]bool{},
		routes: map[types.NamespacedName]bool{}, owners: map[string]*string{}, change: &ch}
	nsChanged := u.namespaces(in.Namespaces)
	u.leaseHosts(in.LeaseHosts, in.ProviderHosts, nsChanged)
	// After a reset every object present counts as new (touched).
	for k := range before {
		if _, present := u.touched[k]; !present && !k.provider {
			ch.Gone = append(ch.Gone, k.uid)
		}
	}
	if len(u.touched) == 0 && len(u.owners) == 0 {
		return t.out, ch
	}
	providerPolicy := in.Policy
	providerPolicy.RequireOwner = false
	for k, lh := range u.touched {
		policy := in.Policy
		if k.provider {
			policy = providerPolicy
		}
		u.replan(k, lh, in.Shards, policy)
	}
	holders := u.decide()
	prev := t.out
	out := *t.out
	if len(u.owners) > 0 {
		out.NamespaceOwners = maps.Clone(t.out.NamespaceOwners)
		for ns, owner := range u.owners {
			if owner == nil {
				delete(out.NamespaceOwners, ns)
			} else {
				out.NamespaceOwners[ns] = *owner
			}
		}
	}
	if len(holders) > 0 {
		out.Holders = maps.Clone(t.out.Holders)
		for h, owner := range holders {
			if owner == "" {
				delete(out.Holders, h)
			} else {
				out.Holders[h] = owner
			}
		}
	}
	ch.Owners = len(u.owners) > 0 || len(holders) > 0
	if !u.generated(&out) && !ch.Owners && !ch.All {
		return prev, ch // a change that changed no fact
	}
	t.out = &out
	return t.out, ch
}

// Live reports whether a LeaseHost or provider's claim with this UID was
// in the last Update's input, not being deleted.
func (t *Tracker) Live(uid types.UID) bool {
	for _, k := range []trackKey{{uid: uid}, {uid: uid, provider: true}} {
		if e := t.entries[k]; e != nil && e.lh.DeletionTimestamp == nil {
			return true
		}
	}
	return false
}

// reset forgets everything: every object counts as new in the next
// comparison.
func (t *Tracker) reset(g trackerGlobal) {
	t.global = g
	t.engineList = g.blocked.WithReserved(ProviderNames(g.shards))
	t.namespaces = map[string]*corev1.Namespace{}
	t.entries = map[trackKey]*tracked{}
	t.byObject = map[*shardgatev1alpha1.LeaseHost]*tracked{}
	t.names = map[string]map[string]claimRef{}
	t.routes = map[types.NamespacedName]*[2]*tracked{}
	t.out = &gatewayapi.Ownership{
		Shards:          shardModes(g.shards, g.routes),
		Generated:       map[types.NamespacedName]gatewayapi.GeneratedRoute{},
		NamespaceOwners: map[string]string{},
		Holders:         map[string]string{},
		Blocked:         g.blocked,
	}
}

// update is one Update's work: what changed, and what it touches.
type update struct {
	t *Tracker
	// touched: the LeaseHosts to plan again (nil: gone), by key.
	touched map[trackKey]*shardgatev1alpha1.LeaseHost
	// names to decide again, routes to generate again.
	names  map[string]bool
	routes map[types.NamespacedName]bool
	// owners: the namespaces whose owner changed (nil: none now).
	owners map[string]*string
	change *Change
}

// namespaces records the namespaces that are new, changed or gone, and
// their owners; it returns the names of those that changed.
func (u *update) namespaces(list []*corev1.Namespace) map[string]bool {
	t := u.t
	changed := map[string]bool{}
	prior, found := len(t.namespaces), 0
	for _, ns := range list {
		if ns == nil {
			continue
		}
		was, existed := t.namespaces[ns.Name]
		if existed {
			found++
		}
		if was == ns {
			continue
		}
		changed[ns.Name] = true
		t.namespaces[ns.Name] = ns
	}
	// An informer lists each name once: fewer found than there were
	// means some are gone.
	if found < prior {
		present := make(map[string]bool, len(list))
		for _, ns := range list {
			if ns != nil {
				present[ns.Name] = true
			}
		}
		for name := range t.namespaces {
			if !present[name] {
				changed[name] = true
				delete(t.namespaces, name)
			}
		}
	}
	for name := range changed {
		var owner *string
		if ns := t.namespaces[name]; ns != nil {
			if o, _, ok := t.global.policy.NamespaceOwner(ns); ok {
				owner = &o
			}
		}
		was, had := t.out.NamespaceOwners[name]
		if (owner == nil && had) || (owner != nil && (!had || was != *owner)) {
			u.owners[name] = owner
		}
	}
	return changed
}

// leaseHosts records the LeaseHosts (and provider's claims) that are new,
// changed, gone, or in a changed namespace.
func (u *update) leaseHosts(lhs, providers []*shardgatev1alpha1.LeaseHost, nsChanged map[string]bool) {
	t := u.t
	found := 0
	for i, list := range [][]*shardgatev1alpha1.LeaseHost{lhs, providers} {
		for _, lh := range list {
			if lh == nil {
				continue
			}
			if e := t.byObject[lh]; e != nil && e.key.provider == (i == 1) {
				// The same object as last time (the informers' objects
				// are immutable).
				found++
				if len(nsChanged) > 0 && nsChanged[lh.Namespace] {
					u.touched[e.key] = lh
				}
				continue
			}
			k := trackKey{uid: lh.UID, provider: i == 1}
			if t.entries[k] != nil {
				found++
			}
			u.touched[k] = lh
		}
	}
	// As for namespaces: fewer found than there were means some are gone.
	if found == len(t.entries) {
		return
	}
	present := make(map[trackKey]bool, len(lhs)+len(providers))
	for i, list := range [][]*shardgatev1alpha1.LeaseHost{lhs, providers} {
		for _, lh := range list {
			if lh != nil {
				present[trackKey{uid: lh.UID, provider: i == 1}] = true
			}
		}
	}
	for k := range t.entries {
		if !present[k] {
			u.touched[k] = nil
		}
	}
}

// replan drops k's previous entry and plans lh (nil: gone) again.
func (u *update) replan(k trackKey, lh *shardgatev1alpha1.LeaseHost, shards []sharding.Shard, policy tenancy.Policy) {
	t := u.t
	if old := t.entries[k]; old != nil {
		for i, n := range old.names {
			if n == "" {
				continue // invalid: not indexed
			}
			delete(t.names[n], old.claims[i].UID)
			if len(t.names[n]) == 0 {
				delete(t.names, n)
			}
			u.names[n] = true
		}
		delete(t.entries, k)
		if t.byObject[old.lh] == old {
			delete(t.byObject, old.lh)
		}
		if lh == nil && !k.provider {
			u.change.Gone = append(u.change.Gone, k.uid)
		}
		// Another object by the same name may have taken the slot
		// already (deleted and created again).
		if slot := t.routes[old.route]; slot != nil && slot[slotOf(k)] == old {
			slot[slotOf(k)] = nil
			if slot[0] == nil && slot[1] == nil {
				delete(t.routes, old.route)
			}
		}
		u.routes[old.route] = true
	}
	if lh == nil {
		return
	}
	e := &tracked{key: k, lh: lh, route: types.NamespacedName{Namespace: lh.Namespace, Name: RouteName(lh)}}
	if lh.DeletionTimestamp == nil {
		e.plan = PlanIn(lh, shards, t.namespaces[lh.Namespace], policy)
		e.claims = Claimants(lh, e.plan)
		e.names = make([]string, len(e.claims))
		for i, c := range e.claims {
			n, err := hostnames.Normalise(c.Host)
			if err != nil {
				continue // refused InvalidHostname whatever else claims
			}
			e.names[i] = n
			if t.names[n] == nil {
				t.names[n] = map[string]claimRef{}
			}
			t.names[n][c.UID] = claimRef{e: e, i: i}
			u.names[n] = true
		}
	}
	t.entries[k] = e
	t.byObject[lh] = e
	slot := t.routes[e.route]
	if slot == nil {
		slot = &[2]*tracked{}
		t.routes[e.route] = slot
	}
	slot[slotOf(k)] = e
	u.routes[e.route] = true
}

func slotOf(k trackKey) int {
	if k.provider {
		return 1
	}
	return 0
}

// decide decides the touched names again among all their claimants, as
// a cold start does (Ownership), records which names each claimant's
// LeaseHost holds, and returns the touched names' holders' owners ("":
// nobody holds it now) where they changed.
func (u *update) decide() map[string]string {
	t := u.t
	var cs []hostnames.Claimant
	for n := range u.names {
		for _, ref := range t.names[n] {
			cs = append(cs, ref.e.claims[ref.i])
		}
	}
	engine := hostnames.New(t.engineList)
	engine.Restore(cs)
	for n := range u.names {
		for _, ref := range t.names[n] {
			c := ref.e.claims[ref.i]
			d, _ := engine.Decision(c.UID)
			was := ref.e.held[c.Host]
			if d.Reserved == was {
				continue
			}
			if ref.e.held == nil {
				ref.e.held = map[string]bool{}
			}
			if d.Reserved {
				ref.e.held[c.Host] = true
			} else {
				delete(ref.e.held, c.Host)
			}
			u.routes[ref.e.route] = true
		}
	}
	holders := map[string]string{}
	for n := range u.names {
		owner := ""
		if c, ok := engine.Holder(n); ok {
			owner = c.Key.Owner
		}
		if t.out.Holders[n] != owner {
			holders[n] = owner
		}
	}
	return holders
}

// generated sets out's Generated and Retiring entries of the routes
// touched, from the LeaseHost and the provider's claim that name each, and
// reports whether any changed.
func (u *update) generated(out *gatewayapi.Ownership) bool {
	t := u.t
	var gen map[types.NamespacedName]gatewayapi.GeneratedRoute
	var retiring map[types.NamespacedName]types.UID
	for r := range u.routes {
		var lhE, pE *tracked
		if slot := t.routes[r]; slot != nil {
			lhE, pE = slot[0], slot[1]
		}
		g, ok := gatewayapi.GeneratedRoute{}, false
		if pE != nil {
			g, ok = generatedRoute(pE.lh, pE.plan, pE.held, true)
		}
		if !ok && lhE != nil {
			g, ok = generatedRoute(lhE.lh, lhE.plan, lhE.held, false)
		}
		if was, had := t.out.Generated[r]; ok != had || (ok && !was.Equal(g)) {
			if gen == nil {
				gen = maps.Clone(t.out.Generated)
			}
			if ok {
				gen[r] = g
			} else {
				delete(gen, r)
			}
			if !u.change.All {
				u.change.Routes = append(u.change.Routes, r)
			}
		}
		retire := lhE != nil && (lhE.lh.DeletionTimestamp != nil || len(lhE.held) == 0)
		if cur, has := t.out.Retiring[r]; has != retire || (retire && cur != lhE.lh.UID) {
			if retiring == nil {
				retiring = maps.Clone(t.out.Retiring)
				if retiring == nil {
					retiring = map[types.NamespacedName]types.UID{}
				}
			}
			if retire {
				retiring[r] = lhE.lh.UID
			} else {
				delete(retiring, r)
			}
		}
	}
	if gen != nil {
		out.Generated = gen
	}
	if retiring != nil {
		out.Retiring = retiring
		if len(retiring) == 0 {
			out.Retiring = nil
		}
	}
	return gen != nil || retiring != nil
}
