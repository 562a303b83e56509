/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/ir"
)

// choices turns fuzz bytes into small decisions; past the end it answers 0.
type choices struct {
	b []byte
	i int
}

func (c *choices) n(max int) int {
	if max <= 1 {
		return 0
	}
	if c.i >= len(c.b) {
		return 0
	}
	v := int(c.b[c.i]) % max
	c.i++
	return v
}

func (c *choices) bool() bool { return c.n(2) == 1 }

func pick[T any](c *choices, pool []T) T { return pool[c.n(len(pool))] }

var (
	fzNamespaces = []string{"default", "apps", "other"}
	fzGateways   = []string{"gw", "gw2", "gw3"}
	fzListeners  = []string{"http", "https", "tls", "alt"}
	fzPorts      = []int32{80, 443, 8080}
	fzProtocols  = []gatewayv1.ProtocolType{"HTTP", "HTTPS", "TLS", "TCP", "INVALID"}
	fzHostnames  = []string{"", "foo.example.com", "*.example.com", "bar.example.com", "*.com", "a.b.example.com"}
	fzServices   = []string{"web", "api", "missing"}
	fzSvcPorts   = []int32{80, 9000, 7}
	fzSecrets    = []string{"cert", "bad", "gone"}
	fzPaths      = []string{"/", "/foo", "/foo/bar", "/a(", "^/re/[0-9]+$", "/foo/"}
	fzKinds      = []string{"HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute", "Bogus"}
	fzAppProtos  = []string{"", "kubernetes.io/h2c", "kubernetes.io/ws", "https"}
)

