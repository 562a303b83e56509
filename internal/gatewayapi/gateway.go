/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/internal/params"
)

// TranslateGateway does all the work for one Gateway: it compiles the
// routes that name it and assembles them. It returns nil when gw is not of
// one of our classes.
func TranslateGateway(idx *Index, gw *gatewayv1.Gateway) *GatewayResult {
	if idx == nil || gw == nil {
		return nil
	}
	res, _ := assembleGateway(idx, gw, idx.compileRoutesOf(nn(gw.Namespace, gw.Name), nil))
	return res
}

// compileRoutesOf compiles the routes whose parentRefs name gw, taking
// compilations already made (by another Gateway of the same translation)
// from done, and recording new ones there when done is not nil.
func (idx *Index) compileRoutesOf(gw types.NamespacedName, done map[RouteKey]*compiledRoute) []*compiledRoute {
	n := len(idx.routesByGW[gw])
	out := make([]*compiledRoute, 0, n)
	// seen holds the routes added for gw: an informer cache holds one
	// object per name, so the first wins. While done is empty, every route
	// in it is one of gw's, and done serves as seen.
	seen, shared := done, done != nil && len(done) == 0
	if !shared {
		seen = make(map[RouteKey]*compiledRoute, n)
	}
	add := func(r Object) {
		rk := routeKindOf(r)
		k := RouteKey{Kind: rk.name, NN: nn(r.GetNamespace(), r.GetName())}
		if _, dup := seen[k]; dup {
			return
		}
		var cr *compiledRoute
		if done != nil && !shared {
			cr = done[k]
		}
		if cr == nil {
			cr = compileRouteOf(idx, rk, r)
			if done != nil && !shared {
				done[k] = cr
			}
		}
		seen[k] = cr
		out = append(out, cr)
	}
	for _, r := range idx.routesByGW[gw] {
		add(r)
	}
	idx.listenerSetRoutes(gw, add)
	return out
}

// assembleGateway translates gw given the compilations of the routes that
// name it: listener validation, route attachment, the Gateway's IR and
// status, and the status entries for those routes. It is a pure function of
// its arguments; the assembly it returns is what the Translator needs to
// patch the result later (see assembly.state). It returns nil when gw is not
// of one of our classes.
func assembleGateway(idx *Index, gw *gatewayv1.Gateway, crs []*compiledRoute) (*GatewayResult, *assembly) {
	ci := idx.classes[string(gw.Spec.GatewayClassName)]
	if ci == nil {
		return nil, nil
	}
	key := nn(gw.Namespace, gw.Name)
	secrets := map[string]*ir.Secret{}
	listeners := idx.buildListeners(gw, secrets)
	sets := idx.buildListenerSets(gw, listeners, secrets)
	all := listeners
	for _, s := range sets {
		all = append(all[:len(all):len(all)], s.listeners...)
	}
	// Automatic HTTPS: the per-name listeners come last, after every real
	// one, and routes naming the Gateway attach to them too.
	if auto := idx.autoTLSListeners(gw, all, crs, secrets); len(auto) > 0 {
		listeners = append(listeners[:len(listeners):len(listeners)], auto...)
		all = append(all[:len(all):len(all)], auto...)
	}

	var acceptReason, acceptMsg string
	switch {
	case !ci.accepted:
		acceptReason, acceptMsg = string(gatewayv1.GatewayReasonInvalidParameters),
			fmt.Sprintf("GatewayClass %s is not accepted: %s", ci.class.Name, ci.message)
	default:
		if msg := idx.gatewayParamsProblem(gw); msg != "" {
			acceptReason, acceptMsg = string(gatewayv1.GatewayReasonInvalidParameters), msg
		} else if msg, refused := idx.shardRefusals[key]; refused {
			acceptReason, acceptMsg = string(gatewayv1.GatewayReasonInvalidParameters), "may not be a shard: "+msg
		} else if msg, tenant := idx.tenantNS[gw.Namespace]; tenant {
			acceptReason, acceptMsg = shardgatev1alpha1.ReasonGatewayInTenantNamespace,
				msg+": a Gateway there gets no provider resources (no Envoy, addresses, pool or xDS certificate); the provider's Gateways live in provider namespaces"
		} else if msg := addressProblem(gw); msg != "" {
			acceptReason, acceptMsg = string(gatewayv1.GatewayReasonUnsupportedAddress), msg
		}
	}

	res := &GatewayResult{Routes: make(map[RouteKey][]ParentEntry, len(crs))}
	pending := make([]*pendingParent, 0, len(crs))
	// A Gateway with ListenerSets is assembled in full on every change
	// (patches know only the Gateway's own listeners).
	patchable := len(sets) == 0
	book := idx.newTenantBook(key, crs)
	for _, cr := range crs {
		if cr.key.Kind != kindHTTPRoute {
			patchable = false
		}
		pending = idx.attach(gw, listeners, sets, cr, pending, book.refusedOf(cr.key))
	}

	for _, l := range all {
		resolveKindConflicts(l)
	}
	idx.finishParents(pending, res)

	st, gwAccepted := idx.gatewayStatus(gw, listeners, acceptReason, acceptMsg)
	gwProgrammed := st.Conditions[1].Status == metav1.ConditionTrue
	lsStatus, nAttached := listenerSetStatuses(sets, gwAccepted, gwProgrammed)
	res.ListenerSets = lsStatus
	setAttachedListenerSets(gw, &st, nAttached)
	res.Status = st
	var b *irBuild
	if gwAccepted {
		b = idx.buildIR(gw, all, secrets)
		res.IR = b.ir
	}
	return res, &assembly{gw: gw, listeners: all, acceptReason: acceptReason, acceptMsg: acceptMsg,
		pending: pending, res: res, build: b, patchable: patchable, book: book}
}

