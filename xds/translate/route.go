/*
Copyright The shardgate Authors.
*/

package translate

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	bufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/buffer/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/shardgate/shardgate/internal/ir"
)

// retryOn covers the connection errors the Gateway API requires an
// implementation to retry once a retry stanza is set
// (HTTPRouteRetryConnectionError): connect-failure is a refused or timed
// out connection, refused-stream an HTTP/2 REFUSED_STREAM, reset a
// disconnect or reset before the response began. reset also covers the
// per-try timeout (HTTPRouteRetryBackendTimeout): Envoy resets an attempt
// that reaches per_try_timeout and retries it as a reset.
const retryOn = "connect-failure,refused-stream,reset"

// RouteConfiguration is the route table rt, its virtual hosts built by
// VirtualHost. Its scheme ("http" or "https") is what clients used to reach
// it; redirects need it to know the default port.
//
// Every route configuration sets X-Real-IP (clientAddressHeaders).
//
// ignore_port_in_host_matching lets "foo.example.com:8080" select the
// virtual host "foo.example.com" without ":*" domain variants, and without
// rewriting the Host header sent upstream (as strip_any_host_port would).
func (s *Scope) RouteConfiguration(rt RouteTable) (*routev3.RouteConfiguration, error) {
	rc := RouteConfigurationShell(rt.Name, len(rt.VirtualHosts))
	for _, v := range rt.VirtualHosts {
		vh, err := s.VirtualHost(rt.Scheme, v, nil)
		if err != nil {
			if rt.Server != "" {
				return nil, fmt.Errorf("tls server %s: virtual host %s: %w", rt.Server, v.Name, err)
			}
			return nil, fmt.Errorf("virtual host %s: %w", v.Name, err)
		}
		rc.VirtualHosts = append(rc.VirtualHosts, vh)
	}
	return rc, nil
}

// RouteConfigurationShell is the route configuration named name without
// its virtual hosts (room for n of them): everything a table holds but
// them.
func RouteConfigurationShell(name string, n int) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{
		Name:                     name,
		VirtualHosts:             make([]*routev3.VirtualHost, 0, n),
		IgnorePortInHostMatching: true,
		RequestHeadersToAdd:      clientAddressHeaders(),
	}
}

// clientAddressHeaders set X-Real-IP, as ingress-nginx does, to the
// client address the listener trusts (the connection's peer, the PROXY
// protocol's source, or the address trusted hops of X-Forwarded-For give:
// see httpConnectionManager), replacing whatever the client sent.
// X-Forwarded-For and X-Forwarded-Proto are the connection manager's.
// Envoy applies a route configuration's headers after its routes' own, so
// a route's header filter cannot change it.
func clientAddressHeaders() []*corev3.HeaderValueOption {
	return []*corev3.HeaderValueOption{{
		Header:       &corev3.HeaderValue{Key: "x-real-ip", Value: "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%"},
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
	}}
}

// VirtualHost translates one IR virtual host of a route table whose clients
// used scheme. It keeps the IR's route order: it is already Gateway API
// precedence, and Envoy takes the first match.
//
// carried are retained clusters the host keeps a never-matching route to
// (RetainedRoute), after its own routes.
func (s *Scope) VirtualHost(scheme string, v *ir.VirtualHost, carried []string) (*routev3.VirtualHost, error) {
	t := &s.t
	domains := v.Domains
	if len(domains) == 0 {
		domains = []string{v.Name}
	}
	vh := &routev3.VirtualHost{
		Name:    v.Name,
		Domains: domains,
		Routes:  make([]*routev3.Route, 0, len(v.Routes)),
	}
	for i := range v.Routes {
		var err error
		if vh.Routes, err = t.appendRoutes(vh.Routes, scheme, &v.Routes[i]); err != nil {
			return nil, fmt.Errorf("route %s: %w", v.Routes[i].Name, err)
		}
	}
	for _, c := range carried {
		vh.Routes = append(vh.Routes, RetainedRoute(c))
	}
	return vh, nil
}

