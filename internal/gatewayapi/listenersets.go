/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/ir"
)

const kindListenerSet = "ListenerSet"

// lsInfo is one ListenerSet whose parentRef names the Gateway being
// assembled.
type lsInfo struct {
	ls  *gatewayv1.ListenerSet
	key types.NamespacedName
	// allowed: the Gateway's allowedListeners admits its namespace; only
	// then are its listeners merged.
	allowed   bool
	listeners []*listenerState
}

// refListenerSet says which ListenerSet a route parentRef names, if it
// names one (kind ListenerSet of the Gateway API group).
func refListenerSet(routeNS string, ref gatewayv1.ParentReference) (types.NamespacedName, bool) {
	if ref.Kind == nil || string(*ref.Kind) != kindListenerSet {
		return types.NamespacedName{}, false
	}
	if ref.Group != nil && string(*ref.Group) != groupGateway {
		return types.NamespacedName{}, false
	}
	ns := routeNS
	if ref.Namespace != nil && *ref.Namespace != "" {
		ns = string(*ref.Namespace)
	}
	return nn(ns, string(ref.Name)), true
}

// parentListenerSets lists the distinct ListenerSets a route's parentRefs
// name.
func parentListenerSets(routeNS string, refs []gatewayv1.ParentReference) []types.NamespacedName {
	var out []types.NamespacedName
	for _, ref := range refs {
		if k, ok := refListenerSet(routeNS, ref); ok {
			out = appendUnique(out, k)
		}
	}
	return out
}

// listenerSetParent is the Gateway a ListenerSet's parentRef names, if it
// names one.
func listenerSetParent(ls *gatewayv1.ListenerSet) (types.NamespacedName, bool) {
	if ls == nil {
		return types.NamespacedName{}, false
	}
	ref := ls.Spec.ParentRef
	if ref.Group != nil && string(*ref.Group) != groupGateway {
		return types.NamespacedName{}, false
	}
	if ref.Kind != nil && string(*ref.Kind) != kindGateway {
		return types.NamespacedName{}, false
	}
	if ref.Name == "" {
		return types.NamespacedName{}, false
	}
	ns := ls.Namespace
	if ref.Namespace != nil && *ref.Namespace != "" {
		ns = string(*ref.Namespace)
	}
	return nn(ns, string(ref.Name)), true
}

// sortListenerSets orders ListenerSets by precedence: the oldest first,
// then by namespace/name.
func sortListenerSets(list []*gatewayv1.ListenerSet) {
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return nsNameLess(a.Namespace, a.Name, b.Namespace, b.Name)
	})
}

// listenerSetsOf returns the ListenerSets whose parentRef names gw, in
// precedence order.
func (idx *Index) listenerSetsOf(gw types.NamespacedName) []*gatewayv1.ListenerSet {
	if idx.lsOf != nil {
		return idx.lsOf(gw)
	}
	return idx.lsByGW[gw]
}

// allowedListenersFrom is the Gateway's allowedListeners.namespaces.from
// (None when unset) and its selector.
func allowedListenersFrom(gw *gatewayv1.Gateway) (gatewayv1.FromNamespaces, labels.Selector) {
	al := gw.Spec.AllowedListeners
	if al == nil || al.Namespaces == nil || al.Namespaces.From == nil {
		return gatewayv1.NamespacesFromNone, nil
	}
	from := *al.Namespaces.From
	var sel labels.Selector
	if from == gatewayv1.NamespacesFromSelector && al.Namespaces.Selector != nil {
		if s, err := metav1.LabelSelectorAsSelector(al.Namespaces.Selector); err == nil {
			sel = s
		}
	}
	return from, sel
}

// allowsListenerSets says whether gw admits ListenerSets from any
// namespace at all.
func allowsListenerSets(gw *gatewayv1.Gateway) bool {
	from, _ := allowedListenersFrom(gw)
	switch from {
	case gatewayv1.NamespacesFromAll, gatewayv1.NamespacesFromSame, gatewayv1.NamespacesFromSelector:
		return true
	}
	return false
}

// allowsListenerSet applies gw's allowedListeners to a ListenerSet
// namespace.
func (idx *Index) allowsListenerSet(gw *gatewayv1.Gateway, ns string) bool {
	from, sel := allowedListenersFrom(gw)
	return idx.fromAllows(from, sel, gw.Namespace, ns)
}

