/*
Copyright The shardgate Authors.
*/

package translate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

// Validate checks r the way Envoy would before accepting it: every
// resource, and every typed_config packed inside it, passes the generated
// ValidateAll(), and CheckReferences finds nothing missing or duplicated.
// The error names each failing resource and says what is wrong.
//
// Wire forms (wire.go) are validated as what they serialize to.
func Validate(r *Resources) error {
	r, err := decodeWire(r)
	if err != nil {
		return err
	}
	var errs []error
	check := func(kind, name string, m proto.Message) {
		if err := ValidateMessage(m); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", kind, name, err))
		}
	}
	for _, l := range r.Listeners {
		check("listener", l.GetName(), l)
	}
	for _, rc := range r.Routes {
		check("route configuration", rc.GetName(), rc)
	}
	for _, c := range r.Clusters {
		check("cluster", c.GetName(), c)
	}
	for _, s := range r.Secrets {
		check("secret", s.GetName(), s)
	}
	if err := CheckReferences(r); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// decodeWire returns r with every wire form decoded: r itself when it holds
// none, else a copy with new lists.
func decodeWire(r *Resources) (*Resources, error) {
	out := *r
	var err error
	if out.Routes, err = decodeList(r.Routes, tableHasWire); err == nil {
		out.Clusters, err = decodeList(r.Clusters, nil)
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// tableHasWire: a route table (a memo's, before its check) holds a
// virtual host's wire form.
func tableHasWire(rc *routev3.RouteConfiguration) bool {
	for _, vh := range rc.GetVirtualHosts() {
		if len(vh.ProtoReflect().GetUnknown()) > 0 {
			return true
		}
	}
	return false
}

// decodeList returns list with its wire forms decoded (list itself when it
// has none); inner, when set, tells a message that holds wire forms
// further down.
func decodeList[T proto.Message](list []T, inner func(T) bool) ([]T, error) {
	var out []T
	for i, m := range list {
		whole := len(m.ProtoReflect().GetUnknown()) > 0
		if !whole && (inner == nil || !inner(m)) {
			continue
		}
		d, err := roundTrip(m)
		if err != nil {
			return nil, fmt.Errorf("%T %d: %w", m, i, err)
		}
		if out == nil {
			out = slices.Clone(list)
		}
		out[i] = d.(T)
	}
	if out == nil {
		return list, nil
	}
	return out, nil
}

// ValidateMessage runs m's ValidateAll and then that of every Any inside m:
// the generated validators check an Any's type URL at most, never its
// content.
func ValidateMessage(m proto.Message) error {
	var errs []error
	if v, ok := m.(interface{ ValidateAll() error }); ok {
		if err := v.ValidateAll(); err != nil {
			errs = append(errs, err)
		}
	}
	walkAny(m.ProtoReflect(), func(a *anypb.Any) {
		inner, err := a.UnmarshalNew()
		if err != nil {
			errs = append(errs, fmt.Errorf("typed config %s: %w", a.GetTypeUrl(), err))
			return
		}
		if err := ValidateMessage(inner); err != nil {
			errs = append(errs, fmt.Errorf("typed config %s: %w", a.GetTypeUrl(), err))
		}
	})
	return errors.Join(errs...)
}

var anyName = (&anypb.Any{}).ProtoReflect().Descriptor().FullName()

// walkAny calls fn for every Any directly reachable from m without passing
// through another Any.
func walkAny(m protoreflect.Message, fn func(*anypb.Any)) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		visit := func(v protoreflect.Value) {
			sub := v.Message()
			if sub.Descriptor().FullName() == anyName {
				if a, ok := sub.Interface().(*anypb.Any); ok {
					fn(a)
				}
				return
			}
			walkAny(sub, fn)
		}
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool { visit(mv); return true })
			}
		case fd.IsList():
			if fd.Message() != nil {
				l := v.List()
				for i := 0; i < l.Len(); i++ {
					visit(l.Get(i))
				}
			}
		case fd.Message() != nil:
			visit(v)
		}
		return true
	})
}

// CheckReferences finds what Envoy would reject or wait on forever across
// resources: duplicate or empty names, a listener without filter chains, two
// filter chains matching the same server name, an RDS name, SDS secret or
// cluster that does not exist (InvalidBackendCluster excepted: it is
// deliberately absent), a duplicate virtual host name or domain within one route configuration, and
// a header mutation Envoy refuses (Host or a pseudo-header).
func CheckReferences(r *Resources) error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	clusters := UniqueNames("cluster", len(r.Clusters), func(i int) string { return r.Clusters[i].GetName() }, fail)
	routes := UniqueNames("route configuration", len(r.Routes), func(i int) string { return r.Routes[i].GetName() }, fail)
	secrets := UniqueNames("secret", len(r.Secrets), func(i int) string { return r.Secrets[i].GetName() }, fail)
	UniqueNames("listener", len(r.Listeners), func(i int) string { return r.Listeners[i].GetName() }, fail)

	for _, l := range r.Listeners {
		errs = append(errs, ListenerReferences(l, clusters, routes, secrets)...)
	}
	errs = append(errs, clusterSecretReferences(r.Clusters, secrets)...)
	for _, rc := range r.Routes {
		errs = append(errs, routeReferences(rc, clusters)...)
	}
	return errors.Join(errs...)
}