// fuzzInput builds a schema-shaped snapshot from fuzz bytes: names, refs
// and hostnames come from small pools so that references often resolve.
func fuzzInput(data []byte, cert, key []byte) *Input {
	c := &choices{b: data}
	in := &Input{ControllerName: testController, Runtime: map[types.NamespacedName]GatewayRuntime{}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	for _, ns := range fzNamespaces {
		labels := map[string]string{"kubernetes.io/metadata.name": ns}
		if c.bool() {
			labels["team"] = "a"
		}
		in.Namespaces = append(in.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}})
	}
	cls := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "shardgate", Generation: int64(c.n(3))},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: testController}}
	if c.n(4) == 0 {
		cls.Spec.ParametersRef = &gatewayv1.ParametersReference{Group: "shardgate.io", Kind: "GatewayParameters", Name: "p", Namespace: ptrTo(gatewayv1.Namespace(pick(c, fzNamespaces)))}
	}
	in.GatewayClasses = append(in.GatewayClasses, cls,
		&gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: "example.com/other"}})
	if c.bool() {
		in.GatewayParameters = append(in.GatewayParameters, &shardgatev1alpha1.GatewayParameters{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}})
	}

	for i := c.n(4); i > 0; i-- {
		ns := pick(c, fzNamespaces)
		gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: pick(c, fzGateways), Namespace: ns, Generation: int64(c.n(5))}}
		gw.Spec.GatewayClassName = "shardgate"
		if c.n(5) == 0 {
			gw.Spec.GatewayClassName = "other"
		}
		for j := c.n(5); j > 0; j-- {
			l := gatewayv1.Listener{Name: gatewayv1.SectionName(pick(c, fzListeners)), Port: pick(c, fzPorts), Protocol: pick(c, fzProtocols)}
			if h := pick(c, fzHostnames); h != "" {
				l.Hostname = ptrTo(gatewayv1.Hostname(h))
			}
			if l.Protocol == "HTTPS" || l.Protocol == "TLS" {
				l.TLS = &gatewayv1.ListenerTLSConfig{Mode: ptrTo(gatewayv1.TLSModeTerminate)}
				if l.Protocol == "TLS" && c.bool() {
					l.TLS.Mode = ptrTo(gatewayv1.TLSModePassthrough)
				}
				for k := c.n(3); k > 0; k-- {
					ref := gatewayv1.SecretObjectReference{Name: gatewayv1.ObjectName(pick(c, fzSecrets))}
					if c.n(4) == 0 {
						ref.Namespace = ptrTo(gatewayv1.Namespace(pick(c, fzNamespaces)))
					}
					l.TLS.CertificateRefs = append(l.TLS.CertificateRefs, ref)
				}
			}
			if c.bool() {
				ar := &gatewayv1.AllowedRoutes{}
				switch c.n(4) {
				case 0:
					ar.Namespaces = &gatewayv1.RouteNamespaces{From: ptrTo(gatewayv1.NamespacesFromAll)}
				case 1:
					ar.Namespaces = &gatewayv1.RouteNamespaces{From: ptrTo(gatewayv1.NamespacesFromSelector),
						Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}}
				case 2:
					ar.Namespaces = &gatewayv1.RouteNamespaces{From: ptrTo(gatewayv1.NamespacesFromSame)}
				}
				for k := c.n(3); k > 0; k-- {
					ar.Kinds = append(ar.Kinds, gatewayv1.RouteGroupKind{Kind: gatewayv1.Kind(pick(c, fzKinds))})
				}
				l.AllowedRoutes = ar
			}
			gw.Spec.Listeners = append(gw.Spec.Listeners, l)
		}
		if c.n(3) == 0 {
			// Frontend client certificate validation: a default and a
			// per-port entry naming CA ConfigMaps or Secrets, possibly
			// in another namespace, missing or of another kind.
			val := func() *gatewayv1.FrontendTLSValidation {
				v := &gatewayv1.FrontendTLSValidation{}
				if c.bool() {
					v.Mode = gatewayv1.AllowInsecureFallback
				}
				for k := c.n(3); k > 0; k-- {
					ref := gatewayv1.ObjectReference{Kind: gatewayv1.Kind(pick(c, []string{"ConfigMap", "Secret", "Service"})), Name: gatewayv1.ObjectName(pick(c, []string{"ca", "bad-ca", "gone"}))}
					if c.n(4) == 0 {
						ref.Namespace = ptrTo(gatewayv1.Namespace(pick(c, fzNamespaces)))
					}
					v.CACertificateRefs = append(v.CACertificateRefs, ref)
				}
				return v
			}
			f := &gatewayv1.FrontendTLSConfig{Default: gatewayv1.TLSConfig{Validation: val()}}
			if c.bool() {
				f.PerPort = []gatewayv1.TLSPortConfig{{Port: gatewayv1.PortNumber(pick(c, fzPorts)), TLS: gatewayv1.TLSConfig{Validation: val()}}}
			}
			gw.Spec.TLS = &gatewayv1.GatewayTLSConfig{Frontend: f}
		}
		switch c.n(6) {
		case 0:
			gw.Spec.Addresses = []gatewayv1.GatewaySpecAddress{{Type: ptrTo(gatewayv1.HostnameAddressType), Value: "x.example.com"}}
		case 1:
			gw.Spec.Addresses = []gatewayv1.GatewaySpecAddress{{Value: "192.0.2.1"}}
		case 2:
			gw.Spec.Infrastructure = &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{Group: "shardgate.io", Kind: "GatewayParameters", Name: "p"}}
		}
		in.Gateways = append(in.Gateways, gw)
		switch c.n(4) {
		case 0:
			in.Runtime[types.NamespacedName{Namespace: ns, Name: gw.Name}] = GatewayRuntime{Addresses: []gatewayv1.GatewayStatusAddress{{Value: "192.0.2.1"}}}
		case 1:
			in.Runtime[types.NamespacedName{Namespace: ns, Name: gw.Name}] = GatewayRuntime{PublishError: "nack"}
		}
	}

	parents := func() []gatewayv1.ParentReference {
		var out []gatewayv1.ParentReference
		for k := c.n(3) + 1; k > 0; k-- {
			p := gatewayv1.ParentReference{Name: gatewayv1.ObjectName(pick(c, fzGateways))}
			if c.bool() {
				p.Namespace = ptrTo(gatewayv1.Namespace(pick(c, fzNamespaces)))
			}
			if c.n(3) == 0 {
				p.SectionName = ptrTo(gatewayv1.SectionName(pick(c, fzListeners)))
			}
			if c.n(4) == 0 {
				p.Port = ptrTo(pick(c, fzPorts))
			}
			if c.n(8) == 0 {
				p.Kind = ptrTo(gatewayv1.Kind("Service"))
			}
			out = append(out, p)
		}
		return out
	}
	hostnames := func() []gatewayv1.Hostname {
		var out []gatewayv1.Hostname
		for k := c.n(3); k > 0; k-- {
			if h := pick(c, fzHostnames); h != "" {
				out = append(out, gatewayv1.Hostname(h))
			}
		}
		return out
	}
	backend := func() gatewayv1.BackendRef {
		b := gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
			Name: gatewayv1.ObjectName(pick(c, fzServices)), Port: ptrTo(pick(c, fzSvcPorts))}}
		switch c.n(8) {
		case 0:
			b.Kind = ptrTo(gatewayv1.Kind("Bogus"))
		case 1:
			b.Namespace = ptrTo(gatewayv1.Namespace(pick(c, fzNamespaces)))
		case 2:
			b.Port = nil
		}
		if c.n(3) == 0 {
			b.Weight = ptrTo(int32(c.n(4)))
		}
		return b
	}
	meta := func(i int) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: fmt.Sprintf("r%d", i), Namespace: pick(c, fzNamespaces),
			Generation: int64(c.n(4)), CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(c.n(3)) * time.Hour))}
	}

	for i := c.n(7); i > 0; i-- {
		r := &gatewayv1.HTTPRoute{ObjectMeta: meta(i)}
		r.Spec.ParentRefs = parents()
		r.Spec.Hostnames = hostnames()
		for j := c.n(4); j > 0; j-- {
			var rule gatewayv1.HTTPRouteRule
			for k := c.n(3); k > 0; k-- {
				m := gatewayv1.HTTPRouteMatch{}
				pt := []gatewayv1.PathMatchType{gatewayv1.PathMatchPathPrefix, gatewayv1.PathMatchExact, gatewayv1.PathMatchRegularExpression}[c.n(3)]
				m.Path = &gatewayv1.HTTPPathMatch{Type: &pt, Value: ptrTo(pick(c, fzPaths))}
				if c.bool() {
					m.Headers = []gatewayv1.HTTPHeaderMatch{{Name: "x", Value: pick(c, fzPaths), Type: ptrTo([]gatewayv1.HeaderMatchType{"Exact", "RegularExpression"}[c.n(2)])}}
				}
				if c.n(3) == 0 {
					m.Method = ptrTo(gatewayv1.HTTPMethodGet)
				}
				rule.Matches = append(rule.Matches, m)
			}
			switch c.n(8) {
			case 0:
				rule.Filters = append(rule.Filters, gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterRequestRedirect,
					RequestRedirect: &gatewayv1.HTTPRequestRedirectFilter{Scheme: ptrTo("https"),
						Path: &gatewayv1.HTTPPathModifier{Type: gatewayv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptrTo("/x")}}})
			case 1:
				rule.Filters = append(rule.Filters, gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterURLRewrite,
					URLRewrite: &gatewayv1.HTTPURLRewriteFilter{Hostname: ptrTo(gatewayv1.PreciseHostname("x.example.com"))}})
			case 2:
				rule.Filters = append(rule.Filters, gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterRequestMirror,
					RequestMirror: &gatewayv1.HTTPRequestMirrorFilter{BackendRef: backend().BackendObjectReference, Percent: ptrTo(int32(c.n(101)))}})
			case 3:
				rule.Filters = append(rule.Filters, gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterExtensionRef,
					ExtensionRef: &gatewayv1.LocalObjectReference{Group: "x", Kind: "Y", Name: "z"}})
			case 4:
				rule.Filters = append(rule.Filters, gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier,
					RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "a", Value: "b"}}}})
			case 5:
				rule.Timeouts = &gatewayv1.HTTPRouteTimeouts{Request: ptrTo(gatewayv1.Duration([]string{"1s", "bogus", "0s"}[c.n(3)]))}
			}
			for k := c.n(4); k > 0; k-- {
				rule.BackendRefs = append(rule.BackendRefs, gatewayv1.HTTPBackendRef{BackendRef: backend()})
			}
			r.Spec.Rules = append(r.Spec.Rules, rule)
		}
		in.HTTPRoutes = append(in.HTTPRoutes, r)
	}
	for i := c.n(4); i > 0; i-- {
		r := &gatewayv1.GRPCRoute{ObjectMeta: meta(i)}
		r.Spec.ParentRefs = parents()
		r.Spec.Hostnames = hostnames()
		for j := c.n(3); j > 0; j-- {
			var rule gatewayv1.GRPCRouteRule
			if c.bool() {
				mt := []gatewayv1.GRPCMethodMatchType{"Exact", "RegularExpression"}[c.n(2)]
				mm := &gatewayv1.GRPCMethodMatch{Type: &mt}
				if c.bool() {
					mm.Service = ptrTo([]string{"echo.Echo", "(", "e.*"}[c.n(3)])
				}
				if c.bool() {
					mm.Method = ptrTo("Say")
				}
				rule.Matches = []gatewayv1.GRPCRouteMatch{{Method: mm}}
			}
			for k := c.n(3); k > 0; k-- {
				rule.BackendRefs = append(rule.BackendRefs, gatewayv1.GRPCBackendRef{BackendRef: backend()})
			}
			r.Spec.Rules = append(r.Spec.Rules, rule)
		}
		in.GRPCRoutes = append(in.GRPCRoutes, r)
	}
	for i := c.n(4); i > 0; i-- {
		r := &gatewayv1.TLSRoute{ObjectMeta: meta(i)}
		r.Spec.ParentRefs = parents()
		r.Spec.Hostnames = hostnames()
		rule := gatewayv1.TLSRouteRule{}
		for k := c.n(3); k > 0; k-- {
			rule.BackendRefs = append(rule.BackendRefs, backend())
		}
		r.Spec.Rules = []gatewayv1.TLSRouteRule{rule}
		in.TLSRoutes = append(in.TLSRoutes, r)
	}

	for _, ns := range fzNamespaces {
		for _, name := range fzServices[:2] {
			if c.n(4) == 0 {
				continue
			}
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
			for _, p := range fzSvcPorts[:2] {
				sp := corev1.ServicePort{Name: fmt.Sprintf("p%d", p), Port: p}
				if ap := pick(c, fzAppProtos); ap != "" {
					sp.AppProtocol = ptrTo(ap)
				}
				svc.Spec.Ports = append(svc.Spec.Ports, sp)
			}
			in.Services = append(in.Services, svc)
			// One choice was an EndpointSlice's readiness, before
			// endpoints left the Gateway API translation; it is still
			// drawn, so that every later choice (and the corpus) stays.
			c.bool()
		}
		if c.bool() {
			in.Secrets = append(in.Secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cert", Namespace: ns}, Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}})
		}
		if c.bool() {
			in.ConfigMaps = append(in.ConfigMaps, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: ns}, Data: map[string]string{"ca.crt": string(cert)}})
		}
		if c.bool() {
			in.ConfigMaps = append(in.ConfigMaps, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bad-ca", Namespace: ns}, Data: map[string]string{"ca.crt": "x"}})
		}
		if c.bool() {
			in.Secrets = append(in.Secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: ns}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"ca.crt": cert}})
		}
		if c.bool() {
			in.Secrets = append(in.Secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns}, Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{corev1.TLSCertKey: []byte("x"), corev1.TLSPrivateKeyKey: []byte("y")}})
		}
		if c.n(3) == 0 {
			g := &gatewayv1beta1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: ns}}
			g.Spec.From = []gatewayv1beta1.ReferenceGrantFrom{{Group: gatewayv1.GroupName, Kind: gatewayv1beta1.Kind(pick(c, []string{"HTTPRoute", "Gateway", "GRPCRoute", "TLSRoute"})), Namespace: gatewayv1beta1.Namespace(pick(c, fzNamespaces))}}
			g.Spec.To = []gatewayv1beta1.ReferenceGrantTo{{Group: "", Kind: gatewayv1beta1.Kind(pick(c, []string{"Service", "Secret", "ConfigMap"}))}}
			in.ReferenceGrants = append(in.ReferenceGrants, g)
		}
	}
	// BackendTLSPolicies draw from the bytes rotated by half, ListenerSets
	// from the bytes read backwards: the rest of an input stays what it
	// was, and they do not depend on how much of it the rest consumed.
	// TCPRoutes draw from the rotated bytes read backwards, for the same
	// reason (parents, backend and meta draw from c).
	c = &choices{b: backwards(rotated(data))}
	for i := c.n(4); i > 0; i-- {
		r := &gatewayv1.TCPRoute{ObjectMeta: meta(i)}
		r.Spec.ParentRefs = parents()
		for j := 1 + c.n(2); j > 0; j-- {
			rule := gatewayv1.TCPRouteRule{}
			for k := c.n(3); k > 0; k-- {
				rule.BackendRefs = append(rule.BackendRefs, backend())
			}
			r.Spec.Rules = append(r.Spec.Rules, rule)
		}
		in.TCPRoutes = append(in.TCPRoutes, r)
	}
	fuzzBackendTLS(&choices{b: rotated(data)}, in, cert, t0)
	addListenerSets(&choices{b: backwards(data)}, in, t0)
	return in
}