// appendRoutes appends the Envoy routes for one IR route.
//
// A Gateway API PathPrefix matches whole segments: "/foo" matches "/foo" and
// "/foo/bar" but not "/foobar". Envoy's path_separated_prefix says exactly
// that, but gRPC's xDS client rejects the whole route table when it meets
// one, so a prefix other than "/" becomes two adjacent routes with the same
// action: path "/foo" and prefix "/foo/". Adjacent and disjoint, they keep
// the IR's precedence.
func (t *translator) appendRoutes(out []*routev3.Route, scheme string, r *ir.Route) ([]*routev3.Route, error) {
	if p := r.Match.Path; p != nil && p.Type == ir.MatchPathPrefix {
		if prefix := segmentPrefix(p.Value); prefix != "/" {
			exact, err := t.route(scheme, r, pathMatch{kind: pathExact, value: prefix})
			if err != nil {
				return nil, err
			}
			below, err := t.route(scheme, r, pathMatch{kind: pathPrefix, value: prefix + "/"})
			if err != nil {
				return nil, err
			}
			return append(out, exact, below), nil
		}
	}
	route, err := t.route(scheme, r, pathSpecifier(r.Match.Path))
	if err != nil {
		return nil, err
	}
	return append(out, route), nil
}

// route is one Envoy route for r, matching the path with path: a match, one
// action, and the filters.
func (t *translator) route(scheme string, r *ir.Route, path pathMatch) (*routev3.Route, error) {
	out := &routev3.Route{Name: r.Name, Match: routeMatch(path, &r.Match)}
	matched := matchedPath(path)
	reqAdd, reqRemove, hostSet := headerMutations(r.RequestHeaders)
	switch {
	case r.Redirect != nil:
		rd, err := redirect(scheme, r.Redirect, matched)
		if err != nil {
			return nil, err
		}
		out.Action = &routev3.Route_Redirect{Redirect: rd}
	case r.DirectResponse != nil:
		out.Action = directResponse(r.DirectResponse.Status, r.DirectResponse.Body)
	default:
		ws := weightedBackends(r.Backends, r.InvalidWeight)
		if len(ws) == 0 {
			out.Action = directResponse(500, "")
			break
		}
		a, err := t.routeAction(r, ws, matched)
		if err != nil {
			return nil, err
		}
		// Envoy refuses to add a Host header; a Set of Host is a host
		// rewrite, unless the URLRewrite filter already set one.
		if hostSet != "" && a.HostRewriteSpecifier == nil {
			a.HostRewriteSpecifier = &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: hostSet}
		}
		out.Action = &routev3.Route_Route{Route: a}
	}
	out.RequestHeadersToAdd, out.RequestHeadersToRemove = reqAdd, reqRemove
	out.ResponseHeadersToAdd, out.ResponseHeadersToRemove, _ = headerMutations(r.ResponseHeaders)
	if r.CORS != nil {
		out.TypedPerFilterConfig = map[string]*anypb.Any{filterCORS: optionalFilterConfig(corsPolicy(r.CORS))}
	}
	if r.MaxRequestBodyBytes > 0 {
		if out.TypedPerFilterConfig == nil {
			out.TypedPerFilterConfig = map[string]*anypb.Any{}
		}
		out.TypedPerFilterConfig[filterBuffer] = optionalFilterConfig(bufferPerRoute(r.MaxRequestBodyBytes))
	}
	return out, nil
}

// bufferPerRoute enables the (otherwise disabled) buffer filter on a route
// with its body limit: Envoy buffers the request body and answers 413 when
// it grows beyond limit bytes (or when Content-Length says it will).
func bufferPerRoute(limit uint32) *bufferv3.BufferPerRoute {
	return &bufferv3.BufferPerRoute{Override: &bufferv3.BufferPerRoute_Buffer{
		Buffer: &bufferv3.Buffer{MaxRequestBytes: u32(limit)},
	}}
}