// buildListenerSets validates the listeners of the ListenerSets naming gw
// and merges them after the Gateway's own (gwListeners): ListenerSets in
// precedence order, each one's listeners in order. A listener is
// Conflicted when a listener before it (any of the Gateway's, or an
// accepted one of an earlier ListenerSet) uses its port with another
// protocol, or its port and hostname; it must use a port of the Gateway's
// listeners (the Envoy Service exposes those); on a shard, its hostname
// must be held by the owner of the ListenerSet's namespace.
func (idx *Index) buildListenerSets(gw *gatewayv1.Gateway, gwListeners []*listenerState, secrets map[string]*ir.Secret) []*lsInfo {
	gwKey := nn(gw.Namespace, gw.Name)
	list := idx.listenerSetsOf(gwKey)
	if len(list) == 0 {
		return nil
	}
	ports := map[int32]bool{}
	var est []*listenerState
	for _, l := range gwListeners {
		ports[l.port] = true
		if l.proto != "" {
			est = append(est, l)
		}
	}
	_, shard := idx.ownership.shards()[gwKey]
	out := make([]*lsInfo, 0, len(list))
	for _, ls := range list {
		info := &lsInfo{ls: ls, key: nn(ls.Namespace, ls.Name)}
		out = append(out, info)
		if !idx.allowsListenerSet(gw, ls.Namespace) {
			continue
		}
		info.allowed = true
		for i := range ls.Spec.Listeners {
			e := &ls.Spec.Listeners[i]
			spec := &gatewayv1.Listener{Name: e.Name, Hostname: e.Hostname, Port: e.Port, Protocol: e.Protocol,
				TLS: e.TLS, AllowedRoutes: e.AllowedRoutes}
			l := idx.buildListener(gw, spec, kindListenerSet, ls.Namespace, ls.Namespace+"/"+ls.Name+"/"+string(e.Name), secrets)
			l.set = info
			info.listeners = append(info.listeners, l)
			if reason, msg := listenerSetConflict(est, l); reason != "" {
				l.conflict(reason, msg)
				continue
			}
			if !l.accepted {
				continue
			}
			if !ports[l.port] {
				l.reject(string(gatewayv1.ListenerReasonPortUnavailable),
					fmt.Sprintf("port %d is not a port of the parent Gateway's listeners", l.port))
				continue
			}
			if shard {
				if why := idx.ownership.listenerHostnameProblem(ls.Namespace, l.hostname); why != "" {
					l.reject(shardgatev1alpha1.ReasonHostnameNotOwned, why)
					continue
				}
			}
			est = append(est, l)
		}
	}
	return out
}

func (l *listenerState) reject(reason, msg string) {
	l.accepted = false
	l.acceptedReason = reason
	l.acceptedMsg = msg
}

// protoKey is what must be equal for two listeners to share a port.
func protoKey(l *listenerState) string {
	if l.proto != "" {
		return string(l.proto)
	}
	return "unsupported/" + string(l.spec.Protocol)
}

// listenerSetConflict says whether l conflicts with a listener of higher
// precedence. The message names no other listener: a ListenerSet's author
// may not be allowed to read the Gateway or the other ListenerSets.
func listenerSetConflict(est []*listenerState, l *listenerState) (string, string) {
	for _, e := range est {
		if e.port == l.port && protoKey(e) != protoKey(l) {
			return string(gatewayv1.ListenerReasonProtocolConflict),
				fmt.Sprintf("port %d is used with another protocol by a listener of higher precedence", l.port)
		}
	}
	for _, e := range est {
		if e.port == l.port && e.hostname == l.hostname {
			return string(gatewayv1.ListenerReasonHostnameConflict),
				fmt.Sprintf("hostname %s is used on port %d by a listener of higher precedence", domain(l.hostname), l.port)
		}
	}
	return "", ""
}

// shards returns the shard map (nil Ownership: none).
func (o *Ownership) shards() map[types.NamespacedName]ShardRoutes {
	if o == nil {
		return nil
	}
	return o.Shards
}

// listenerHostnameProblem says why a listener of a ListenerSet in
// namespace ns may not have hostname h on a shard ("" when it may): the
// owner of ns must hold the name (a wildcard: its domain, with no blocked
// name or other owner's name below it), and the name must not be blocked.
// A listener without hostname would catch every name: never.
func (o *Ownership) listenerHostnameProblem(ns, h string) string {
	if h == "" {
		return "a ListenerSet listener on a shard needs a hostname (without one it would catch every name)"
	}
	owner, marked := o.NamespaceOwners[ns]
	if !marked || owner == "" {
		return fmt.Sprintf("namespace %s carries no owner marking, so it owns no hostname", ns)
	}
	name := h
	if isWildcard(h) {
		name = h[2:]
	}
	if entry, blocked := o.Blocked.Match(name); blocked {
		return fmt.Sprintf("%s: blocked by %q", h, entry)
	}
	if why := o.ownerMayServe(owner, h); why != "" {
		return fmt.Sprintf("%s: %s", h, why)
	}
	return ""
}

// findSet returns the ListenerSet k among sets, or nil.
func findSet(sets []*lsInfo, k types.NamespacedName) *lsInfo {
	for _, s := range sets {
		if s.key == k {
			return s
		}
	}
	return nil
}