// assembly is what assembling a Gateway worked with.
type assembly struct {
	gw                      *gatewayv1.Gateway
	listeners               []*listenerState
	acceptReason, acceptMsg string
	pending                 []*pendingParent
	res                     *GatewayResult
	build                   *irBuild
	patchable               bool
	book                    *tenantBook // nil: no tenant limits apply
}

// gatewayStatus renders a Gateway's status once its routes are attached,
// and says whether it is accepted.
func (idx *Index) gatewayStatus(gw *gatewayv1.Gateway, listeners []*listenerState, acceptReason, acceptMsg string) (gatewayv1.GatewayStatus, bool) {
	gen := gw.Generation
	key := nn(gw.Namespace, gw.Name)
	var served, invalid []string
	for _, l := range listeners {
		if l.auto {
			continue // no listener of the Gateway's (autotls.go)
		}
		if l.served() {
			served = append(served, l.name)
		} else {
			invalid = append(invalid, l.name)
		}
	}
	anyAccepted := false
	for _, l := range listeners {
		if l.accepted && !l.auto {
			anyAccepted = true
		}
	}

	var accepted metav1.Condition
	typ := string(gatewayv1.GatewayConditionAccepted)
	switch {
	case acceptReason != "":
		accepted = condition(typ, false, acceptReason, acceptMsg, gen)
	case !anyAccepted:
		accepted = condition(typ, false, string(gatewayv1.GatewayReasonListenersNotValid), "No listener is valid: "+strings.Join(invalid, ", "), gen)
	case len(invalid) > 0:
		accepted = condition(typ, true, string(gatewayv1.GatewayReasonListenersNotValid),
			fmt.Sprintf("Invalid listeners: %s; valid listeners: %s", strings.Join(invalid, ", "), strings.Join(served, ", ")), gen)
	default:
		accepted = condition(typ, true, string(gatewayv1.GatewayReasonAccepted), "Gateway is accepted", gen)
	}
	gwAccepted := accepted.Status == metav1.ConditionTrue

	rt := idx.runtime[key]
	typ = string(gatewayv1.GatewayConditionProgrammed)
	var programmed metav1.Condition
	switch {
	case !gwAccepted:
		programmed = condition(typ, false, string(gatewayv1.GatewayReasonInvalid), "Gateway is not accepted", gen)
	case rt.PublishError != "":
		programmed = condition(typ, false, string(gatewayv1.GatewayReasonInvalid), rt.PublishError, gen)
	case rt.AddressReason != "":
		programmed = condition(typ, false, rt.AddressReason, rt.AddressMessage, gen)
	case len(rt.Addresses) == 0:
		programmed = condition(typ, false, string(gatewayv1.GatewayReasonAddressNotAssigned), "No address is assigned to the Gateway yet", gen)
	default:
		programmed = condition(typ, true, string(gatewayv1.GatewayReasonProgrammed), "Gateway is programmed", gen)
	}
	gwProgrammed := programmed.Status == metav1.ConditionTrue

	st := gatewayv1.GatewayStatus{Conditions: []metav1.Condition{accepted, programmed}}
	if refs := idx.gatewayResolvedRefs(gw); refs != nil {
		st.Conditions = append(st.Conditions, *refs)
	}
	for _, a := range rt.Addresses {
		st.Addresses = append(st.Addresses, *a.DeepCopy())
	}
	for _, l := range listeners {
		if l.auto {
			continue
		}
		pendingReason, pendingMsg := string(gatewayv1.ListenerReasonPending), "Gateway is not programmed: "+programmed.Message
		if !gwAccepted {
			pendingReason, pendingMsg = string(gatewayv1.ListenerReasonInvalid), "Gateway is not accepted: "+accepted.Message
		}
		st.Listeners = append(st.Listeners, l.status(gen, gwProgrammed, pendingReason, pendingMsg))
	}
	return st, gwAccepted
}

