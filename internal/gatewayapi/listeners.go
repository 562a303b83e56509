/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"crypto/tls"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/ir"
)

// listenerState is one Gateway listener being validated and filled.
type listenerState struct {
	spec     *gatewayv1.Listener
	name     string
	irName   string  // its name in the IR: unique among the Gateway's listeners and those of its ListenerSets
	ns       string  // the namespace of its Gateway or ListenerSet ("Same" for routes, certificateRefs)
	set      *lsInfo // the ListenerSet it comes from; nil for the Gateway's own
	port     int32
	hostname string      // "" = any
	proto    ir.Protocol // "" = unsupported protocol
	kinds    []gatewayv1.RouteGroupKind

	// accepted: routes may attach. served: it goes into the IR.
	accepted       bool
	acceptedReason string
	acceptedMsg    string
	conflictReason string // "" = no conflict
	refsReason     string // "" = resolved
	refsMsg        string
	certProblem    bool // a certificateRef failed: the listener cannot be served

	nsFrom     gatewayv1.FromNamespaces
	nsSelector labels.Selector // nil with From=Selector means: matches nothing

	certs []ir.SecretRef
	// clientValidation is the frontend client certificate validation of
	// an HTTPS listener (nil: none).
	clientValidation *ir.ClientValidation

	// attached routes, by route; hostnames are the intersection.
	attached map[RouteKey]*attachment

	// auto: a per-name HTTPS listener of automatic HTTPS (autotls.go),
	// made for the generated route autoFor. It is served like any
	// listener but is no listener of the Gateway's: it has no spec and no
	// status.
	auto    bool
	autoFor RouteKey
}

type attachment struct {
	route *compiledRoute
	// hostname lists the request hostnames it serves there, each once (a
	// route has few).
	hostname []string
}

func (l *listenerState) served() bool {
	return l.accepted && !l.certProblem
}

// kindsForProtocol are the route kinds a listener of protocol p takes.
func kindsForProtocol(p ir.Protocol) []string { return kindsByProtocol[p] }

// buildListeners validates every listener of gw: protocol, route kinds,
// namespaces, certificates and conflicts. Secrets it accepts are added to
// secrets.
func (idx *Index) buildListeners(gw *gatewayv1.Gateway, secrets map[string]*ir.Secret) []*listenerState {
	out := make([]*listenerState, 0, len(gw.Spec.Listeners))
	for i := range gw.Spec.Listeners {
		l := &gw.Spec.Listeners[i]
		out = append(out, idx.buildListener(gw, l, kindGateway, gw.Namespace, string(l.Name), secrets))
	}
	markConflicts(out)
	return out
}

// buildListener validates one listener of Gateway gw or of a ListenerSet
// (kind) of gw in namespace ns: protocol, route kinds, namespaces and
// certificates (resolved from ns, ReferenceGrants from kind), and for HTTPS
// the client certificate validation gw's spec.tls.frontend sets for the
// port. irName names it in the IR.
func (idx *Index) buildListener(gw *gatewayv1.Gateway, l *gatewayv1.Listener, kind, ns, irName string, secrets map[string]*ir.Secret) *listenerState {
	ls := &listenerState{
		spec:     l,
		name:     string(l.Name),
		irName:   irName,
		ns:       ns,
		port:     l.Port,
		attached: map[RouteKey]*attachment{},
		accepted: true,
	}
	if l.Hostname != nil {
		ls.hostname = strings.ToLower(string(*l.Hostname))
	}
	switch l.Protocol {
	case gatewayv1.HTTPProtocolType:
		ls.proto = ir.ProtocolHTTP
	case gatewayv1.HTTPSProtocolType:
		ls.proto = ir.ProtocolHTTPS
	case gatewayv1.TLSProtocolType:
		ls.proto = ir.ProtocolTLSTerminate
		if l.TLS != nil && l.TLS.Mode != nil && *l.TLS.Mode == gatewayv1.TLSModePassthrough {
			ls.proto = ir.ProtocolTLSPassthrough
		}
	case gatewayv1.TCPProtocolType:
		// A TCP listener matches connections by port alone: its hostname,
		// if any, is ignored, so two TCP listeners on a port conflict.
		ls.proto = ir.ProtocolTCP
		ls.hostname = ""
	}
	if ls.proto == "" {
		ls.accepted = false
		ls.acceptedReason = string(gatewayv1.ListenerReasonUnsupportedProtocol)
		ls.acceptedMsg = fmt.Sprintf("protocol %q is not supported", l.Protocol)
		ls.kinds = []gatewayv1.RouteGroupKind{}
		return ls
	}
	if ls.proto == ir.ProtocolHTTPS && l.TLS != nil && l.TLS.Mode != nil && *l.TLS.Mode == gatewayv1.TLSModePassthrough {
		ls.accepted = false
		ls.acceptedReason = string(gatewayv1.ListenerReasonUnsupportedValue)
		ls.acceptedMsg = "HTTPS listeners support only tls.mode Terminate"
	}
	idx.listenerKinds(ls)
	idx.listenerNamespaces(ls)
	if ls.proto == ir.ProtocolHTTPS || ls.proto == ir.ProtocolTLSTerminate {
		idx.listenerCerts(kind, ns, ls, secrets)
	}
	if ls.proto == ir.ProtocolHTTPS {
		idx.listenerClientValidation(gw, ls, secrets)
	}
	return ls
}

