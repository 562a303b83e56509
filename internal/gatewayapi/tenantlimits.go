/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"fmt"
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/ir"
)

// TenantLimits bound what one tenant (the owner of a route's namespace, or
// the namespace when it carries no owner marking) may have served on one
// shard, so that one tenant's routes cannot make every other tenant's
// change on the shard slow, or its route table too large for the proxies.
// Zero in a field means no limit on it; the zero value limits nothing.
//
// What counts, per route naming the shard: 1 route; its valid rules; its
// matches (a rule without matches has one); its regular expressions (path,
// header and query parameter matches of type RegularExpression, and
// GRPCRoute method matches of that type). Every route of the tenant that
// names the shard counts, whatever its other conditions there, except that
// on a shard serving only generated routes (shard.routes: Generated) only
// those do (a tenant's own routes are refused there anyway).
type TenantLimits struct {
	Routes             int
	Rules              int
	Matches            int
	RegularExpressions int
}

// DefaultTenantLimits are the controller config's defaults
// (internal/config): sized for a legitimate tenant with room to spare. A
// lease has a handful of names, each one generated route with one rule and
// one match, and a large owner has a few hundred leases on a provider; a
// hand-written route rarely has more than ten rules of two matches; rules
// and matches bound what the tenant adds to the route table; regular
// expressions are the rare and costly kind (Envoy runs them on every
// request the virtual host sees).
func DefaultTenantLimits() TenantLimits {
	return TenantLimits{Routes: 500, Rules: 1000, Matches: 2000, RegularExpressions: 100}
}

func (l TenantLimits) enabled() bool {
	return l.Routes > 0 || l.Rules > 0 || l.Matches > 0 || l.RegularExpressions > 0
}

// routeUsage is what one route counts against its tenant's limits.
type routeUsage struct {
	routes, rules, matches, regexes int
}

func (u routeUsage) plus(o routeUsage) routeUsage {
	return routeUsage{u.routes + o.routes, u.rules + o.rules, u.matches + o.matches, u.regexes + o.regexes}
}

// usageOf counts cr's served rules, matches and regular expressions.
func usageOf(cr *compiledRoute) routeUsage {
	u := routeUsage{routes: 1, rules: len(cr.rules)}
	for i := range cr.rules {
		rs := cr.rules[i].routes
		u.matches += len(rs)
		for j := range rs {
			u.regexes += regexCount(&rs[j].Match)
		}
	}
	return u
}

func regexCount(m *ir.Match) int {
	n := 0
	if m.Path != nil && m.Path.Type == ir.MatchRegularExpression {
		n++
	}
	for _, v := range m.Headers {
		if v.Type == ir.MatchRegularExpression {
			n++
		}
	}
	for _, v := range m.QueryParams {
		if v.Type == ir.MatchRegularExpression {
			n++
		}
	}
	return n
}

// exceeded names the first limit that used would break ("" when none).
func (l TenantLimits) exceeded(used, own routeUsage) string {
	type lim struct {
		max, used, own int
		what, key      string
	}
	for _, c := range []lim{
		{l.Routes, used.routes, own.routes, "routes", "routes"},
		{l.Rules, used.rules, own.rules, "rules", "rules"},
		{l.Matches, used.matches, own.matches, "matches", "matches"},
		{l.RegularExpressions, used.regexes, own.regexes, "regular expressions", "regularExpressions"},
	} {
		if c.max > 0 && c.used > c.max {
			if c.key == "routes" {
				return fmt.Sprintf("its tenant's older routes on this shard already reach the limit of %d routes per tenant per shard (controller config shards.tenantLimits.routes); the tenant's older routes are served first", c.max)
			}
			return fmt.Sprintf("the route has %d %s; with its tenant's older routes on this shard that is over the limit of %d %s per tenant per shard (controller config shards.tenantLimits.%s); the tenant's older routes are served first",
				c.own, c.what, c.max, c.what, c.key)
		}
	}
	return ""
}

// limitEntry is one route in a tenant's account on a shard.
type limitEntry struct {
	key     RouteKey
	created metav1.Time
	uid     types.UID
	use     routeUsage
}

// entryLess is the project's one order for ties: creationTimestamp, then
// UID (oldest first); the route key settles what both leave equal.
func entryLess(a, b limitEntry) int {
	if !a.created.Equal(&b.created) {
		if a.created.Before(&b.created) {
			return -1
		}
		return 1
	}
	if a.uid != b.uid {
		if a.uid < b.uid {
			return -1
		}
		return 1
	}
	if routeKeyLess(a.key, b.key) {
		return -1
	}
	if a.key == b.key {
		return 0
	}
	return 1
}

// tenantBook is a shard's account of its tenants' routes: who each
// counted route belongs to, each tenant's routes oldest first, and the
// routes refused for going over a limit, with their messages. Admission is
// greedy in age order: a route is served when it fits with the tenant's
// older served routes; so a new route never displaces an older one, and
// one tenant's routes never change another's admission.
type tenantBook struct {
	limits  TenantLimits
	tenant  map[RouteKey]string
	members map[string][]limitEntry
	refused map[RouteKey]string
}

// tenantOf names the tenant of a route in namespace ns.
func (o *Ownership) tenantOf(ns string) string {
	if owner, ok := o.NamespaceOwners[ns]; ok && owner != "" {
		return "owner/" + owner
	}
	return "namespace/" + ns
}

// counted says whether cr counts against its tenant's limits on shard gw,
// and as whose.
func (idx *Index) counted(gw types.NamespacedName, cr *compiledRoute) (string, bool) {
	o := idx.ownership
	mode, shard := o.Shards[gw]
	if !shard || cr == nil {
		return "", false
	}
	if mode != RoutesOwned && !o.generatedRoute(cr) {
		return "", false
	}
	return o.tenantOf(cr.key.NN.Namespace), true
}