// gatewayParamsProblem says why spec.infrastructure.parametersRef does not
// resolve.
func (idx *Index) gatewayParamsProblem(gw *gatewayv1.Gateway) string {
	if _, err := params.ResolveGateway(gw, idx.paramsByKey); err != nil {
		return err.Error()
	}
	return ""
}

// addressProblem refuses spec.addresses we cannot honour: only IPAddress
// (the default type) is supported, and its value, when set, must be an IP.
func addressProblem(gw *gatewayv1.Gateway) string {
	for _, a := range gw.Spec.Addresses {
		t := gatewayv1.IPAddressType
		if a.Type != nil {
			t = *a.Type
		}
		if t != gatewayv1.IPAddressType {
			return fmt.Sprintf("address type %q is not supported", t)
		}
		if a.Value != "" {
			if _, err := netip.ParseAddr(a.Value); err != nil {
				return fmt.Sprintf("address %q is not an IP address", a.Value)
			}
		}
	}
	return ""
}

// pendingParent is a parentRef's attachment before HTTPRoute/GRPCRoute
// hostname conflicts are settled.
type pendingParent struct {
	refIndex  int
	ref       gatewayv1.ParentReference
	cr        *compiledRoute
	reason    string
	msg       string
	listeners []*listenerState
}

// attach resolves every parentRef of cr that names gw, or one of the
// ListenerSets naming gw (sets), and records the attachments; their status
// is rendered by finishParents. A parentRef naming the Gateway attaches to
// the Gateway's own listeners only; one naming a ListenerSet, to that
// ListenerSet's listeners only. overLimit, when set, refuses every entry
// that would be accepted (TenantLimitExceeded, with that message).
func (idx *Index) attach(gw *gatewayv1.Gateway, listeners []*listenerState, sets []*lsInfo, cr *compiledRoute, pending []*pendingParent, overLimit string) []*pendingParent {
	key := nn(gw.Namespace, gw.Name)
	for i, ref := range cr.refs {
		set, ours := refParent(key, sets, cr.key.NN.Namespace, ref)
		if !ours {
			continue
		}
		dup := false
		for j := 0; j < i; j++ {
			if reflect.DeepEqual(cr.refs[j], ref) {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		p := &pendingParent{refIndex: i, ref: ref, cr: cr}
		if set == nil {
			p.reason, p.msg, p.listeners = idx.matchParent(gw, listeners, cr, ref)
		} else {
			p.reason, p.msg, p.listeners = idx.matchListenerSet(gw, set, cr, ref)
		}
		limitRefusal(p, overLimit)
		pending = append(pending, p)
	}
	return pending
}

// finishParents renders the status entries once attachments are final.
func (idx *Index) finishParents(pending []*pendingParent, res *GatewayResult) {
	for _, p := range pending {
		if p.reason == "" {
			still := false
			for _, l := range p.listeners {
				if l.attached[p.cr.key] != nil {
					still = true
				}
			}
			if !still {
				p.reason = shardgatev1alpha1.ReasonRouteHostnameConflict
				p.msg = "An older route of the other kind (HTTPRoute/GRPCRoute) claims an intersecting hostname on the listener"
			}
		}
		res.Routes[p.cr.key] = append(res.Routes[p.cr.key], ParentEntry{RefIndex: p.refIndex,
			Status: parentStatus(idx.controllerName, p.ref, p.cr, p.reason, p.msg)})
	}
}

// matchParent attaches cr to the listeners ref selects and returns the
// Accepted reason ("" = accepted).
func (idx *Index) matchParent(gw *gatewayv1.Gateway, listeners []*listenerState, cr *compiledRoute, ref gatewayv1.ParentReference) (string, string, []*listenerState) {
	listeners = autoTLSNarrowed(listeners, cr)
	var candidates []*listenerState
	for _, l := range listeners {
		if ref.SectionName != nil && string(*ref.SectionName) != l.name {
			continue
		}
		if ref.Port != nil && *ref.Port != l.port {
			continue
		}
		candidates = append(candidates, l)
	}
	if len(candidates) == 0 {
		return string(gatewayv1.RouteReasonNoMatchingParent), "No listener matches the parentRef's sectionName and port", nil
	}
	var allowed []*listenerState
	for _, l := range candidates {
		if l.accepted && l.allowsKind(cr.key.Kind) && idx.allowsNamespace(l, cr.key.NN.Namespace) &&
			(!l.auto || idx.realListenerAllows(listeners, cr)) {
			allowed = append(allowed, l)
		}
	}
	if len(allowed) == 0 {
		return string(gatewayv1.RouteReasonNotAllowedByListeners), "No listener allows this route's kind and namespace", nil
	}
	type hit struct {
		l     *listenerState
		hosts []string
	}
	// On a shard, a generated route's names held on other shards are not
	// served here, by any listener (see Ownership.generatedOn).
	gwKey := nn(gw.Namespace, gw.Name)
	g, generated := idx.ownership.generatedOn(gwKey, cr)
	split := generated && len(g.Hosts) > 0
	var hits []hit
	var dropped []string
	for _, l := range allowed {
		if hosts, ok := IntersectHostnames(l.hostname, cr.hostnames); ok {
			if split {
				hosts = slices.DeleteFunc(hosts, func(h string) bool {
					if !g.heldElsewhere(gwKey, h) {
						return false
					}
					if !slices.Contains(dropped, h) {
						dropped = append(dropped, h)
					}
					return true
				})
				if len(hosts) == 0 {
					continue
				}
			}
			hits = append(hits, hit{l, hosts})
		}
	}
	if len(hits) == 0 && len(dropped) > 0 {
		slices.Sort(dropped)
		return shardgatev1alpha1.ReasonHostnameNotOwned, fmt.Sprintf("the generated route's LeaseHost holds none of its hostnames on this shard (%s: held on other shards)",
			strings.Join(dropped, ", ")), nil
	}
	if len(hits) == 0 {
		return string(gatewayv1.RouteReasonNoMatchingListenerHostname), "No listener hostname matches the route's hostnames", nil
	}
	if idx.ownership != nil && cr.key.Kind == kindTCPRoute {
		if reason, msg := idx.ownership.shardAdmitsTCP(nn(gw.Namespace, gw.Name), cr); reason != "" {
			return reason, msg, nil
		}
	} else if idx.ownership != nil {
		var hosts []string
		for _, h := range hits {
			hosts = append(hosts, h.hosts...)
		}
		if reason, msg := idx.ownership.shardAdmits(nn(gw.Namespace, gw.Name), cr, hosts, idx.heldIn); reason != "" {
			return reason, msg, nil
		}
	}
	if cr.allDropped {
		return cr.dropReason, "All rules are invalid: " + strings.Join(cr.dropMsgs, "; "), nil
	}
	for _, h := range hits {
		a := h.l.attached[cr.key]
		if a == nil {
			a = &attachment{route: cr}
			h.l.attached[cr.key] = a
		}
		for _, host := range h.hosts {
			if !slices.Contains(a.hostname, host) {
				a.hostname = append(a.hostname, host)
			}
		}
	}
	attached := make([]*listenerState, 0, len(hits))
	for _, h := range hits {
		attached = append(attached, h.l)
	}
	return "", "", attached
}

func parentStatus(controller string, ref gatewayv1.ParentReference, cr *compiledRoute, reason, msg string) gatewayv1.RouteParentStatus {
	gen := cr.gen
	conds := make([]metav1.Condition, 0, 3)
	if reason == "" {
		conds = append(conds, condition(string(gatewayv1.RouteConditionAccepted), true, string(gatewayv1.RouteReasonAccepted), "Route is accepted", gen))
	} else {
		conds = append(conds, condition(string(gatewayv1.RouteConditionAccepted), false, reason, msg, gen))
	}
	if cr.refsReason == "" {
		conds = append(conds, condition(string(gatewayv1.RouteConditionResolvedRefs), true, string(gatewayv1.RouteReasonResolvedRefs), "All references are resolved", gen))
	} else {
		conds = append(conds, condition(string(gatewayv1.RouteConditionResolvedRefs), false, cr.refsReason, cr.refsMsg, gen))
	}
	if reason == "" && len(cr.dropMsgs) > 0 {
		conds = append(conds, condition(string(gatewayv1.RouteConditionPartiallyInvalid), true, cr.dropReason,
			"Dropped Rule(s): "+strings.Join(cr.dropMsgs, "; "), gen))
	}
	st := gatewayv1.RouteParentStatus{
		ControllerName: gatewayv1.GatewayController(controller),
		Conditions:     conds,
	}
	ref.DeepCopyInto(&st.ParentRef)
	return st
}

// buildIR assembles what the Gateway serves from its served listeners.
// irBuild is a Gateway's IR with what built it, for later patches.
type irBuild struct {
	ir      *ir.Gateway
	groups  []*vhostGroup
	emitted map[RouteKey]bool
	// groupsOf: the groups each listener is in (among their from).
	groupsOf map[*listenerState][]*vhostGroup
}

// addGroup records g, built from g.from.
func (b *irBuild) addGroup(g *vhostGroup) {
	b.groups = append(b.groups, g)
	if b.groupsOf == nil {
		b.groupsOf = map[*listenerState][]*vhostGroup{}
	}
	for _, l := range g.from {
		b.groupsOf[l] = append(b.groupsOf[l], g)
	}
}

func (idx *Index) buildIR(gw *gatewayv1.Gateway, listeners []*listenerState, secrets map[string]*ir.Secret) *irBuild {
	// A whole new IR: its Change says only its number (anything may
	// have changed).
	out := &ir.Gateway{Namespace: gw.Namespace, Name: gw.Name, Traffic: idx.gatewayTraffic(gw),
		Change: &ir.Change{Generation: nextGeneration()}}
	build := &irBuild{ir: out}
	byPort := map[int32][]*listenerState{}
	var ports []int32
	for _, l := range listeners {
		if !l.served() {
			continue
		}
		if _, ok := byPort[l.port]; !ok {
			ports = append(ports, l.port)
		}
		byPort[l.port] = append(byPort[l.port], l)
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i] < ports[j] })
	redirect := idx.autoRedirectOf(gw, listeners)

	attached := 0
	for _, l := range listeners {
		attached += len(l.attached)
	}
	clusters := make(map[string]*ir.Cluster, attached)
	usedSecrets := map[string]bool{}
	emitted := make(map[RouteKey]bool, attached)
	for _, p := range ports {
		ls := byPort[p]
		sort.SliceStable(ls, func(i, j int) bool { return hostnameMoreSpecific(ls[i].hostname, ls[j].hostname) })
		proto := portProtocol(ls)
		il := ir.Listener{Name: strings.ToLower(string(proto)) + "-" + fmt.Sprint(p), Port: p, Protocol: proto}
		for _, l := range ls {
			il.Sources = append(il.Sources, l.irName)
			for _, c := range l.certs {
				usedSecrets[c.Name] = true
			}
			if l.clientValidation != nil {
				usedSecrets[l.clientValidation.CA.Name] = true
			}
		}
		sort.Strings(il.Sources)
		switch proto {
		case ir.ProtocolHTTP:
			g := newVhostGroupRedirecting(ls, ls, p, emitted, redirect)
			g.listener, g.server = len(out.Listeners), -1
			build.addGroup(g)
			il.VirtualHosts = g.hosts
		case ir.ProtocolHTTPS:
			for _, l := range ls {
				srv := ir.TLSServer{Name: l.irName, Certificates: l.certs, ClientValidation: l.clientValidation}
				if l.hostname != "" {
					srv.SNI = []string{l.hostname}
				}
				g := newVhostGroup(ls, []*listenerState{l}, p, emitted)
				g.hosts = withMisdirected(g.hosts, nn(gw.Namespace, gw.Name), ls, l)
				g.listener, g.server = len(out.Listeners), len(il.TLSServers)
				build.addGroup(g)
				srv.VirtualHosts = g.hosts
				il.TLSServers = append(il.TLSServers, srv)
			}
		case ir.ProtocolTLSPassthrough, ir.ProtocolTLSTerminate, ir.ProtocolTLSMixed:
			il.TLSRoutes = tlsRoutes(ls, emitted)
		case ir.ProtocolTCP:
			il.TCPRoute = tcpRoute(ls, emitted)
		}
		out.Listeners = append(out.Listeners, il)
	}

	// Clusters of the routes that made it into the IR, each route once.
	// The order does not matter: a cluster takes the most capable
	// protocol, and WebSocket if any backend asks for it.
	withRoutes := 0
	for _, l := range listeners {
		if len(l.attached) > 0 {
			withRoutes++
		}
	}
	var done map[*compiledRoute]bool // a route attached to one listener comes once
	if withRoutes > 1 {
		done = make(map[*compiledRoute]bool, len(emitted))
	}
	for _, l := range listeners {
		for k, a := range l.attached {
			if !emitted[k] || done[a.route] {
				continue
			}
			if done != nil {
				done[a.route] = true
			}
			for _, b := range a.route.backends {
				idx.addCluster(gw, clusters, b)
			}
		}
	}
	for _, c := range clusters {
		out.Clusters = append(out.Clusters, c)
	}
	sort.Slice(out.Clusters, func(i, j int) bool { return out.Clusters[i].Name < out.Clusters[j].Name })
	for name := range usedSecrets {
		if s, ok := secrets[name]; ok {
			out.Secrets = append(out.Secrets, *s)
		}
	}
	// The backend client certificate, presented to TLS backends.
	if cc := idx.backendClientCert(gw); cc.secret != "" && !usedSecrets[cc.secret] {
		out.Secrets = append(out.Secrets, ir.Secret{Name: cc.secret, Cert: cc.cert, Key: cc.key})
	}
	sort.Slice(out.Secrets, func(i, j int) bool { return out.Secrets[i].Name < out.Secrets[j].Name })
	build.emitted = emitted
	return build
}