// listenerKinds computes supportedKinds and InvalidRouteKinds.
func (idx *Index) listenerKinds(ls *listenerState) {
	valid := kindsForProtocol(ls.proto)
	ls.kinds = []gatewayv1.RouteGroupKind{}
	if ls.spec.AllowedRoutes == nil || len(ls.spec.AllowedRoutes.Kinds) == 0 {
		for _, k := range valid {
			ls.kinds = append(ls.kinds, routeGroupKind(k))
		}
		return
	}
	var bad []string
	for _, k := range ls.spec.AllowedRoutes.Kinds {
		g := groupGateway
		if k.Group != nil {
			g = string(*k.Group)
		}
		ok := false
		if g == groupGateway {
			for _, v := range valid {
				if string(k.Kind) == v {
					ok = true
				}
			}
		}
		if !ok {
			bad = append(bad, g+"/"+string(k.Kind))
			continue
		}
		dup := false
		for _, have := range ls.kinds {
			if have.Kind == k.Kind {
				dup = true
			}
		}
		if !dup {
			ls.kinds = append(ls.kinds, routeGroupKind(string(k.Kind)))
		}
	}
	if len(bad) > 0 {
		ls.refsReason = string(gatewayv1.ListenerReasonInvalidRouteKinds)
		ls.refsMsg = "route kinds not supported on this listener: " + strings.Join(bad, ", ")
	}
}

func routeGroupKind(kind string) gatewayv1.RouteGroupKind {
	g := gatewayv1.Group(groupGateway)
	return gatewayv1.RouteGroupKind{Group: &g, Kind: gatewayv1.Kind(kind)}
}

func (ls *listenerState) allowsKind(kind string) bool {
	for _, k := range ls.kinds {
		if string(k.Kind) == kind {
			return true
		}
	}
	return false
}

func (idx *Index) listenerNamespaces(ls *listenerState) {
	ls.nsFrom = gatewayv1.NamespacesFromSame
	ar := ls.spec.AllowedRoutes
	if ar == nil || ar.Namespaces == nil || ar.Namespaces.From == nil {
		return
	}
	ls.nsFrom = *ar.Namespaces.From
	if ls.nsFrom == gatewayv1.NamespacesFromSelector && ar.Namespaces.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(ar.Namespaces.Selector)
		if err == nil {
			ls.nsSelector = sel
		}
	}
}

// allowsNamespace applies allowedRoutes.namespaces to a route namespace
// ("Same" is the namespace of the listener's Gateway or ListenerSet).
func (idx *Index) allowsNamespace(ls *listenerState, routeNS string) bool {
	return idx.fromAllows(ls.nsFrom, ls.nsSelector, ls.ns, routeNS)
}