// optionalFilterConfig wraps a per-route filter config as optional, so that
// xDS clients without the filter (gRPC) ignore it instead of rejecting the
// route table. Envoy always has the filter: every HCM installs it.
func optionalFilterConfig(m proto.Message) *anypb.Any {
	return mustAny(&routev3.FilterConfig{Config: mustAny(m), IsOptional: true})
}

// pathMatch is one Envoy path match: exact, (plain) prefix or regex.
type pathMatch struct {
	kind  pathKind
	value string
}

type pathKind int

const (
	pathPrefix pathKind = iota
	pathExact
	pathRegex
)

// pathSpecifier is the Envoy path match for an IR path other than a
// segment prefix (see appendRoutes).
func pathSpecifier(p *ir.PathMatch) pathMatch {
	switch {
	case p == nil:
		return pathMatch{kind: pathPrefix, value: "/"}
	case p.Type == ir.MatchExact:
		return pathMatch{kind: pathExact, value: p.Value}
	case p.Type == ir.MatchRegularExpression:
		return pathMatch{kind: pathRegex, value: p.Value}
	}
	return pathMatch{kind: pathPrefix, value: segmentPrefix(p.Value)}
}

// routeMatch ANDs path, headers, method and query parameters.
func routeMatch(path pathMatch, m *ir.Match) *routev3.RouteMatch {
	rm := &routev3.RouteMatch{}
	switch path.kind {
	case pathExact:
		rm.PathSpecifier = &routev3.RouteMatch_Path{Path: path.value}
	case pathRegex:
		rm.PathSpecifier = &routev3.RouteMatch_SafeRegex{SafeRegex: regex(path.value)}
	default:
		rm.PathSpecifier = &routev3.RouteMatch_Prefix{Prefix: path.value}
	}
	for _, h := range m.Headers {
		rm.Headers = append(rm.Headers, headerMatch(h.Name, h.Type, h.Value))
	}
	if m.Method != "" {
		rm.Headers = append(rm.Headers, headerMatch(":method", ir.MatchExact, m.Method))
	}
	for _, q := range m.QueryParams {
		rm.QueryParameters = append(rm.QueryParameters, &routev3.QueryParameterMatcher{
			Name:                         q.Name,
			QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_StringMatch{StringMatch: stringMatch(q.Type, q.Value)},
		})
	}
	return rm
}

// segmentPrefix is a PathPrefix value without its trailing slashes ("/" for
// the root).
func segmentPrefix(v string) string {
	v = strings.TrimRight(v, "/")
	if v == "" {
		return "/"
	}
	return v
}

// matchedPath is what Envoy's prefix_rewrite replaces: the exact path or
// the prefix the route matched. "" for a regex match.
func matchedPath(path pathMatch) string {
	if path.kind == pathRegex {
		return ""
	}
	return path.value
}

func headerMatch(name string, t ir.MatchType, value string) *routev3.HeaderMatcher {
	return &routev3.HeaderMatcher{
		Name:                 name,
		HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: stringMatch(t, value)},
	}
}

func stringMatch(t ir.MatchType, value string) *matcherv3.StringMatcher {
	if t == ir.MatchRegularExpression {
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: regex(value)}}
	}
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: value}}
}

func regex(re string) *matcherv3.RegexMatcher { return &matcherv3.RegexMatcher{Regex: re} }

func directResponse(status int, body string) *routev3.Route_DirectResponse {
	d := &routev3.DirectResponseAction{Status: uint32(status)}
	if body != "" {
		d.Body = &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: body}}
	}
	return &routev3.Route_DirectResponse{DirectResponse: d}
}