func routeKeyLess(a, b RouteKey) bool {
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	return nsNameLess(a.NN.Namespace, a.NN.Name, b.NN.Namespace, b.NN.Name)
}

// virtualHosts builds the virtual hosts for the routes attached to the
// listeners in from, keeping only hostnames those listeners own on the port.
// A request is matched by Envoy to exactly one virtual host, so the host for
// foo.example.com also carries (after its own) the routes of the wildcard
// hosts covering it that the same listener owns.
func virtualHosts(port, from []*listenerState, portNum int32, emitted map[RouteKey]bool) []*ir.VirtualHost {
	return newVhostGroup(port, from, portNum, emitted).hosts
}

// vhostGroup is the virtual host table of one route configuration (an HTTP
// port, or one TLS server of an HTTPS port), kept so that a change of a few
// routes can rebuild only their virtual hosts (see patch.go).
type vhostGroup struct {
	port, from []*listenerState
	portNum    int32
	entries    map[string][]*routeEntry
	owners     map[string]*listenerState
	listenerHn map[string]bool
	byRoute    map[RouteKey][]string // the hosts a route has entries under
	hosts      []*ir.VirtualHost     // sorted by domain; shared by the IRs that hold them
	// where the hosts go in the IR: Listeners[listener], and its
	// TLSServers[server] unless server is -1.
	listener, server int
	// redirect: the hosts an HTTP port redirects to HTTPS (nil: none).
	redirect *autoRedirect
}