// fromAllows applies a From (with its selector) of an object in namespace
// own to namespace ns.
func (idx *Index) fromAllows(from gatewayv1.FromNamespaces, sel labels.Selector, own, ns string) bool {
	switch from {
	case gatewayv1.NamespacesFromAll:
		return true
	case gatewayv1.NamespacesFromSame:
		return own == ns
	case gatewayv1.NamespacesFromSelector:
		if sel == nil {
			return false
		}
		o, ok := idx.namespaces[ns]
		if !ok {
			return false
		}
		return sel.Matches(labels.Set(o.Labels))
	}
	return false
}

// listenerCerts resolves certificateRefs for a terminating listener of a
// kind (Gateway, ListenerSet) in namespace own: a Secret in another
// namespace needs a ReferenceGrant from that kind there. Every ref must
// resolve; the first failure is reported.
func (idx *Index) listenerCerts(kind, own string, ls *listenerState, secrets map[string]*ir.Secret) {
	if ls.spec.TLS == nil || len(ls.spec.TLS.CertificateRefs) == 0 {
		ls.setRefs(string(gatewayv1.ListenerReasonInvalidCertificateRef), "no certificateRefs")
		return
	}
	for _, ref := range ls.spec.TLS.CertificateRefs {
		group, refKind := "", kindSecret
		if ref.Group != nil {
			group = string(*ref.Group)
		}
		if ref.Kind != nil {
			refKind = string(*ref.Kind)
		}
		ns := own
		if ref.Namespace != nil && *ref.Namespace != "" {
			ns = string(*ref.Namespace)
		}
		if group != "" || refKind != kindSecret {
			ls.setRefs(string(gatewayv1.ListenerReasonInvalidCertificateRef),
				fmt.Sprintf("certificateRef %s/%s %s: only core Secrets are supported", group, refKind, ref.Name))
			continue
		}
		if ns != own && !idx.granted(groupGateway, kind, own, "", kindSecret, ns, string(ref.Name)) {
			ls.setRefs(string(gatewayv1.ListenerReasonRefNotPermitted),
				fmt.Sprintf("Secret %s/%s is not permitted by any ReferenceGrant", ns, ref.Name))
			continue
		}
		sec, ok := idx.secrets[nn(ns, string(ref.Name))]
		if !ok {
			ls.setRefs(string(gatewayv1.ListenerReasonInvalidCertificateRef),
				fmt.Sprintf("Secret %s/%s not found", ns, ref.Name))
			continue
		}
		if msg := tlsSecretProblem(sec); msg != "" {
			ls.setRefs(string(gatewayv1.ListenerReasonInvalidCertificateRef),
				fmt.Sprintf("Secret %s/%s: %s", ns, ref.Name, msg))
			continue
		}
		name := ns + "/" + string(ref.Name)
		if _, ok := secrets[name]; !ok {
			secrets[name] = &ir.Secret{Name: name, Cert: sec.Data[corev1.TLSCertKey], Key: sec.Data[corev1.TLSPrivateKeyKey]}
		}
		ls.certs = append(ls.certs, ir.SecretRef{Name: name})
	}
}

func (ls *listenerState) setRefs(reason, msg string) {
	ls.certProblem = true
	if ls.refsReason == "" {
		ls.refsReason, ls.refsMsg = reason, msg
	}
}

// tlsSecretProblem says why a Secret cannot serve as a certificate.
func tlsSecretProblem(s *corev1.Secret) string {
	if s.Type != corev1.SecretTypeTLS {
		return fmt.Sprintf("type %s is not %s", s.Type, corev1.SecretTypeTLS)
	}
	crt, key := s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
	if len(crt) == 0 || len(key) == 0 {
		return "missing tls.crt or tls.key"
	}
	if _, err := tls.X509KeyPair(crt, key); err != nil {
		return "invalid certificate or key: " + err.Error()
	}
	return ""
}

