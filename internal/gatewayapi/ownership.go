/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/hostnames"
)

// ShardRoutes says which routes a shard serves.
type ShardRoutes string

const (
	// RoutesGenerated: only the routes shardgate generates for LeaseHosts,
	// for the names they hold.
	RoutesGenerated ShardRoutes = "Generated"
	// RoutesOwned: also routes tenants write, for names the owner of the
	// route's namespace holds.
	RoutesOwned ShardRoutes = "Owned"
)

// Ownership is what the hostname engine and the Namespaces say about who
// may serve which names on shards. The controller computes it from the
// LeaseHosts, the Namespaces and the block list (internal/leasehosts); the
// translator only reads it, so translation stays a pure function of its
// Input. It must be treated as immutable once in an Input.
//
// The rule it feeds: a route hostname on a shard is served only if the
// route is the one shardgate generated for a LeaseHost holding that name on
// that shard, or (shard routes: Owned) the name is held by the owner of the
// route's namespace (a wildcard: every name it covers). The names a
// generated route's LeaseHost holds on other shards only are not served on
// this one, and do not refuse the route here either (generatedOn). Anything else
// attached to a shard, whatever its kind or author, is Accepted=False
// HostnameNotOwned and serves nothing. Gateways that are not shards are
// not affected.
type Ownership struct {
	// Shards are the shard Gateways and the routes each admits.
	Shards map[types.NamespacedName]ShardRoutes
	// Generated are the HTTPRoutes shardgate generates, by namespace/name:
	// the LeaseHost that controls each and the names it holds per shard.
	Generated map[types.NamespacedName]GeneratedRoute
	// NamespaceOwners are the owners marked on namespaces (tenancy);
	// unmarked namespaces are absent.
	NamespaceOwners map[string]string
	// Holders maps each held name (normalised) to its holder's owner.
	Holders map[string]string
	// Blocked is the provider's block list (nil blocks nothing).
	Blocked *hostnames.BlockList
	// Retiring are the routes shardgate generated for LeaseHosts that
	// hold no name any more (blocked, taken over, withheld) or are being
	// deleted, by namespace/name, with that LeaseHost's UID: shardgate
	// deletes each of them. They serve nothing meanwhile; the translator
	// does not read this (see RetiringRoute).
	Retiring map[types.NamespacedName]types.UID
	// Deleted are the UIDs of LeaseHosts that were there and are gone
	// (lately: the controller forgets them after a while). A route whose
	// controller is one of them is being deleted too: by the LeaseHost
	// controller, which releases a deleted LeaseHost's names and route,
	// and by the garbage collector. A UID that never was a LeaseHost's (a
	// tenant's forged ownerReference) is not in it. The translator does
	// not read this either.
	Deleted map[types.UID]bool
	// Gen identifies these facts among those the controller computed (0:
	// none given). Delta, when set, says how they differ from the facts
	// of generation Delta.Since, so that a reader that last read those
	// redoes only what changed (the translator); any other reader
	// compares the facts themselves.
	Gen   uint64
	Delta *OwnershipDelta
}

// OwnershipDelta is how one Ownership differs from the one of generation
// Since: in the Generated entries of Routes (a route listed may also be
// unchanged), and, when Owners is set, in Holders and NamespaceOwners.
// Nothing else the translator reads differs (Shards, Blocked).
type OwnershipDelta struct {
	Since  uint64
	Routes []types.NamespacedName
	Owners bool
}

// RetiringRoute says whether the route nn, whose controller is the object
// controller refers to, is one shardgate is about to delete: its LeaseHost
// holds no name, or was deleted, and no handover keeps it serving one.
func (o *Ownership) RetiringRoute(nn types.NamespacedName, controller metav1.OwnerReference) bool {
	if o == nil || controller.UID == "" {
		return false
	}
	if _, generated := o.Generated[nn]; generated {
		return false
	}
	if uid, ok := o.Retiring[nn]; ok && uid == controller.UID {
		return true
	}
	if !o.Deleted[controller.UID] || controller.Kind != "LeaseHost" {
		return false
	}
	gv, err := schema.ParseGroupVersion(controller.APIVersion)
	return err == nil && gv.Group == shardgatev1alpha1.GroupVersion.Group
}

// GeneratedRoute is the route shardgate writes for one LeaseHost.
type GeneratedRoute struct {
	// LeaseHost is the UID of the LeaseHost that must be the route's
	// controller (ownerReference with controller: true).
	LeaseHost types.UID
	// Hosts are the names the LeaseHost holds on each shard.
	Hosts map[types.NamespacedName][]string
	// Unowned: the route carries no controller reference (Akash mode
	// writes its routes in the lease namespace, apart from the
	// ProviderHost in the provider's namespace); LeaseHost is then the
	// ProviderHost's UID, and the route must have no controller.
	Unowned bool
}

// Equal: g and o are the same route holding the same names.
func (g GeneratedRoute) Equal(o GeneratedRoute) bool {
	if g.LeaseHost != o.LeaseHost || g.Unowned != o.Unowned || len(g.Hosts) != len(o.Hosts) {
		return false
	}
	for gw, hs := range g.Hosts {
		if ho, ok := o.Hosts[gw]; !ok || !slices.Equal(hs, ho) {
			return false
		}
	}
	return true
}