// routeAction forwards to the weighted backends with the rule's rewrite,
// timeouts, retries and mirrors.
func (t *translator) routeAction(r *ir.Route, ws []weighted, matched string) (*routev3.RouteAction, error) {
	a := &routev3.RouteAction{}
	if len(ws) == 1 && !hasFilters(ws[0].backend) {
		a.ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: ws[0].cluster}
	} else {
		a.ClusterSpecifier = &routev3.RouteAction_WeightedClusters{WeightedClusters: weightedClusters(ws)}
	}
	if ws[len(ws)-1].cluster == InvalidBackendCluster {
		a.ClusterNotFoundResponseCode = routev3.RouteAction_INTERNAL_SERVER_ERROR
	}

	if rw := r.Rewrite; rw != nil {
		if rw.Hostname != "" {
			a.HostRewriteSpecifier = &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: rw.Hostname}
		}
		if p := rw.Path; p != nil {
			switch p.Type {
			case ir.ReplaceFullPath:
				a.RegexRewrite = &matcherv3.RegexMatchAndSubstitute{Pattern: regex(`^/.*$`), Substitution: p.Value}
			case ir.ReplacePrefixMatch:
				if matched == "" {
					return nil, fmt.Errorf("ReplacePrefixMatch needs a PathPrefix match")
				}
				a.PrefixRewrite = replacePrefix(matched, p.Value)
			default:
				return nil, fmt.Errorf("unknown path modifier %q", p.Type)
			}
		}
	}

	// Zero attempts is no retry at all. (gRPC's xDS client also rejects a
	// route table with num_retries 0.)
	retry := r.Retry
	if retry != nil && retry.Attempts != nil && *retry.Attempts <= 0 {
		retry = nil
	}
	traffic := ir.TrafficOf(t.gw)
	// No cap on a whole response unless the route's timeouts say so
	// (timeouts), as ingress-nginx has none: Envoy's default would cut
	// every response at 15 s.
	a.Timeout = duration(0)
	var idle *time.Duration
	switch {
	case r.GRPC:
		if r.Timeouts == nil {
			grpcTimeouts(a)
		}
	default:
		d := traffic.IdleTimeout.Duration
		if r.IdleTimeout != nil {
			d = r.IdleTimeout.Duration
		}
		idle = &d
		a.IdleTimeout = duration(d)
	}
	timeouts(a, r.Timeouts, retry)
	a.RetryPolicy = retryPolicy(retry, r.Timeouts, idle)
	for _, m := range r.Mirrors {
		a.RequestMirrorPolicies = append(a.RequestMirrorPolicies, &routev3.RouteAction_RequestMirrorPolicy{
			Cluster:         m.Cluster,
			RuntimeFraction: fraction(m.Numerator, m.Denominator),
		})
	}
	// With WebSocketsAll the listener lets every route upgrade
	// (httpConnectionManager); otherwise only the routes that ask do.
	if !traffic.WebSocketsAll && (r.WebSocket || t.wantsWebSocket(ws)) {
		a.UpgradeConfigs = []*routev3.RouteAction_UpgradeConfig{{UpgradeType: "websocket"}}
	}
	return a, nil
}

func hasFilters(b *ir.Backend) bool {
	return b != nil && (b.RequestHeaders != nil || b.ResponseHeaders != nil)
}

// weightedClusters carries each backend's own header filters.
func weightedClusters(ws []weighted) *routev3.WeightedCluster {
	cws := make([]*routev3.WeightedCluster_ClusterWeight, 0, len(ws))
	for _, w := range ws {
		cw := &routev3.WeightedCluster_ClusterWeight{Name: w.cluster, Weight: u32(w.weight)}
		if b := w.backend; b != nil {
			// A per-backend Host set cannot become a rewrite on a weighted
			// cluster entry; headerMutations already drops it.
			cw.RequestHeadersToAdd, cw.RequestHeadersToRemove, _ = headerMutations(b.RequestHeaders)
			cw.ResponseHeadersToAdd, cw.ResponseHeadersToRemove, _ = headerMutations(b.ResponseHeaders)
		}
		cws = append(cws, cw)
	}
	return &routev3.WeightedCluster{Clusters: cws}
}