func newVhostGroup(port, from []*listenerState, portNum int32, emitted map[RouteKey]bool) *vhostGroup {
	return newVhostGroupRedirecting(port, from, portNum, emitted, nil)
}

// newVhostGroupRedirecting is newVhostGroup for an HTTP port whose hosts
// served on HTTPS by automatic HTTPS redirect there (redirect, may be nil).
func newVhostGroupRedirecting(port, from []*listenerState, portNum int32, emitted map[RouteKey]bool, redirect *autoRedirect) *vhostGroup {
	n := 0
	for _, l := range from {
		n += len(l.attached)
	}
	g := &vhostGroup{port: port, from: from, portNum: portNum,
		entries: make(map[string][]*routeEntry, n+len(from)), owners: make(map[string]*listenerState, n+len(from)),
		listenerHn: map[string]bool{}, byRoute: make(map[RouteKey][]string, n), redirect: redirect}
	for _, l := range from {
		if _, ok := g.entries[l.hostname]; !ok {
			g.entries[l.hostname] = nil
			g.owners[l.hostname] = l
		}
		g.listenerHn[l.hostname] = true
	}
	for _, l := range from {
		for k, a := range l.attached {
			if g.addRoute(l, k, a) {
				emitted[k] = true
			}
		}
	}
	names := make([]string, 0, len(g.entries))
	for h := range g.entries {
		names = append(names, h)
	}
	sort.Slice(names, func(i, j int) bool { return domain(names[i]) < domain(names[j]) })
	g.hosts = make([]*ir.VirtualHost, 0, len(names))
	for _, h := range names {
		g.hosts = append(g.hosts, g.assemble(h))
	}
	return g
}

