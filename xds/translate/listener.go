/*
Copyright The shardgate Authors.
*/

package translate

import (
	"fmt"
	"math"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	bufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/buffer/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	proxyprotocolv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/proxy_protocol/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/shardgate/shardgate/internal/ir"
)

// listenAddress is where every listener binds. Envoy runs in its own pod, so
// all interfaces are ours.
const listenAddress = "0.0.0.0"

// alpnHTTP is offered on HTTPS listeners so that gRPC (h2) and HTTP/1.1
// clients both negotiate.
var alpnHTTP = []string{"h2", "http/1.1"}

// Listener translates one IR listener (one port) into an Envoy listener,
// whose filter chains reference the route configurations RouteTables
// names. A port with nothing to serve (no TLS servers, no TLS routes, no
// TCP route) yields no listener, because Envoy refuses a listener without
// filter chains. An HTTP listener does not depend on its virtual hosts.
func (s *Scope) Listener(l *ir.Listener) (*listenerv3.Listener, error) {
	lst, err := s.t.listenerChains(l)
	if lst != nil && ir.TrafficOf(s.t.gw).ProxyProtocol {
		// First: the client address and the TLS ClientHello come after
		// the PROXY header.
		lst.ListenerFilters = append([]*listenerv3.ListenerFilter{proxyProtocol()}, lst.ListenerFilters...)
	}
	return lst, err
}

// RouteTable is one route configuration an IR listener's filter chains
// reference: its name, the scheme its clients used ("http" or "https"),
// the TLS server it belongs to ("" on an HTTP listener) and its virtual
// hosts.
type RouteTable struct {
	Name, Scheme, Server string
	VirtualHosts         []*ir.VirtualHost
}

// RouteTables returns the route configurations l's filter chains
// reference, in chain order: for an HTTP listener one named after it, for
// an HTTPS listener one per TLS server ("<listener>/<server>"), for any
// other none.
func RouteTables(l *ir.Listener) []RouteTable {
	switch l.Protocol {
	case ir.ProtocolHTTP:
		return []RouteTable{RouteTableOf(l, 0)}
	case ir.ProtocolHTTPS:
		out := make([]RouteTable, 0, len(l.TLSServers))
		for i := range l.TLSServers {
			out = append(out, RouteTableOf(l, i))
		}
		return out
	}
	return nil
}

// RouteTableOf is the i-th of RouteTables(l): an HTTP listener's one
// table (i is 0), or the table of an HTTPS listener's i-th TLS server.
func RouteTableOf(l *ir.Listener, i int) RouteTable {
	if l.Protocol == ir.ProtocolHTTP {
		return RouteTable{Name: l.Name, Scheme: "http", VirtualHosts: l.VirtualHosts}
	}
	s := &l.TLSServers[i]
	return RouteTable{Name: httpsRouteTable(l, s), Scheme: "https", Server: s.Name, VirtualHosts: s.VirtualHosts}
}

// httpsRouteTable names the route table of TLS server s of l.
func httpsRouteTable(l *ir.Listener, s *ir.TLSServer) string { return l.Name + "/" + s.Name }