// rotated returns b's second half followed by its first.
func rotated(b []byte) []byte {
	h := len(b) / 2
	return append(slices.Clone(b[h:]), b[:h]...)
}

// backwards returns b's bytes in reverse order.
func backwards(b []byte) []byte {
	out := slices.Clone(b)
	slices.Reverse(out)
	return out
}

// addListenerSets gives some Gateways allowedListeners, adds ListenerSets
// naming them (listeners drawn from the Gateway listener pools), some
// ReferenceGrants from ListenerSets, and turns some route parentRefs into
// ListenerSet parentRefs. It draws its choices last, so that the rest of
// a fuzz input stays what it was.
func addListenerSets(c *choices, in *Input, t0 time.Time) {
	froms := []gatewayv1.FromNamespaces{"", gatewayv1.NamespacesFromSame, gatewayv1.NamespacesFromAll, gatewayv1.NamespacesFromSelector, gatewayv1.NamespacesFromNone, gatewayv1.NamespacesFromAll}
	for _, gw := range in.Gateways {
		f := pick(c, froms)
		if f == "" {
			continue
		}
		gw.Spec.AllowedListeners = &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: ptrTo(f)}}
		if f == gatewayv1.NamespacesFromSelector {
			gw.Spec.AllowedListeners.Namespaces.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
		}
	}
	lsNames := []string{"ls1", "ls2"}
	for i := c.n(5); i > 0; i-- {
		ls := &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Name: pick(c, lsNames), Namespace: pick(c, fzNamespaces),
			Generation: int64(c.n(4)), CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(c.n(3)) * time.Hour))}}
		ls.Spec.ParentRef = gatewayv1.ParentGatewayReference{Name: gatewayv1.ObjectName(pick(c, fzGateways))}
		if c.bool() {
			ls.Spec.ParentRef.Namespace = ptrTo(gatewayv1.Namespace(pick(c, fzNamespaces)))
		}
		var parent *gatewayv1.Gateway
		if len(in.Gateways) > 0 && c.n(4) != 0 {
			// Mostly a Gateway of the input, on its ports.
			parent = pick(c, in.Gateways)
			ls.Spec.ParentRef.Name = gatewayv1.ObjectName(parent.Name)
			ls.Spec.ParentRef.Namespace = ptrTo(gatewayv1.Namespace(parent.Namespace))
		}
		if c.n(8) == 0 {
			ls.Spec.ParentRef.Kind = ptrTo(gatewayv1.Kind("Service"))
		}
		for j := c.n(4); j > 0; j-- {
			e := gatewayv1.ListenerEntry{Name: gatewayv1.SectionName(pick(c, fzListeners)), Port: pick(c, fzPorts),
				Protocol: pick(c, []gatewayv1.ProtocolType{"HTTP", "HTTP", "HTTPS", "TLS", "TCP"})}
			if parent != nil && len(parent.Spec.Listeners) > 0 && c.n(4) != 0 {
				pl := pick(c, parent.Spec.Listeners)
				e.Port = pl.Port
				if c.bool() {
					e.Protocol = pl.Protocol
				}
			}
			if h := pick(c, fzHostnames); h != "" {
				e.Hostname = ptrTo(gatewayv1.Hostname(h))
			}
			if e.Protocol == "HTTPS" || e.Protocol == "TLS" {
				e.TLS = &gatewayv1.ListenerTLSConfig{Mode: ptrTo(gatewayv1.TLSModeTerminate)}
				if e.Protocol == "TLS" && c.bool() {
					e.TLS.Mode = ptrTo(gatewayv1.TLSModePassthrough)
				}
				ref := gatewayv1.SecretObjectReference{Name: gatewayv1.ObjectName(pick(c, fzSecrets))}
				if c.n(3) == 0 {
					ref.Namespace = ptrTo(gatewayv1.Namespace(pick(c, fzNamespaces)))
				}
				e.TLS.CertificateRefs = []gatewayv1.SecretObjectReference{ref}
			}
			if c.bool() {
				e.AllowedRoutes = &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptrTo(pick(c, froms[1:4]))},
					Kinds: []gatewayv1.RouteGroupKind{{Kind: gatewayv1.Kind(pick(c, fzKinds))}}}
			}
			ls.Spec.Listeners = append(ls.Spec.Listeners, e)
		}
		in.ListenerSets = append(in.ListenerSets, ls)
	}
	if c.bool() {
		g := &gatewayv1beta1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Name: "g-ls", Namespace: pick(c, fzNamespaces)}}
		g.Spec.From = []gatewayv1beta1.ReferenceGrantFrom{{Group: gatewayv1.GroupName, Kind: kindListenerSet, Namespace: gatewayv1beta1.Namespace(pick(c, fzNamespaces))}}
		g.Spec.To = []gatewayv1beta1.ReferenceGrantTo{{Group: "", Kind: kindSecret}}
		in.ReferenceGrants = append(in.ReferenceGrants, g)
	}
	toLS := func(refs []gatewayv1.ParentReference) {
		for i := range refs {
			if c.n(3) == 0 {
				refs[i].Kind = ptrTo(gatewayv1.Kind(kindListenerSet))
				refs[i].Name = gatewayv1.ObjectName(pick(c, lsNames))
			}
		}
	}
	for _, r := range in.HTTPRoutes {
		toLS(r.Spec.ParentRefs)
	}
	for _, r := range in.GRPCRoutes {
		toLS(r.Spec.ParentRefs)
	}
	for _, r := range in.TLSRoutes {
		toLS(r.Spec.ParentRefs)
	}
	for _, r := range in.TCPRoutes {
		toLS(r.Spec.ParentRefs)
	}
}