// addRoute adds the entries of route k, attached to l, under the hosts l
// owns, and reports whether there were any.
func (g *vhostGroup) addRoute(l *listenerState, k RouteKey, a *attachment) bool {
	added := false
	for _, h := range a.hostname {
		if owner(g.port, h) != l {
			continue
		}
		g.owners[h] = l
		for _, rule := range a.route.rules {
			for mi := range rule.routes {
				r, run := &rule.routes[mi], rule.routes
				if rd := redirectPort(r.Redirect, g.portNum); rd != r.Redirect {
					c := *r
					c.Redirect = rd
					r, run = &c, nil
				}
				e := &routeEntry{
					route: r, run: run, host: h, created: a.route.created, kind: k.Kind,
					ns: k.NN.Namespace, name: k.NN.Name, rule: rule.index, match: mi,
				}
				if mi < len(rule.grpcKeys) {
					e.grpc = &rule.grpcKeys[mi]
				}
				g.entries[h] = append(g.entries[h], e)
			}
		}
		g.byRoute[k] = append(g.byRoute[k], h)
		added = true
	}
	return added
}

// assemble builds the virtual host for h from the entries.
func (g *vhostGroup) assemble(h string) *ir.VirtualHost {
	vh := g.assembleRoutes(h)
	g.redirect.apply(vh, h)
	return vh
}