func (t *translator) listenerChains(l *ir.Listener) (*listenerv3.Listener, error) {
	traffic := ir.TrafficOf(t.gw)
	switch l.Protocol {
	case ir.ProtocolHTTP:
		chain := filterChain(l.Name, nil, nil, httpConnectionManager(l.Name, l.Name, traffic))
		return listener(l.Name, l.Port, nil, chain), nil

	case ir.ProtocolHTTPS:
		chains := make([]*listenerv3.FilterChain, 0, len(l.TLSServers))
		for i := range l.TLSServers {
			chains = append(chains, httpsChain(l, &l.TLSServers[i], traffic))
		}
		return httpsListener(l, chains), nil

	case ir.ProtocolTLSPassthrough, ir.ProtocolTLSTerminate, ir.ProtocolTLSMixed:
		// One filter chain per SNI. A terminating chain (every chain of a
		// TLSTerminate port, the chains with certificates of a TLSMixed
		// one) has a downstream TLS transport socket and proxies the
		// plaintext; a passthrough chain has none and proxies the TLS
		// stream as it came. Envoy picks the chain by the ClientHello's
		// SNI (tls_inspector) before any handshake, so both kinds share
		// the port.
		var chains []*listenerv3.FilterChain
		for i := range l.TLSRoutes {
			tr := &l.TLSRoutes[i]
			var tls *corev3.TransportSocket
			if l.Protocol == ir.ProtocolTLSTerminate || l.Protocol == ir.ProtocolTLSMixed && len(tr.Certificates) > 0 {
				tls = downstreamTLS(tr.Certificates, nil)
			}
			var sni []string
			if tr.SNI != "" {
				sni = []string{tr.SNI}
			}
			chains = append(chains, filterChain(tr.Name, matchSNI(sni), tls,
				tcpProxy(l.Name, tr.Backends, tr.InvalidWeight)))
		}
		if len(chains) == 0 {
			return nil, nil
		}
		return listener(l.Name, l.Port, tlsInspector(), chains...), nil

	case ir.ProtocolTCP:
		// One filter chain without a match: every connection of the port
		// is proxied, as a raw stream, to the route's weighted backends
		// (the unresolved share to InvalidBackendCluster, which closes
		// it). No route: no listener, so connections are refused.
		tr := l.TCPRoute
		if tr == nil {
			return nil, nil
		}
		chain := filterChain(tr.Name, nil, nil, tcpProxy(l.Name, tr.Backends, tr.InvalidWeight))
		return listener(l.Name, l.Port, nil, chain), nil
	}
	return nil, fmt.Errorf("unknown protocol %q", l.Protocol)
}

// HTTPSChain is the filter chain of TLS server srv of HTTPS listener l:
// SNI srv.SNI, its certificates, and an HTTP connection manager on its
// route table. It depends on nothing else of l but l's name, and on the
// Scope's traffic settings.
func (s *Scope) HTTPSChain(l *ir.Listener, srv *ir.TLSServer) *listenerv3.FilterChain {
	return httpsChain(l, srv, ir.TrafficOf(s.t.gw))
}

// HTTPSListener is HTTPS listener l made of chains, its TLS servers'
// (HTTPSChain, in order); nil when there are none. It is what Listener
// returns for l, built from chains made before.
func (s *Scope) HTTPSListener(l *ir.Listener, chains []*listenerv3.FilterChain) *listenerv3.Listener {
	lst := httpsListener(l, chains)
	if lst != nil && ir.TrafficOf(s.t.gw).ProxyProtocol {
		lst.ListenerFilters = append([]*listenerv3.ListenerFilter{proxyProtocol()}, lst.ListenerFilters...)
	}
	return lst
}

func httpsChain(l *ir.Listener, s *ir.TLSServer, traffic *ir.Traffic) *listenerv3.FilterChain {
	return filterChain(s.Name,
		matchSNI(s.SNI),
		downstreamTLSValidating(s.Certificates, alpnHTTP, s.ClientValidation),
		httpConnectionManager(l.Name, httpsRouteTable(l, s), traffic))
}

func httpsListener(l *ir.Listener, chains []*listenerv3.FilterChain) *listenerv3.Listener {
	if len(chains) == 0 {
		return nil
	}
	return listener(l.Name, l.Port, tlsInspector(), chains...)
}

// listener binds port with the given listener filter (may be nil) and chains.
func listener(name string, port int32, lf *listenerv3.ListenerFilter, chains ...*listenerv3.FilterChain) *listenerv3.Listener {
	l := &listenerv3.Listener{
		Name:         name,
		Address:      socketAddress(listenAddress, uint32(port)),
		FilterChains: chains,
	}
	if lf != nil {
		l.ListenerFilters = []*listenerv3.ListenerFilter{lf}
	}
	return l
}

// proxyProtocol reads the PROXY protocol header (v1 or v2) a load balancer
// sends first, and takes the connection's client address from it. A
// connection without one is refused.
func proxyProtocol() *listenerv3.ListenerFilter {
	return &listenerv3.ListenerFilter{
		Name:       filterProxyProtocol,
		ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: mustAny(&proxyprotocolv3.ProxyProtocol{})},
	}
}

// tlsInspector reads the ClientHello so that chains can match on SNI.
func tlsInspector() *listenerv3.ListenerFilter {
	return &listenerv3.ListenerFilter{
		Name:       filterTLSInspector,
		ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: mustAny(&tlsinspectorv3.TlsInspector{})},
	}
}