// wantsWebSocket is true when any backend's Service speaks WebSocket.
func (t *translator) wantsWebSocket(ws []weighted) bool {
	for _, w := range ws {
		if c := t.cluster(w.cluster); c != nil && c.WebSocket {
			return true
		}
	}
	return false
}

// replacePrefix is the prefix_rewrite that replaces the Gateway API prefix
// with replacement, given what the Envoy route matched (see appendRoutes):
// "/foo" → "/bar" turns "/foo" into "/bar" and "/foo/x" into "/bar/x", and
// "/foo" → "/" turns "/foo/x" into "/x", not "//x". "" means no rewrite.
func replacePrefix(matched, replacement string) string {
	r := strings.TrimRight(replacement, "/")
	switch {
	case matched == "/" && r == "":
		return ""
	case strings.HasSuffix(matched, "/"):
		// The matched prefix ends in the separator: keep one.
		return r + "/"
	case r == "":
		return "/"
	}
	return r
}

// redirect answers with a Location built from the filter. The port is left
// out when it is the default port of the resulting scheme.
func redirect(scheme string, rd *ir.Redirect, prefix string) (*routev3.RedirectAction, error) {
	a := &routev3.RedirectAction{HostRedirect: rd.Hostname}
	if rd.Scheme != "" {
		scheme = strings.ToLower(rd.Scheme)
		a.SchemeRewriteSpecifier = &routev3.RedirectAction_SchemeRedirect{SchemeRedirect: scheme}
	}
	if rd.Port != 0 && !isDefaultPort(scheme, rd.Port) {
		a.PortRedirect = uint32(rd.Port)
	}
	code, ok := redirectCodes[rd.StatusCode]
	if !ok {
		return nil, fmt.Errorf("unsupported redirect status code %d", rd.StatusCode)
	}
	a.ResponseCode = code
	if p := rd.Path; p != nil {
		switch p.Type {
		case ir.ReplaceFullPath:
			a.PathRewriteSpecifier = &routev3.RedirectAction_PathRedirect{PathRedirect: p.Value}
		case ir.ReplacePrefixMatch:
			if prefix == "" {
				return nil, fmt.Errorf("ReplacePrefixMatch needs a PathPrefix match")
			}
			if pr := replacePrefix(prefix, p.Value); pr != "" {
				a.PathRewriteSpecifier = &routev3.RedirectAction_PrefixRewrite{PrefixRewrite: pr}
			}
		default:
			return nil, fmt.Errorf("unknown path modifier %q", p.Type)
		}
	}
	return a, nil
}

// redirectCodes maps the Gateway API's redirect codes; 0 is the spec's
// default, 302.
var redirectCodes = map[int]routev3.RedirectAction_RedirectResponseCode{
	0:   routev3.RedirectAction_FOUND,
	301: routev3.RedirectAction_MOVED_PERMANENTLY,
	302: routev3.RedirectAction_FOUND,
	303: routev3.RedirectAction_SEE_OTHER,
	307: routev3.RedirectAction_TEMPORARY_REDIRECT,
	308: routev3.RedirectAction_PERMANENT_REDIRECT,
}

func isDefaultPort(scheme string, port int32) bool {
	return (scheme == "http" && port == 80) || (scheme == "https" && port == 443)
}