// markConflicts applies the listener conflict rules: on one port every
// listener must speak the same protocol, TLS Terminate and Passthrough
// counting as one (else all are ProtocolConflict; see compatibleProtocols),
// and
// hostnames must be distinct (else all sharing one are HostnameConflict). No
// winner is picked among indistinct listeners.
func markConflicts(ls []*listenerState) {
	byPort := map[int32][]*listenerState{}
	var ports []int32
	for _, l := range ls {
		if l.proto == "" {
			continue
		}
		if _, ok := byPort[l.port]; !ok {
			ports = append(ports, l.port)
		}
		byPort[l.port] = append(byPort[l.port], l)
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i] < ports[j] })
	for _, p := range ports {
		group := byPort[p]
		mixed := false
		for _, l := range group[1:] {
			if !compatibleProtocols(l.proto, group[0].proto) {
				mixed = true
			}
		}
		if mixed {
			for _, l := range group {
				l.conflict(string(gatewayv1.ListenerReasonProtocolConflict),
					fmt.Sprintf("port %d is used with different protocols", p))
			}
			continue
		}
		byHost := map[string]int{}
		for _, l := range group {
			byHost[l.hostname]++
		}
		for _, l := range group {
			if byHost[l.hostname] > 1 {
				h := l.hostname
				if h == "" {
					h = "(any)"
				}
				l.conflict(string(gatewayv1.ListenerReasonHostnameConflict),
					fmt.Sprintf("hostname %s is used by more than one listener on port %d", h, p))
			}
		}
	}
}

func (l *listenerState) conflict(reason, msg string) {
	l.conflictReason = reason
	l.accepted = false
	l.acceptedReason = reason
	l.acceptedMsg = msg
}

// status renders a listener's status. gwProgrammed says whether the Gateway
// as a whole is programmed (address assigned, config published); when it is
// not, a servable listener reports pendingReason and pendingMsg.
func (l *listenerState) status(gen int64, gwProgrammed bool, pendingReason, pendingMsg string) gatewayv1.ListenerStatus {
	var conds []metav1.Condition
	if l.accepted {
		conds = append(conds, condition(string(gatewayv1.ListenerConditionAccepted), true, string(gatewayv1.ListenerReasonAccepted), "Listener is accepted", gen))
	} else {
		conds = append(conds, condition(string(gatewayv1.ListenerConditionAccepted), false, l.acceptedReason, l.acceptedMsg, gen))
	}
	switch {
	case l.conflictReason != "":
		conds = append(conds, condition(string(gatewayv1.ListenerConditionProgrammed), false, l.conflictReason, l.acceptedMsg, gen))
	case !l.served():
		msg := l.acceptedMsg
		if l.accepted {
			msg = l.refsMsg
		}
		conds = append(conds, condition(string(gatewayv1.ListenerConditionProgrammed), false, string(gatewayv1.ListenerReasonInvalid), msg, gen))
	case !gwProgrammed:
		conds = append(conds, condition(string(gatewayv1.ListenerConditionProgrammed), false, pendingReason, pendingMsg, gen))
	default:
		conds = append(conds, condition(string(gatewayv1.ListenerConditionProgrammed), true, string(gatewayv1.ListenerReasonProgrammed), "Listener is programmed", gen))
	}
	if l.refsReason != "" {
		conds = append(conds, condition(string(gatewayv1.ListenerConditionResolvedRefs), false, l.refsReason, l.refsMsg, gen))
	} else {
		conds = append(conds, condition(string(gatewayv1.ListenerConditionResolvedRefs), true, string(gatewayv1.ListenerReasonResolvedRefs), "All references are resolved", gen))
	}
	if l.conflictReason != "" {
		conds = append(conds, condition(string(gatewayv1.ListenerConditionConflicted), true, l.conflictReason, l.acceptedMsg, gen))
	} else {
		conds = append(conds, condition(string(gatewayv1.ListenerConditionConflicted), false, string(gatewayv1.ListenerReasonNoConflicts), "No conflicts", gen))
	}
	kinds := l.kinds
	if l.conflictReason == string(gatewayv1.ListenerReasonProtocolConflict) {
		// A listener whose protocol conflicts serves nothing, so it
		// supports no route kind (the conformance test
		// TLSRouteListenerMixedTerminationNotSupported asserts this).
		kinds = nil
	}
	return gatewayv1.ListenerStatus{
		Name:           gatewayv1.SectionName(l.name),
		SupportedKinds: kinds,
		AttachedRoutes: int32(len(l.attached)),
		Conditions:     conds,
	}
}