// fuzzBackendTLS adds BackendTLSPolicies, their CA ConfigMaps and Gateway
// backend client certificates.
func fuzzBackendTLS(c *choices, in *Input, cert []byte, t0 time.Time) {
	for _, gw := range in.Gateways {
		if c.n(4) != 0 {
			continue
		}
		ref := &gatewayv1.SecretObjectReference{Name: gatewayv1.ObjectName(pick(c, fzSecrets))}
		if c.n(4) == 0 {
			ref.Namespace = ptrTo(gatewayv1.Namespace(pick(c, fzNamespaces)))
		}
		if c.n(6) == 0 {
			ref.Kind = ptrTo(gatewayv1.Kind("ConfigMap"))
		}
		gw.Spec.TLS = &gatewayv1.GatewayTLSConfig{Backend: &gatewayv1.GatewayBackendTLS{ClientCertificateRef: ref}}
	}
	for _, ns := range fzNamespaces {
		switch c.n(3) {
		case 0:
			in.ConfigMaps = append(in.ConfigMaps, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: ns},
				Data: map[string]string{"ca.crt": string(cert)}})
		case 1:
			in.ConfigMaps = append(in.ConfigMaps, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: ns},
				Data: map[string]string{"ca.crt": "garbage"}})
		}
		for _, name := range []string{"pol-a", "pol-b", "pol-c"} {
			if c.n(3) == 0 {
				continue
			}
			p := &gatewayv1.BackendTLSPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Generation: int64(1 + c.n(3)),
				CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(c.n(3)) * time.Minute))}}
			t := gatewayv1.LocalPolicyTargetReferenceWithSectionName{LocalPolicyTargetReference: gatewayv1.LocalPolicyTargetReference{
				Kind: "Service", Name: gatewayv1.ObjectName(pick(c, fzServices))}}
			if c.n(3) == 0 {
				t.SectionName = ptrTo(gatewayv1.SectionName(pick(c, []string{"p80", "p9000", "nope"})))
			}
			if c.n(8) == 0 {
				t.Kind = "ConfigMap"
			}
			p.Spec.TargetRefs = []gatewayv1.LocalPolicyTargetReferenceWithSectionName{t}
			p.Spec.Validation.Hostname = gatewayv1.PreciseHostname(pick(c, []string{"backend.example.com", "other.example.com", "*.bad"}))
			switch c.n(4) {
			case 0:
				p.Spec.Validation.WellKnownCACertificates = ptrTo(gatewayv1.WellKnownCACertificatesType(pick(c, []string{"System", "example.com/mine"})))
			default:
				p.Spec.Validation.CACertificateRefs = []gatewayv1.LocalObjectReference{{Kind: gatewayv1.Kind(pick(c, []string{"ConfigMap", "ConfigMap", "Secret"})),
					Name: gatewayv1.ObjectName(pick(c, []string{"ca", "ca", "missing"}))}}
			}
			if c.n(3) == 0 {
				p.Spec.Validation.SubjectAltNames = []gatewayv1.SubjectAltName{{Type: gatewayv1.HostnameSubjectAltNameType, Hostname: "san.example.com"},
					{Type: gatewayv1.URISubjectAltNameType, URI: "spiffe://cluster.local/ns/x/sa/y"}}
			}
			in.BackendTLSPolicies = append(in.BackendTLSPolicies, p)
		}
	}
}