// filterChain is one chain: an optional match, an optional downstream
// transport socket, and one network filter.
func filterChain(name string, match *listenerv3.FilterChainMatch, ts *corev3.TransportSocket, f *listenerv3.Filter) *listenerv3.FilterChain {
	return &listenerv3.FilterChain{
		Name:             name,
		FilterChainMatch: match,
		TransportSocket:  ts,
		Filters:          []*listenerv3.Filter{f},
	}
}

// matchSNI matches TLS connections for the given server names; no names
// means any TLS connection (the catch-all chain).
func matchSNI(names []string) *listenerv3.FilterChainMatch {
	return &listenerv3.FilterChainMatch{ServerNames: names, TransportProtocol: "tls"}
}

// downstreamTLS terminates TLS with certificates fetched by SDS over ADS.
func downstreamTLS(certs []ir.SecretRef, alpn []string) *corev3.TransportSocket {
	return downstreamTLSValidating(certs, alpn, nil)
}

// downstreamTLSValidating is downstreamTLS that, with cv, also asks the
// client for a certificate and validates it against the CA bundle fetched
// by SDS (a validation-context secret):
//   - AllowValidOnly: require_client_certificate, and the default
//     verification (a certificate that does not chain to the CA fails the
//     handshake);
//   - AllowInsecureFallback: the certificate is optional, and
//     trust_chain_verification ACCEPT_UNTRUSTED lets a connection whose
//     certificate fails verification through (the CA is still offered to
//     the client and the result recorded).
func downstreamTLSValidating(certs []ir.SecretRef, alpn []string, cv *ir.ClientValidation) *corev3.TransportSocket {
	sds := make([]*tlsv3.SdsSecretConfig, 0, len(certs))
	for _, c := range certs {
		sds = append(sds, &tlsv3.SdsSecretConfig{Name: c.Name, SdsConfig: adsConfigSource()})
	}
	ctx := &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: sds,
		AlpnProtocols:                  alpn,
	}}
	if cv != nil {
		ca := &tlsv3.SdsSecretConfig{Name: cv.CA.Name, SdsConfig: adsConfigSource()}
		if cv.InsecureFallback {
			ctx.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_CombinedValidationContext{
				CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
					DefaultValidationContext: &tlsv3.CertificateValidationContext{
						TrustChainVerification: tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED,
					},
					ValidationContextSdsSecretConfig: ca,
				},
			}
		} else {
			ctx.RequireClientCertificate = wrapperspb.Bool(true)
			ctx.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContextSdsSecretConfig{
				ValidationContextSdsSecretConfig: ca,
			}
		}
	}
	return &corev3.TransportSocket{
		Name:       transportSocketTLS,
		ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(ctx)},
	}
}

// httpConnectionManager fetches routeConfig by RDS over ADS.
//
// The CORS filter is always installed: it does nothing for routes without a
// CORS policy, and installing it only when some route asks would change the
// listener (and drain its connections) whenever a route gains CORS. The
// buffer filter, which enforces request body limits, is always installed
// too, for the same reason, but disabled: only a route with a limit enables
// it (bufferPerRoute), so other routes keep streaming request bodies.
//
// normalize_path and merge_slashes make "/a/../b" and "//b" match like "/b",
// so path matches cannot be sidestepped by spelling a path differently.
//
// The client address (traffic):
//   - use_remote_address: the proxy is the edge, so the client address is
//     the connection's peer (or the PROXY protocol's source), appended to
//     X-Forwarded-For and set as X-Envoy-External-Address; the proxy sets
//     X-Forwarded-Proto to the scheme the client used;
//   - xff_num_trusted_hops: with n trusted proxies in front, the client
//     address is the n-th address from the right of X-Forwarded-For.
//
// WebSockets: with WebSocketsAll every route may upgrade, as ingress-nginx
// lets every location; otherwise routes enable it one by one.
//
// The access log, when set, goes to the proxy's standard output.
func httpConnectionManager(statPrefix, routeConfig string, traffic *ir.Traffic) *listenerv3.Filter {
	hcm := &hcmv3.HttpConnectionManager{
		CodecType:  hcmv3.HttpConnectionManager_AUTO,
		StatPrefix: statPrefix,
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    adsConfigSource(),
			RouteConfigName: routeConfig,
		}},
		HttpFilters: []*hcmv3.HttpFilter{
			httpFilter(filterCORS, &corsv3.Cors{}, true),
			bufferFilter(),
			httpFilter(filterRouter, &routerv3.Router{}, false),
		},
		NormalizePath:     boolean(true),
		MergeSlashes:      true,
		UseRemoteAddress:  boolean(true),
		XffNumTrustedHops: traffic.TrustedHops,
	}
	if traffic.WebSocketsAll {
		hcm.UpgradeConfigs = []*hcmv3.HttpConnectionManager_UpgradeConfig{{UpgradeType: "websocket"}}
	}
	if traffic.AccessLog != nil {
		hcm.AccessLog = []*accesslogv3.AccessLog{accessLog(traffic.AccessLog)}
	}
	return &listenerv3.Filter{
		Name:       filterHTTPConnectionManager,
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(hcm)},
	}
}