// generatedRoute: cr is the route shardgate generates for a LeaseHost (or
// an Akash ProviderHost).
func (o *Ownership) generatedRoute(cr *compiledRoute) bool {
	g, ok := o.Generated[cr.key.NN]
	return ok && cr.key.Kind == kindHTTPRoute &&
		((cr.controller != "" && cr.controller == g.LeaseHost) || (g.Unowned && cr.controller == ""))
}

func entryOf(cr *compiledRoute) limitEntry {
	return limitEntry{key: cr.key, created: cr.created, uid: cr.uid, use: usageOf(cr)}
}

// newTenantBook accounts crs, the routes naming gw; nil when gw is not a
// shard or no limit is set.
func (idx *Index) newTenantBook(gw types.NamespacedName, crs []*compiledRoute) *tenantBook {
	if idx.ownership == nil || !idx.tenantLimits.enabled() {
		return nil
	}
	if _, shard := idx.ownership.Shards[gw]; !shard {
		return nil
	}
	b := &tenantBook{limits: idx.tenantLimits, tenant: map[RouteKey]string{},
		members: map[string][]limitEntry{}, refused: map[RouteKey]string{}}
	for _, cr := range crs {
		t, ok := idx.counted(gw, cr)
		if !ok {
			continue
		}
		if _, dup := b.tenant[cr.key]; dup {
			continue
		}
		b.tenant[cr.key] = t
		b.members[t] = append(b.members[t], entryOf(cr))
	}
	for _, es := range b.members {
		slices.SortFunc(es, entryLess)
		b.admit(es, b.refused)
	}
	return b
}

// admit records in refused the entries of one tenant (sorted) that do not
// fit.
func (b *tenantBook) admit(es []limitEntry, refused map[RouteKey]string) {
	var used routeUsage
	for _, e := range es {
		next := used.plus(e.use)
		if msg := b.limits.exceeded(next, e.use); msg != "" {
			refused[e.key] = msg
			continue
		}
		used = next
	}
}

// refusedOf is the refusal message of route k ("" when admitted).
func (b *tenantBook) refusedOf(k RouteKey) string {
	if b == nil {
		return ""
	}
	return b.refused[k]
}

// patch accounts the changes of the routes in changed (newCRs: their new
// compilations naming gw) and returns the other routes whose admission
// changed, which must be attached again; nothing changes in b until
// commit is called.
func (b *tenantBook) patch(idx *Index, gw types.NamespacedName, changed []RouteKey, newCRs map[RouteKey]*compiledRoute) (flips []RouteKey, commit func()) {
	if b == nil {
		return nil, func() {}
	}
	isChanged := make(map[RouteKey]bool, len(changed))
	tenants := map[string]bool{}
	for _, k := range changed {
		isChanged[k] = true
		if t, ok := b.tenant[k]; ok {
			tenants[t] = true
		}
	}
	newTenant := map[RouteKey]string{}
	for _, k := range sortedKeys(newCRs) {
		if t, ok := idx.counted(gw, newCRs[k]); ok {
			newTenant[k] = t
			tenants[t] = true
		}
	}
	members := make(map[string][]limitEntry, len(tenants))
	refused := map[RouteKey]string{}
	for t := range tenants {
		es := make([]limitEntry, 0, len(b.members[t])+1)
		for _, e := range b.members[t] {
			if !isChanged[e.key] {
				es = append(es, e)
			}
		}
		for _, k := range sortedKeys(newCRs) {
			if newTenant[k] == t {
				es = append(es, entryOf(newCRs[k]))
			}
		}
		slices.SortFunc(es, entryLess)
		b.admit(es, refused)
		members[t] = es
		for _, e := range es {
			if !isChanged[e.key] && refused[e.key] != b.refused[e.key] {
				flips = append(flips, e.key)
			}
		}
	}
	slices.SortFunc(flips, func(a, c RouteKey) int {
		if routeKeyLess(a, c) {
			return -1
		}
		return 1
	})
	return flips, func() {
		for _, k := range changed {
			delete(b.tenant, k)
			delete(b.refused, k)
		}
		for t, es := range members {
			for _, e := range es {
				delete(b.refused, e.key)
			}
			if len(es) == 0 {
				delete(b.members, t)
			} else {
				b.members[t] = es
			}
		}
		for k, t := range newTenant {
			b.tenant[k] = t
		}
		for k, msg := range refused {
			b.refused[k] = msg
		}
	}
}

// limitRefusal turns p, an accepted parent entry of cr, into a refusal
// when cr's tenant is over a limit on the shard: cr leaves the listeners
// it was attached to.
func limitRefusal(p *pendingParent, msg string) {
	if msg == "" || p.reason != "" {
		return
	}
	for _, l := range p.listeners {
		delete(l.attached, p.cr.key)
	}
	p.reason, p.msg, p.listeners = shardgatev1alpha1.ReasonTenantLimitExceeded, msg, nil
}

// tenantChanges marks the routes of the namespaces whose owner differs
// between a and b: the tenant they count for on shards changed (a patch
// accounts them again). It costs O(namespaces) when the maps differ, and
// nothing when they are the same map.
func (t *Translator) tenantChanges(a, b map[string]string, d *dirtySet) {
	if len(a) == len(b) && (len(a) == 0 || reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()) {
		return
	}
	mark := func(ns string) {
		for k := range t.store.routesByNS[ns].all() {
			d.Routes.add(k)
		}
	}
	for ns, owner := range a {
		if o, ok := b[ns]; !ok || o != owner {
			mark(ns)
		}
	}
	for ns := range b {
		if _, ok := a[ns]; !ok {
			mark(ns)
		}
	}
}