// assembleRoutes builds the virtual host for h from the entries.
func (g *vhostGroup) assembleRoutes(h string) *ir.VirtualHost {
	es := g.entries[h]
	merged := false
	if h != "" {
		own := g.owners[h]
		var buf [256]byte
		for c, rest, ok := coverNext(coverStart(h), buf[:0]); ok; c, rest, ok = coverNext(rest, buf[:0]) {
			if ce := g.entries[string(c)]; len(ce) > 0 && g.owners[string(c)] == own {
				es = append(es[:len(es):len(es)], ce...)
				merged = true
			}
		}
		if ce := g.entries[""]; len(ce) > 0 && g.owners[""] == own {
			es = append(es[:len(es):len(es)], ce...)
			merged = true
		}
	}
	if len(es) > 1 {
		es = slices.Clone(es) // sort a copy: entries[h] stays in insertion order
		slices.SortFunc(es, func(a, b *routeEntry) int {
			if routeLess(a, b) {
				return -1
			}
			if routeLess(b, a) {
				return 1
			}
			return 0
		})
	}
	d := domain(h)
	vh := &ir.VirtualHost{Name: d, Domains: []string{d}}
	if merged {
		// A route reached through two of its hostnames (foo.example.com
		// and *.example.com) is kept once, at its most specific place.
		seen := make(map[string]bool, len(es))
		kept := make([]*routeEntry, 0, len(es))
		for _, e := range es {
			if !seen[e.route.Name] {
				seen[e.route.Name] = true
				kept = append(kept, e)
			}
		}
		es = kept
	}
	if len(es) == 0 {
		return vh
	}
	if run := sharedRun(es); run != nil {
		vh.Routes = run
		return vh
	}
	vh.Routes = make([]ir.Route, 0, len(es))
	for _, e := range es {
		vh.Routes = append(vh.Routes, *e.route)
	}
	return vh
}

// sharedRun returns the routes of es as the compiled slice they come from,
// when they are consecutive matches of one compiled rule in order (a host
// served by one simple route): the IR then shares the compilation's
// routes instead of copying them. Outputs are read-only, so sharing is
// safe.
func sharedRun(es []*routeEntry) []ir.Route {
	first := es[0]
	if first.run == nil {
		return nil
	}
	for i, e := range es {
		if e.run == nil || &e.run[0] != &first.run[0] || e.match != first.match+i {
			return nil
		}
	}
	lo, hi := first.match, first.match+len(es)
	return first.run[lo:hi:hi]
}