// httpFilter installs one HTTP filter. An optional filter is skipped by
// clients that lack it (gRPC's xDS client has no CORS) instead of failing
// the listener.
func httpFilter(name string, config proto.Message, optional bool) *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{
		Name:       name,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(config)},
		IsOptional: optional,
	}
}

// bufferFilter is the buffer filter, disabled unless a route enables it.
// Its own limit applies to no request (every route that enables it brings
// its limit) but must be set: Envoy requires one.
func bufferFilter() *hcmv3.HttpFilter {
	f := httpFilter(filterBuffer, &bufferv3.Buffer{MaxRequestBytes: u32(defaultMaxRequestBytes)}, true)
	f.Disabled = true
	return f
}

// defaultMaxRequestBytes is the buffer filter's listener-level limit.
const defaultMaxRequestBytes = 1 << 20

// tcpProxy forwards the stream to the backends by weight. The share of
// unresolved backends goes to InvalidBackendCluster, which closes the
// connection.
func tcpProxy(statPrefix string, backends []ir.Backend, invalid uint32) *listenerv3.Filter {
	p := &tcpproxyv3.TcpProxy{StatPrefix: statPrefix}
	ws := weightedBackends(backends, invalid)
	switch {
	case len(ws) == 0:
		p.ClusterSpecifier = &tcpproxyv3.TcpProxy_Cluster{Cluster: InvalidBackendCluster}
	case len(ws) == 1:
		p.ClusterSpecifier = &tcpproxyv3.TcpProxy_Cluster{Cluster: ws[0].cluster}
	default:
		cws := make([]*tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight, 0, len(ws))
		for _, w := range ws {
			cws = append(cws, &tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{Name: w.cluster, Weight: w.weight})
		}
		p.ClusterSpecifier = &tcpproxyv3.TcpProxy_WeightedClusters{WeightedClusters: &tcpproxyv3.TcpProxy_WeightedCluster{Clusters: cws}}
	}
	return &listenerv3.Filter{
		Name:       filterTCPProxy,
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(p)},
	}
}

// weighted is one cluster with its share of traffic.
type weighted struct {
	cluster string
	weight  uint32
	backend *ir.Backend // nil for InvalidBackendCluster
}

// weightedBackends drops backends with weight 0 (they get no traffic) and
// appends the unresolved share as InvalidBackendCluster. An empty result
// means nothing may be served.
func weightedBackends(backends []ir.Backend, invalid uint32) []weighted {
	ws := make([]weighted, 0, len(backends)+1)
	for i := range backends {
		if backends[i].Weight > 0 {
			ws = append(ws, weighted{cluster: backends[i].Cluster, weight: backends[i].Weight, backend: &backends[i]})
		}
	}
	if invalid > 0 && len(ws) > 0 {
		ws = append(ws, weighted{cluster: InvalidBackendCluster, weight: invalid})
	}
	return fitWeights(ws)
}

// fitWeights scales weights down, keeping their proportions and every
// weight at least 1, when their sum does not fit in a uint32: Envoy refuses
// a weighted_clusters whose weights sum past 2^32-1, which would NACK the
// whole route configuration. The CRDs cap a weight at 1,000,000 and a rule
// at 16 backendRefs, so only objects that skipped validation get here.
func fitWeights(ws []weighted) []weighted {
	var sum uint64
	for _, w := range ws {
		sum += uint64(w.weight)
	}
	shift := 0
	for (sum>>shift)+uint64(len(ws)) > math.MaxUint32 {
		shift++
	}
	if shift == 0 {
		return ws
	}
	for i := range ws {
		ws[i].weight = max(1, ws[i].weight>>shift)
	}
	return ws
}