// generated returns the entry of cr when cr is a route shardgate
// generates: an HTTPRoute with a Generated entry whose LeaseHost is its
// controller (or, Unowned, a route without controller).
func (o *Ownership) generated(cr *compiledRoute) (GeneratedRoute, bool) {
	if cr.key.Kind != kindHTTPRoute {
		return GeneratedRoute{}, false
	}
	g, ok := o.Generated[cr.key.NN]
	if !ok || !((cr.controller != "" && cr.controller == g.LeaseHost) || (g.Unowned && cr.controller == "")) {
		return GeneratedRoute{}, false
	}
	return g, true
}

// generatedOn returns the entry of cr when cr is a generated route and gw
// a shard: its names held on other shards only (heldElsewhere) are then
// not served on gw, whatever listener would match them there (a listener
// without hostname matches every one), and they are no reason to refuse
// the route on gw either: they are its own, served where they are held (a
// subdomain composes one name per shard, and the route lists them all).
func (o *Ownership) generatedOn(gw types.NamespacedName, cr *compiledRoute) (GeneratedRoute, bool) {
	if o == nil {
		return GeneratedRoute{}, false
	}
	if _, shard := o.Shards[gw]; !shard {
		return GeneratedRoute{}, false
	}
	return o.generated(cr)
}

// heldElsewhere: g's LeaseHost holds h on a shard other than gw, and not
// on gw.
func (g GeneratedRoute) heldElsewhere(gw types.NamespacedName, h string) bool {
	if slices.Contains(g.Hosts[gw], h) {
		return false
	}
	for other, hosts := range g.Hosts {
		if other != gw && slices.Contains(hosts, h) {
			return true
		}
	}
	return false
}

// shardAdmits says why cr may not serve hosts (the hostnames it would
// serve on the shard gw) there; "" when it may. hosts may hold "" (any
// hostname), which nobody owns. A generated route's names held elsewhere
// (GeneratedRoute.heldElsewhere) are left out of hosts beforehand.
func (o *Ownership) shardAdmits(gw types.NamespacedName, cr *compiledRoute, hosts []string, held func(heldKey) bool) (reason, msg string) {
	mode, shard := o.Shards[gw]
	if !shard {
		return "", ""
	}
	if g, ok := o.generated(cr); ok {
		held := g.Hosts[gw]
		var foreign []string
		for _, h := range hosts {
			if !slices.Contains(held, h) && !slices.Contains(foreign, domain(h)) {
				foreign = append(foreign, domain(h))
			}
		}
		if len(foreign) == 0 {
			return "", ""
		}
		if mode != RoutesOwned {
			return reasonNotOwned(fmt.Sprintf("the generated route's LeaseHost does not hold %s on this shard", strings.Join(foreign, ", ")))
		}
	}
	if o.admitsSolver(gw, cr, held) {
		return "", "" // an ACME HTTP-01 solver route for names of its namespace (autotls.go)
	}
	if mode != RoutesOwned {
		return reasonNotOwned("this shard serves only the routes shardgate generates for LeaseHosts (GatewayParameters shard.routes: Generated)")
	}
	owner, marked := o.NamespaceOwners[cr.key.NN.Namespace]
	if !marked || owner == "" {
		return reasonNotOwned(fmt.Sprintf("namespace %s carries no owner marking, so it owns no hostname", cr.key.NN.Namespace))
	}
	for _, h := range hosts {
		if why := o.ownerMayServe(owner, h); why != "" {
			return reasonNotOwned(fmt.Sprintf("%s: %s", domain(h), why))
		}
	}
	return "", ""
}

func reasonNotOwned(msg string) (string, string) {
	return shardgatev1alpha1.ReasonHostnameNotOwned, msg
}

// ownerMayServe says why owner may not serve h on a shard ("" when it
// may): an exact name must be held by owner; a wildcard *.d needs d held by
// owner, no name below d held by another owner, and no block-list entry at
// or below d (the wildcard would serve blocked names).
func (o *Ownership) ownerMayServe(owner, h string) string {
	if h == "" {
		return "a route without hostnames would serve every name of the listener"
	}
	if !isWildcard(h) {
		if o.Holders[h] != owner {
			return "not held by the owner of the route's namespace (claim it with a LeaseHost)"
		}
		return ""
	}
	d := h[2:]
	if o.Holders[d] != owner {
		return fmt.Sprintf("a wildcard needs its domain %s held by the owner of the route's namespace", d)
	}
	if entry, blocked := o.Blocked.Match(d); blocked {
		return fmt.Sprintf("its domain is blocked by %q", entry)
	}
	suffix := "." + d
	if o.Blocked != nil {
		for _, e := range o.Blocked.Entries() {
			if strings.HasSuffix(strings.TrimPrefix(e, "."), suffix) {
				return "it covers names the provider blocks"
			}
		}
	}
	for name, holder := range o.Holders {
		if holder != owner && strings.HasSuffix(name, suffix) {
			return "it covers names held by another tenant"
		}
	}
	return ""
}