// timeouts sets the route timeout. Request bounds the whole exchange. With
// no retry there is a single attempt, so BackendRequest bounds it too and
// the shorter wins; with a retry, BackendRequest is the per-try timeout
// (retryPolicy), and without a Request timeout the route timeout is the
// retry budget (retryBudget), so that Envoy's default 15 s cannot cut the
// retries short. Zero disables a timeout; nil leaves a.Timeout as it is
// (the caller's 0: none).
func timeouts(a *routev3.RouteAction, to *ir.Timeouts, retry *ir.Retry) {
	if to == nil {
		return
	}
	var d *time.Duration
	if to.Request != nil {
		d = &to.Request.Duration
	}
	if retry != nil && d == nil && to.BackendRequest != nil && to.BackendRequest.Duration > 0 {
		a.Timeout = duration(retryBudget(retry, to.BackendRequest.Duration))
		return
	}
	if to.BackendRequest != nil && retry == nil {
		b := to.BackendRequest.Duration
		if d == nil || *d == 0 || (b != 0 && b < *d) {
			d = &b
		}
	}
	if d != nil {
		a.Timeout = duration(*d)
	}
}

// retryBudget is the time every attempt of a retried request may take:
// each attempt its per-try timeout, each retry Envoy's longest backoff
// (ten times the base interval, 25 ms unless set) before it. Attempts
// unset is Envoy's one retry. A budget too large to express is 0 (none).
func retryBudget(r *ir.Retry, perTry time.Duration) time.Duration {
	retries := 1
	if r.Attempts != nil {
		retries = *r.Attempts
	}
	base := 25 * time.Millisecond
	if r.Backoff != nil && r.Backoff.Duration > 0 {
		base = r.Backoff.Duration
	}
	total := float64(retries+1)*perTry.Seconds() + float64(retries)*10*base.Seconds()
	if total >= float64(maxDurationSeconds) {
		return 0
	}
	return time.Duration(total * float64(time.Second)).Round(time.Millisecond)
}

// maxDurationSeconds bounds the route timeouts written (about 29 years).
const maxDurationSeconds = 1 << 30

// grpcTimeouts replaces Envoy's default 15 s route timeout, which would cut
// every longer stream, with the client's own deadline: the grpc-timeout
// header, unlimited (0) when the client sets none.
func grpcTimeouts(a *routev3.RouteAction) {
	a.Timeout = duration(0)
	a.MaxStreamDuration = &routev3.RouteAction_MaxStreamDuration{GrpcTimeoutHeaderMax: duration(0)}
}

// retryPolicy is the route's retry policy. Without a per-try timeout
// (BackendRequest), each attempt gets the route's idle timeout as
// per_try_idle_timeout (idle, when set and not 0): an attempt whose
// backend sends nothing for that long is retried while no response has
// begun, as NGINX passes such a request to the next upstream, and a
// response under way is never cut by a retry timer.
func retryPolicy(r *ir.Retry, to *ir.Timeouts, idle *time.Duration) *routev3.RetryPolicy {
	if r == nil {
		return nil
	}
	p := &routev3.RetryPolicy{RetryOn: retryOn}
	if len(r.Codes) > 0 {
		p.RetryOn += ",retriable-status-codes"
		p.RetriableStatusCodes = make([]uint32, 0, len(r.Codes))
		for _, c := range r.Codes {
			p.RetriableStatusCodes = append(p.RetriableStatusCodes, uint32(c))
		}
	}
	if r.Attempts != nil {
		p.NumRetries = u32(uint32(*r.Attempts))
	}
	if r.IdempotentOnly {
		p.RetriableRequestHeaders = []*routev3.HeaderMatcher{nonIdempotentMethods()}
	}
	if r.Backoff != nil && r.Backoff.Duration > 0 {
		p.RetryBackOff = &routev3.RetryPolicy_RetryBackOff{BaseInterval: duration(r.Backoff.Duration)}
	}
	switch {
	case to != nil && to.BackendRequest != nil && to.BackendRequest.Duration > 0:
		p.PerTryTimeout = duration(to.BackendRequest.Duration)
	case idle != nil && *idle > 0:
		p.PerTryIdleTimeout = duration(*idle)
	}
	return p
}