// listenerSetStatuses renders the status of each ListenerSet naming the
// Gateway once routes are attached, and counts those Accepted. The
// Gateway's own messages are not repeated: they may carry what the
// ListenerSet's author may not read (the Gateway's parameters, a refused
// configuration naming other tenants' routes).
func listenerSetStatuses(sets []*lsInfo, gwAccepted, gwProgrammed bool) (map[types.NamespacedName]gatewayv1.ListenerSetStatus, int32) {
	if len(sets) == 0 {
		return nil, 0
	}
	out := make(map[types.NamespacedName]gatewayv1.ListenerSetStatus, len(sets))
	var attached int32
	acc, prog := string(gatewayv1.ListenerSetConditionAccepted), string(gatewayv1.ListenerSetConditionProgrammed)
	for _, s := range sets {
		gen := s.ls.Generation
		if !s.allowed {
			msg := "The parent Gateway's allowedListeners does not admit ListenerSets from this namespace"
			out[s.key] = gatewayv1.ListenerSetStatus{Conditions: []metav1.Condition{
				condition(acc, false, string(gatewayv1.ListenerSetReasonNotAllowed), msg, gen),
				condition(prog, false, string(gatewayv1.ListenerSetReasonNotAllowed), msg, gen),
			}}
			continue
		}
		var served, invalid []string
		for _, l := range s.listeners {
			if l.served() {
				served = append(served, l.name)
			} else {
				invalid = append(invalid, l.name)
			}
		}
		var a, p metav1.Condition
		pendingReason, pendingMsg := string(gatewayv1.ListenerReasonPending), "The parent Gateway is not programmed yet"
		switch {
		case !gwAccepted:
			msg := "The parent Gateway is not accepted"
			a = condition(acc, false, string(gatewayv1.ListenerSetReasonParentNotAccepted), msg, gen)
			p = condition(prog, false, string(gatewayv1.ListenerSetReasonInvalid), msg, gen)
			pendingReason, pendingMsg = string(gatewayv1.ListenerReasonInvalid), msg
		case len(served) == 0:
			msg := "No listener is valid: " + strings.Join(invalid, ", ")
			a = condition(acc, false, string(gatewayv1.ListenerSetReasonListenersNotValid), msg, gen)
			p = condition(prog, false, string(gatewayv1.ListenerSetReasonListenersNotValid), msg, gen)
		default:
			attached++
			if len(invalid) > 0 {
				a = condition(acc, true, string(gatewayv1.ListenerSetReasonListenersNotValid),
					fmt.Sprintf("Invalid listeners: %s; valid listeners: %s", strings.Join(invalid, ", "), strings.Join(served, ", ")), gen)
			} else {
				a = condition(acc, true, string(gatewayv1.ListenerSetReasonAccepted), "ListenerSet is accepted", gen)
			}
			if gwProgrammed {
				p = condition(prog, true, string(gatewayv1.ListenerSetReasonProgrammed), "ListenerSet is programmed", gen)
			} else {
				p = condition(prog, false, string(gatewayv1.ListenerSetReasonPending), pendingMsg, gen)
			}
		}
		st := gatewayv1.ListenerSetStatus{Conditions: []metav1.Condition{a, p}}
		for _, l := range s.listeners {
			ls := l.status(gen, gwProgrammed && gwAccepted, pendingReason, pendingMsg)
			st.Listeners = append(st.Listeners, gatewayv1.ListenerEntryStatus{
				Name: ls.Name, SupportedKinds: ls.SupportedKinds, AttachedRoutes: ls.AttachedRoutes, Conditions: ls.Conditions,
			})
		}
		out[s.key] = st
	}
	return out, attached
}

// setAttachedListenerSets reports n attached ListenerSets in st when gw
// admits ListenerSets at all (or some are attached).
func setAttachedListenerSets(gw *gatewayv1.Gateway, st *gatewayv1.GatewayStatus, n int32) {
	if allowsListenerSets(gw) || n > 0 {
		st.AttachedListenerSets = &n
	}
}

// listenerSetRoutes hands add the routes (NewIndex only) whose parentRefs
// name a ListenerSet naming gw.
func (idx *Index) listenerSetRoutes(gw types.NamespacedName, add func(Object)) {
	for _, ls := range idx.listenerSetsOf(gw) {
		for _, r := range idx.routesByLS[nn(ls.Namespace, ls.Name)] {
			add(r)
		}
	}
}

// refParent says whether a route parentRef names the Gateway gw or one of
// the ListenerSets naming it (sets), and which ListenerSet (nil: gw).
func refParent(gw types.NamespacedName, sets []*lsInfo, routeNS string, ref gatewayv1.ParentReference) (*lsInfo, bool) {
	if g, ok := refGateway(routeNS, ref); ok {
		return nil, g == gw
	}
	if k, ok := refListenerSet(routeNS, ref); ok {
		if set := findSet(sets, k); set != nil {
			return set, true
		}
	}
	return nil, false
}

// matchListenerSet attaches cr to the listeners of the ListenerSet set
// that ref selects; a ListenerSet the Gateway does not admit has none.
func (idx *Index) matchListenerSet(gw *gatewayv1.Gateway, set *lsInfo, cr *compiledRoute, ref gatewayv1.ParentReference) (string, string, []*listenerState) {
	if !set.allowed {
		return string(gatewayv1.RouteReasonNotAllowedByListeners),
			"The ListenerSet is not allowed by its parent Gateway's allowedListeners", nil
	}
	return idx.matchParent(gw, set.listeners, cr, ref)
}