// UniqueNames returns the set of n names, failing each empty or duplicate
// one.
func UniqueNames(kind string, n int, name func(int) string, fail func(string, ...any)) map[string]bool {
	seen := make(map[string]bool, n)
	for i := 0; i < n; i++ {
		switch nm := name(i); {
		case nm == "":
			fail("%s #%d: empty name", kind, i)
		case seen[nm]:
			fail("%s %q: duplicate name", kind, nm)
		default:
			seen[nm] = true
		}
	}
	return seen
}

// ClusterFacts is what the referential checks read of a cluster: the SDS
// secrets its upstream TLS context names (or why its transport socket
// cannot be read).
type ClusterFacts struct {
	Secrets []string
	Socket  error
}

// Sockets: the cluster's transport socket names secrets or cannot be read.
func (f ClusterFacts) Sockets() bool { return len(f.Secrets) > 0 || f.Socket != nil }

// FactsOf reads a cluster message's facts (not a wire form's: see
// xds/build's Checker).
func FactsOf(c *clusterv3.Cluster) ClusterFacts {
	var f ClusterFacts
	ts := c.GetTransportSocket()
	if ts == nil {
		return f
	}
	msg, err := ts.GetTypedConfig().UnmarshalNew()
	if err != nil {
		f.Socket = err
		return f
	}
	if tls, ok := msg.(*tlsv3.UpstreamTlsContext); ok {
		for _, s := range tls.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs() {
			f.Secrets = append(f.Secrets, s.GetName())
		}
	}
	return f
}

// SocketErrors checks one cluster's transport socket: it can be read, and
// the SDS secrets its upstream TLS context names (a Gateway's backend
// client certificate) exist.
func SocketErrors(name string, f ClusterFacts, secrets map[string]bool) []error {
	if f.Socket != nil {
		return []error{fmt.Errorf("cluster %q: transport socket: %w", name, f.Socket)}
	}
	var errs []error
	for _, s := range f.Secrets {
		if !secrets[s] {
			errs = append(errs, fmt.Errorf("cluster %q: secret %q not found", name, s))
		}
	}
	return errs
}

// clusterSecretReferences is SocketErrors for every cluster.
func clusterSecretReferences(clusters []*clusterv3.Cluster, secrets map[string]bool) []error {
	var errs []error
	for _, c := range clusters {
		errs = append(errs, SocketErrors(c.GetName(), FactsOf(c), secrets)...)
	}
	return errs
}

func ListenerReferences(l *listenerv3.Listener, clusters, routes, secrets map[string]bool) []error {
	return ListenerReferencesBut(l, clusters, routes, secrets, nil)
}

// ListenerReferencesBut is ListenerReferences that takes the references of
// the filter chains known says are known to resolve as resolved (it still
// checks that no two chains match one server name). known may be nil.
func ListenerReferencesBut(l *listenerv3.Listener, clusters, routes, secrets map[string]bool, known func(*listenerv3.FilterChain) bool) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("listener %q: "+format, append([]any{l.GetName()}, args...)...))
	}
	if api := l.GetApiListener(); api != nil {
		// An API listener (what proxyless gRPC clients read) has no filter
		// chains: its HttpConnectionManager must name an existing route
		// configuration.
		msg, err := api.GetApiListener().UnmarshalNew()
		if err != nil {
			fail("api_listener: %v", err)
		} else if hcm, ok := msg.(*hcmv3.HttpConnectionManager); !ok {
			fail("api_listener is %T, want an HttpConnectionManager", msg)
		} else if rds := hcm.GetRds(); rds != nil && !routes[rds.GetRouteConfigName()] {
			fail("api_listener: route configuration %q not found", rds.GetRouteConfigName())
		}
	} else if len(l.GetFilterChains()) == 0 && l.GetDefaultFilterChain() == nil {
		fail("no filter chains")
	}
	matched := map[string]string{} // transport protocol + server name → chain
	for i, fc := range l.GetFilterChains() {
		chain := fc.GetName()
		if chain == "" {
			chain = fmt.Sprintf("#%d", i)
		}
		m := fc.GetFilterChainMatch()
		sni := m.GetServerNames()
		if len(sni) == 0 {
			sni = []string{"(any)"}
		}
		for _, n := range sni {
			key := m.GetTransportProtocol() + "|" + strings.ToLower(n)
			if prev, ok := matched[key]; ok {
				fail("filter chains %q and %q both match server name %s", prev, chain, n)
				continue
			}
			matched[key] = chain
		}
		if known != nil && known(fc) {
			continue
		}
		if ts := fc.GetTransportSocket(); ts != nil {
			msg, err := ts.GetTypedConfig().UnmarshalNew()
			if err != nil {
				fail("filter chain %q: transport socket: %v", chain, err)
			} else if tls, ok := msg.(*tlsv3.DownstreamTlsContext); ok {
				for _, s := range tls.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs() {
					if !secrets[s.GetName()] {
						fail("filter chain %q: secret %q not found", chain, s.GetName())
					}
				}
				if ca := validationSecret(tls.GetCommonTlsContext()); ca != "" && !secrets[ca] {
					fail("filter chain %q: validation secret %q not found", chain, ca)
				}
			}
		}
		for _, f := range fc.GetFilters() {
			msg, err := f.GetTypedConfig().UnmarshalNew()
			if err != nil {
				fail("filter chain %q: filter %s: %v", chain, f.GetName(), err)
				continue
			}
			switch c := msg.(type) {
			case *hcmv3.HttpConnectionManager:
				if rds := c.GetRds(); rds != nil && !routes[rds.GetRouteConfigName()] {
					fail("filter chain %q: route configuration %q not found", chain, rds.GetRouteConfigName())
				}
			case *tcpproxyv3.TcpProxy:
				for _, name := range tcpProxyClusters(c) {
					if !ClusterExists(clusters, name) {
						fail("filter chain %q: cluster %q not found", chain, name)
					}
				}
			}
		}
	}
	return errs
}