// nonIdempotentMethods matches every request whose method is not one NGINX
// treats as non-idempotent (POST, PATCH, LOCK): a retry policy that
// requires it never retries those requests, not even after a connection
// failure.
func nonIdempotentMethods() *routev3.HeaderMatcher {
	m := headerMatch(":method", ir.MatchRegularExpression, "POST|PATCH|LOCK")
	m.InvertMatch = true
	return m
}

// fraction is numerator/denominator as a runtime fraction; nil means all
// requests. Denominators Envoy cannot express are scaled to a million.
func fraction(num, den int32) *corev3.RuntimeFractionalPercent {
	if den <= 0 || num >= den {
		return nil
	}
	f := &typev3.FractionalPercent{Numerator: uint32(max(num, 0))}
	switch den {
	case 100:
		f.Denominator = typev3.FractionalPercent_HUNDRED
	case 10_000:
		f.Denominator = typev3.FractionalPercent_TEN_THOUSAND
	case 1_000_000:
		f.Denominator = typev3.FractionalPercent_MILLION
	default:
		f.Denominator = typev3.FractionalPercent_MILLION
		f.Numerator = uint32((int64(max(num, 0))*1_000_000 + int64(den)/2) / int64(den))
	}
	return &corev3.RuntimeFractionalPercent{DefaultValue: f}
}

// headerMutations turns a modifier into Envoy's add and remove lists, in
// the IR order Set, Add, Remove. Envoy refuses any mutation of Host or a
// pseudo-header, so those are left out; a Set of Host is returned as host,
// for the caller to turn into a host rewrite where it can.
func headerMutations(h *ir.HeaderModifier) (add []*corev3.HeaderValueOption, remove []string, host string) {
	if h == nil {
		return nil, nil, ""
	}
	for _, s := range h.Set {
		if isHost(s.Name) {
			host = s.Value
			continue
		}
		if IsModifiable(s.Name) {
			add = append(add, headerValue(s, corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD))
		}
	}
	for _, s := range h.Add {
		if IsModifiable(s.Name) {
			add = append(add, headerValue(s, corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD))
		}
	}
	for _, n := range h.Remove {
		if IsModifiable(n) {
			remove = append(remove, n)
		}
	}
	return add, remove, host
}

func headerValue(h ir.Header, action corev3.HeaderValueOption_HeaderAppendAction) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{
		Header:       &corev3.HeaderValue{Key: h.Name, Value: h.Value},
		AppendAction: action,
	}
}

func isHost(name string) bool { return strings.EqualFold(name, "host") || name == ":authority" }

// IsModifiable mirrors Envoy's HeaderUtility::isModifiableHeader.
func IsModifiable(name string) bool { return name != "" && name[0] != ':' && !isHost(name) }

// corsPolicy is the per-route CORS configuration for the CORS filter.
func corsPolicy(c *ir.CORS) *corsv3.CorsPolicy {
	p := &corsv3.CorsPolicy{
		AllowMethods:  strings.Join(c.AllowMethods, ","),
		AllowHeaders:  strings.Join(c.AllowHeaders, ","),
		ExposeHeaders: strings.Join(c.ExposeHeaders, ","),
	}
	for _, o := range c.AllowOrigins {
		p.AllowOriginStringMatch = append(p.AllowOriginStringMatch, originMatch(o))
	}
	if c.MaxAge > 0 {
		p.MaxAge = strconv.Itoa(int(c.MaxAge))
	}
	if c.AllowCredentials {
		p.AllowCredentials = boolean(true)
	}
	return p
}

// originMatch matches an allowed origin. "*" is any origin; a "*" inside an
// origin ("https://*.example.com") matches any run of host characters.
func originMatch(o string) *matcherv3.StringMatcher {
	if o == "*" {
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: regex(".*")}}
	}
	if strings.Contains(o, "*") {
		re := strings.ReplaceAll(regexp.QuoteMeta(o), `\*`, `[a-zA-Z0-9.-]+`)
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: regex(re)}}
	}
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: o}}
}
