/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/ir"
)

// tcpRoute picks the route a TCP port serves. A TCP listener has no
// hostname or match to tell connections apart, so one route serves it:
// the oldest attached (then by kind, namespace and name), as the Gateway
// API's conflict rule says. Every attached route is Accepted and counted in
// attachedRoutes; the others serve nothing until the winner goes. A port
// has one TCP listener (markConflicts refuses two), so port is that one.
func tcpRoute(port []*listenerState, emitted map[RouteKey]bool) *ir.TCPRoute {
	type cand struct {
		key     RouteKey
		created metav1.Time
		a       *attachment
	}
	var cands []cand
	for _, l := range port {
		for k, a := range l.attached {
			cands = append(cands, cand{key: k, created: a.route.created, a: a})
		}
	}
	if len(cands) == 0 {
		return nil
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if !a.created.Equal(&b.created) {
			return a.created.Before(&b.created)
		}
		return routeKeyLess(a.key, b.key)
	})
	w := cands[0]
	emitted[w.key] = true
	tr := &ir.TCPRoute{
		Name:   w.key.NN.Namespace + "/" + w.key.NN.Name,
		Source: ir.Source{Kind: w.key.Kind, Namespace: w.key.NN.Namespace, Name: w.key.NN.Name},
	}
	for _, rule := range w.a.route.rules {
		tr.Backends = append(tr.Backends, rule.tlsBackends...)
		tr.InvalidWeight += rule.tlsInvalidWeight
	}
	return tr
}

// shardAdmitsTCP says why the TCPRoute cr may not attach to the shard gw
// ("" when it may). A TCPRoute has no hostname a tenant could hold: it
// takes the listener's whole port. So a shard serves only the TCPRoutes of
// the provider's own namespaces (those carrying no owner marking), never a
// tenant's, whatever the listener's allowedRoutes admit.
func (o *Ownership) shardAdmitsTCP(gw types.NamespacedName, cr *compiledRoute) (reason, msg string) {
	if _, shard := o.Shards[gw]; !shard {
		return "", ""
	}
	if owner, marked := o.NamespaceOwners[cr.key.NN.Namespace]; marked && owner != "" {
		return shardgatev1alpha1.ReasonPortNotOwned,
			fmt.Sprintf("namespace %s belongs to a tenant; a shard serves TCPRoutes only from the provider's namespaces", cr.key.NN.Namespace)
	}
	return "", ""
}

// markTCPRoutes marks every stored TCPRoute in d: their admission on shards
// reads the namespace owners (shardAdmitsTCP), whatever the shard's routes
// mode. A provider has few TCPRoutes, so this costs little. Call with the
// Store's mu held.
func (s *Store) markTCPRoutes(d *dirtySet) {
	for _, r := range s.tcp.list {
		d.Routes.add(RouteKey{Kind: kindTCPRoute, NN: nn(r.Namespace, r.Name)})
	}
}