// checkReferences asserts the IR is self-consistent: every cluster and
// secret a route or listener names exists.
func checkReferences(t *testing.T, out *Output) {
	t.Helper()
	for _, g := range out.Gateways {
		clusters := map[string]bool{}
		for _, c := range g.Clusters {
			clusters[c.Name] = true
		}
		secrets := map[string]bool{}
		for _, s := range g.Secrets {
			secrets[s.Name] = true
		}
		checkBackends := func(where string, bs []ir.Backend) {
			for _, b := range bs {
				if !clusters[b.Cluster] {
					t.Fatalf("%s/%s %s: cluster %s missing", g.Namespace, g.Name, where, b.Cluster)
				}
			}
		}
		checkVHosts := func(vhs []*ir.VirtualHost) {
			for _, vh := range vhs {
				for _, r := range vh.Routes {
					checkBackends(r.Name, r.Backends)
					for _, m := range r.Mirrors {
						if !clusters[m.Cluster] {
							t.Fatalf("%s: mirror cluster %s missing", r.Name, m.Cluster)
						}
					}
					n := 0
					if len(r.Backends) > 0 {
						n++
					}
					if r.Redirect != nil {
						n++
					}
					if r.DirectResponse != nil {
						n++
					}
					if n != 1 {
						t.Fatalf("%s: %d actions", r.Name, n)
					}
				}
			}
		}
		for _, l := range g.Listeners {
			checkVHosts(l.VirtualHosts)
			for _, s := range l.TLSServers {
				checkVHosts(s.VirtualHosts)
				for _, c := range s.Certificates {
					if !secrets[c.Name] {
						t.Fatalf("secret %s missing", c.Name)
					}
				}
			}
			for _, r := range l.TLSRoutes {
				checkBackends(r.Name, r.Backends)
			}
			if r := l.TCPRoute; r != nil {
				if l.Protocol != ir.ProtocolTCP {
					t.Fatalf("listener %s (%s) has a TCP route", l.Name, l.Protocol)
				}
				checkBackends(r.Name, r.Backends)
			}
		}
	}
}

func FuzzTranslate(f *testing.F) {
	cert, err := os.ReadFile("testdata/tls.crt")
	if err != nil {
		f.Fatal(err)
	}
	key, err := os.ReadFile("testdata/tls.key")
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte{})
	f.Add([]byte("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzInput(data, cert, key)
		addAutoTLS(&choices{b: interleaved(data)}, in, cert, key)
		a := Translate(in)
		b := Translate(in)
		if !reflect.DeepEqual(bare(a), bare(b)) {
			t.Fatal("Translate is not deterministic")
		}
		checkReferences(t, a)
	})
}

func ptrTo[T any](v T) *T { return &v }