func tcpProxyClusters(p *tcpproxyv3.TcpProxy) []string {
	// By the oneof, not by the value: an empty cluster name is a
	// reference to a cluster that cannot exist.
	if c, ok := p.GetClusterSpecifier().(*tcpproxyv3.TcpProxy_Cluster); ok {
		return []string{c.Cluster}
	}
	var out []string
	for _, w := range p.GetWeightedClusters().GetClusters() {
		out = append(out, w.GetName())
	}
	return out
}

func ClusterExists(clusters map[string]bool, name string) bool {
	return clusters[name] || name == InvalidBackendCluster
}

func routeReferences(rc *routev3.RouteConfiguration, clusters map[string]bool) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("route configuration %q: "+format, append([]any{rc.GetName()}, args...)...))
	}
	vhosts := make(map[string]bool, len(rc.GetVirtualHosts()))
	domains := make(map[string]string, len(rc.GetVirtualHosts()))
	for _, vh := range rc.GetVirtualHosts() {
		if vhosts[vh.GetName()] {
			fail("duplicate virtual host name %q", vh.GetName())
		}
		vhosts[vh.GetName()] = true
		for _, d := range vh.GetDomains() {
			d = strings.ToLower(d)
			if prev, ok := domains[d]; ok {
				fail("virtual hosts %q and %q both serve domain %q", prev, vh.GetName(), d)
				continue
			}
			domains[d] = vh.GetName()
		}
		for _, r := range vh.GetRoutes() {
			where := func() string { return fmt.Sprintf("virtual host %q route %q", vh.GetName(), r.GetName()) }
			for _, name := range RouteClusters(r.GetRoute()) {
				if !ClusterExists(clusters, name) {
					fail("%s: cluster %q not found", where(), name)
				}
			}
			for _, h := range HeaderNames(r) {
				if !IsModifiable(h) {
					fail("%s: header %q cannot be modified", where(), h)
				}
			}
		}
	}
	return errs
}

// RouteClusters lists every cluster a route action sends to, mirrors
// included.
func RouteClusters(a *routev3.RouteAction) []string {
	if a == nil {
		return nil
	}
	var out []string
	if c, ok := a.GetClusterSpecifier().(*routev3.RouteAction_Cluster); ok {
		out = append(out, c.Cluster) // "" included: it cannot exist
	}
	for _, w := range a.GetWeightedClusters().GetClusters() {
		out = append(out, w.GetName())
	}
	for _, m := range a.GetRequestMirrorPolicies() {
		out = append(out, m.GetCluster())
	}
	return out
}

// HeaderNames lists the headers a route and its weighted clusters mutate.
func HeaderNames(r *routev3.Route) []string {
	var out []string
	add := func(hs []*corev3.HeaderValueOption, rm []string) {
		for _, h := range hs {
			out = append(out, h.GetHeader().GetKey())
		}
		out = append(out, rm...)
	}
	add(r.GetRequestHeadersToAdd(), r.GetRequestHeadersToRemove())
	add(r.GetResponseHeadersToAdd(), r.GetResponseHeadersToRemove())
	for _, w := range r.GetRoute().GetWeightedClusters().GetClusters() {
		add(w.GetRequestHeadersToAdd(), w.GetRequestHeadersToRemove())
		add(w.GetResponseHeadersToAdd(), w.GetResponseHeadersToRemove())
	}
	return out
}

// validationSecret is the SDS name of a TLS context's validation context
// ("" for none).
func validationSecret(c *tlsv3.CommonTlsContext) string {
	if s := c.GetValidationContextSdsSecretConfig(); s != nil {
		return s.GetName()
	}
	return c.GetCombinedValidationContext().GetValidationContextSdsSecretConfig().GetName()
}
