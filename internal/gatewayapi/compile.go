/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/ir"
)

// compiledRoute is a route's rules turned into IR templates, with the facts
// its status needs. It does not depend on the Gateway it attaches to.
type compiledRoute struct {
	key       RouteKey
	gen       int64
	created   metav1.Time
	uid       types.UID
	hostnames []string
	refs      []gatewayv1.ParentReference
	// controller is the UID of the route's controller ownerReference
	// ("" when none): shards tell the routes shardgate generates by it.
	controller types.UID
	// acmeSolver: an HTTPRoute of the shape of an ACME HTTP-01 solver
	// route (acmeSolverShape).
	acmeSolver bool

	rules []compiledRule // valid rules only, in spec order

	// Rule validity: when every rule was dropped the route is not accepted.
	allDropped bool
	dropReason string
	dropMsgs   []string

	refsReason string // "" = all references resolved
	refsMsg    string

	backends []backend // resolved backends, for the Gateway's clusters
}

type compiledRule struct {
	index  int
	name   string
	routes []ir.Route // one per match (HTTP, gRPC)
	// grpcKeys, parallel to routes for GRPCRoutes, carry the gRPC
	// precedence inputs.
	grpcKeys []grpcKey

	// TLSRoute, TCPRoute: the rule's backends (a stream has no match).
	tlsBackends      []ir.Backend
	tlsInvalidWeight uint32
}

func (cr *compiledRoute) refsProblem(reason, msg string) {
	if cr.refsReason == "" {
		cr.refsReason, cr.refsMsg = reason, msg
	}
}

func (cr *compiledRoute) drop(i int, reason, msg string) {
	if cr.dropReason == "" {
		cr.dropReason = reason
	}
	cr.dropMsgs = append(cr.dropMsgs, fmt.Sprintf("rule %d: %s", i, msg))
}

func (cr *compiledRoute) finish(nrules int) {
	cr.allDropped = nrules > 0 && len(cr.rules) == 0
}

func controllerUID(o metav1.Object) types.UID {
	if ref := metav1.GetControllerOf(o); ref != nil {
		return ref.UID
	}
	return ""
}

func lowerHostnames(hs []gatewayv1.Hostname) []string {
	out := make([]string, 0, len(hs))
	for _, h := range hs {
		out = append(out, strings.ToLower(string(h)))
	}
	return out
}

// ruleError is why a rule is dropped: an Accepted reason and a message.
type ruleError struct{ reason, msg string }

func unsupported(format string, a ...any) *ruleError {
	return &ruleError{reason: string(gatewayv1.RouteReasonUnsupportedValue), msg: fmt.Sprintf(format, a...)}
}

// compileHTTPRules compiles the rules of an HTTPRoute, with the settings
// of its annotations.
func compileHTTPRules(idx *Index, rk *routeKind, cr *compiledRoute, obj Object) int {
	r := obj.(*gatewayv1.HTTPRoute)
	settings, serr := httpRouteSettings(r)
	cr.rules = make([]compiledRule, 0, len(r.Spec.Rules))
	for i := range r.Spec.Rules {
		if serr != nil {
			cr.drop(i, serr.reason, serr.msg)
			continue
		}
		rule := settings.ruleWithRetry(&r.Spec.Rules[i])
		matches, err := httpMatches(rule.Matches)
		if err == nil {
			var c compiledRule
			c, err = idx.compileRequestRule(rk, cr, i, requestRule{
				name: rule.Name, matches: matches, filters: rule.Filters, backendRefs: rule.BackendRefs,
				timeouts: rule.Timeouts, retry: rule.Retry, sessionPersistence: rule.SessionPersistence,
			})
			if err == nil {
				settings.apply(c.routes)
				cr.rules = append(cr.rules, c)
				continue
			}
		}
		cr.drop(i, err.reason, err.msg)
	}
	return len(r.Spec.Rules)
}

// requestRule is a rule of a kind that routes requests (HTTPRoute,
// GRPCRoute) as compileRequestRule reads it: its matches already in IR,
// its filters as HTTPRoute filters (a GRPCRoute filter is one of them).
type requestRule struct {
	name        *gatewayv1.SectionName
	matches     []ir.Match
	grpcKeys    []grpcKey // parallel to matches, for GRPCRoutes
	filters     []gatewayv1.HTTPRouteFilter
	backendRefs []gatewayv1.HTTPBackendRef

	timeouts           *gatewayv1.HTTPRouteTimeouts
	retry              *gatewayv1.HTTPRouteRetry
	sessionPersistence *gatewayv1.SessionPersistence
}

// compileRequestRule compiles rule i of a route of kind rk that routes
// requests: one IR route per match.
func (idx *Index) compileRequestRule(rk *routeKind, cr *compiledRoute, i int, rule requestRule) (compiledRule, *ruleError) {
	c := compiledRule{index: i}
	if rule.name != nil {
		c.name = string(*rule.name)
	}
	matches := rule.matches
	ns := cr.key.NN.Namespace

	var tmpl ir.Route
	tmpl.GRPC = rk.grpc
	tmpl.Source = ir.Source{Kind: cr.key.Kind, Namespace: cr.key.NN.Namespace, Name: cr.key.NN.Name, Rule: i, RuleName: c.name}
	fail500 := false
	for fi := range rule.filters {
		f := &rule.filters[fi]
		if !rk.hasFilter(f.Type) {
			return c, unsupported("filter type %q is not supported", f.Type)
		}
		switch f.Type {
		case gatewayv1.HTTPRouteFilterRequestHeaderModifier:
			tmpl.RequestHeaders = mergeHeaders(tmpl.RequestHeaders, f.RequestHeaderModifier)
		case gatewayv1.HTTPRouteFilterResponseHeaderModifier:
			tmpl.ResponseHeaders = mergeHeaders(tmpl.ResponseHeaders, f.ResponseHeaderModifier)
		case gatewayv1.HTTPRouteFilterRequestRedirect:
			if f.RequestRedirect == nil {
				return c, unsupported("RequestRedirect filter without requestRedirect")
			}
			rd, err := redirect(f.RequestRedirect, matches)
			if err != nil {
				return c, err
			}
			tmpl.Redirect = rd
		case gatewayv1.HTTPRouteFilterURLRewrite:
			if f.URLRewrite == nil {
				return c, unsupported("URLRewrite filter without urlRewrite")
			}
			rw := &ir.Rewrite{}
			if f.URLRewrite.Hostname != nil {
				rw.Hostname = string(*f.URLRewrite.Hostname)
			}
			if f.URLRewrite.Path != nil {
				pm, err := pathModifier(f.URLRewrite.Path, matches)
				if err != nil {
					return c, err
				}
				rw.Path = pm
			}
			tmpl.Rewrite = rw
		case gatewayv1.HTTPRouteFilterRequestMirror:
			if f.RequestMirror == nil {
				return c, unsupported("RequestMirror filter without requestMirror")
			}
			if m, ok := idx.mirror(rk, cr, ns, f.RequestMirror); ok {
				tmpl.Mirrors = append(tmpl.Mirrors, m)
			}
		case gatewayv1.HTTPRouteFilterCORS:
			if f.CORS != nil {
				tmpl.CORS = cors(f.CORS)
			}
		case gatewayv1.HTTPRouteFilterExtensionRef:
			// No extension kinds exist here; the filter must not be
			// skipped, so the rule answers 500.
			name := ""
			if f.ExtensionRef != nil {
				name = fmt.Sprintf("%s/%s %s", f.ExtensionRef.Group, f.ExtensionRef.Kind, f.ExtensionRef.Name)
			}
			cr.refsProblem(string(gatewayv1.RouteReasonInvalidKind), "extensionRef filter "+name+" is not supported")
			fail500 = true
		default:
			return c, unsupported("filter type %q is not supported", f.Type)
		}
	}
	if tmpl.Redirect != nil && tmpl.Rewrite != nil {
		return c, &ruleError{reason: string(gatewayv1.RouteReasonIncompatibleFilters), msg: "RequestRedirect and URLRewrite cannot be combined"}
	}
	if tmpl.Redirect != nil && len(rule.backendRefs) > 0 {
		return c, &ruleError{reason: string(gatewayv1.RouteReasonIncompatibleFilters), msg: "RequestRedirect cannot be combined with backendRefs"}
	}
	if rule.timeouts != nil {
		t, err := timeouts(rule.timeouts)
		if err != nil {
			return c, err
		}
		tmpl.Timeouts = t
	}
	if rule.retry != nil {
		rt, err := retry(rule.retry)
		if err != nil {
			return c, err
		}
		tmpl.Retry = rt
	}
	if rule.sessionPersistence != nil {
		sp, err := sessionPersistence(rule.sessionPersistence)
		if err != nil {
			return c, err
		}
		tmpl.SessionPersistence = sp
	}

	// Backends. Filters on a backendRef: only header modifiers.
	var bes []ir.Backend
	var invalid uint32
	for bi := range rule.backendRefs {
		br := &rule.backendRefs[bi]
		w := weight(br.Weight)
		b := idx.resolveBackend(rk, ns, br.BackendObjectReference)
		if b.cluster == "" {
			cr.refsProblem(b.reason, b.msg)
			invalid += w
			continue
		}
		be := ir.Backend{Cluster: b.cluster, Weight: w}
		for fi := range br.Filters {
			f := &br.Filters[fi]
			switch f.Type {
			case gatewayv1.HTTPRouteFilterRequestHeaderModifier:
				be.RequestHeaders = mergeHeaders(be.RequestHeaders, f.RequestHeaderModifier)
			case gatewayv1.HTTPRouteFilterResponseHeaderModifier:
				be.ResponseHeaders = mergeHeaders(be.ResponseHeaders, f.ResponseHeaderModifier)
			default:
				return c, unsupported("backendRef %d: only header modifier filters are supported on backendRefs", bi)
			}
		}
		if w == 0 {
			continue
		}
		cr.backends = append(cr.backends, b)
		bes = append(bes, be)
	}
	switch {
	case tmpl.Redirect != nil:
	case fail500, len(bes) == 0:
		tmpl.DirectResponse = &ir.DirectResponse{Status: 500}
	default:
		tmpl.Backends = bes
		tmpl.InvalidWeight = invalid
	}

	c.routes = make([]ir.Route, 0, len(matches))
	for mi, m := range matches {
		rt := tmpl
		rt.Match = m
		rt.Name = ruleMatchName(rk.irName, cr.key.NN, i, mi)
		c.routes = append(c.routes, rt)
	}
	c.grpcKeys = rule.grpcKeys
	return c, nil
}

// ruleMatchName names the IR route of match mi of rule i of a route:
// "<kind>/<namespace>/<name>/rule/<i>/match/<mi>".
func ruleMatchName(kind string, route types.NamespacedName, i, mi int) string {
	var b strings.Builder
	b.Grow(len(kind) + len(route.Namespace) + len(route.Name) + 24)
	b.WriteString(kind)
	b.WriteByte('/')
	b.WriteString(route.Namespace)
	b.WriteByte('/')
	b.WriteString(route.Name)
	b.WriteString("/rule/")
	b.WriteString(strconv.Itoa(i))
	b.WriteString("/match/")
	b.WriteString(strconv.Itoa(mi))
	return b.String()
}

func weight(w *int32) uint32 {
	if w == nil {
		return 1
	}
	if *w < 0 {
		return 0
	}
	return uint32(*w)
}

// httpMatches turns rule matches into IR matches; no match means "/"
// prefix.
func httpMatches(ms []gatewayv1.HTTPRouteMatch) ([]ir.Match, *ruleError) {
	if len(ms) == 0 {
		return []ir.Match{{Path: &ir.PathMatch{Type: ir.MatchPathPrefix, Value: "/"}}}, nil
	}
	out := make([]ir.Match, 0, len(ms))
	for _, m := range ms {
		var im ir.Match
		if m.Path == nil {
			im.Path = &ir.PathMatch{Type: ir.MatchPathPrefix, Value: "/"}
		} else {
			t := gatewayv1.PathMatchPathPrefix
			if m.Path.Type != nil {
				t = *m.Path.Type
			}
			v := "/"
			if m.Path.Value != nil {
				v = *m.Path.Value
			}
			switch t {
			case gatewayv1.PathMatchExact:
				im.Path = &ir.PathMatch{Type: ir.MatchExact, Value: v}
			case gatewayv1.PathMatchPathPrefix:
				im.Path = &ir.PathMatch{Type: ir.MatchPathPrefix, Value: v}
			case gatewayv1.PathMatchRegularExpression:
				if err := checkRegex(v); err != nil {
					return nil, unsupported("invalid path regular expression %q: %v", v, err)
				}
				im.Path = &ir.PathMatch{Type: ir.MatchRegularExpression, Value: v}
			default:
				return nil, unsupported("path match type %q is not supported", t)
			}
			if t != gatewayv1.PathMatchRegularExpression && !strings.HasPrefix(v, "/") {
				return nil, unsupported("path %q must start with /", v)
			}
		}
		for _, h := range m.Headers {
			t := gatewayv1.HeaderMatchExact
			if h.Type != nil {
				t = *h.Type
			}
			vm, err := valueMatch(string(h.Name), string(t), h.Value, "header")
			if err != nil {
				return nil, err
			}
			im.Headers = append(im.Headers, vm)
		}
		for _, q := range m.QueryParams {
			t := gatewayv1.QueryParamMatchExact
			if q.Type != nil {
				t = *q.Type
			}
			vm, err := valueMatch(string(q.Name), string(t), q.Value, "query parameter")
			if err != nil {
				return nil, err
			}
			im.QueryParams = append(im.QueryParams, vm)
		}
		if m.Method != nil {
			im.Method = string(*m.Method)
		}
		out = append(out, im)
	}
	return out, nil
}

func valueMatch(name, typ, value, what string) (ir.ValueMatch, *ruleError) {
	switch typ {
	case "Exact":
		return ir.ValueMatch{Name: name, Type: ir.MatchExact, Value: value}, nil
	case "RegularExpression":
		if err := checkRegex(value); err != nil {
			return ir.ValueMatch{}, unsupported("invalid %s %s regular expression %q: %v", what, name, value, err)
		}
		return ir.ValueMatch{Name: name, Type: ir.MatchRegularExpression, Value: value}, nil
	}
	return ir.ValueMatch{}, unsupported("%s match type %q is not supported", what, typ)
}

func mergeHeaders(cur *ir.HeaderModifier, f *gatewayv1.HTTPHeaderFilter) *ir.HeaderModifier {
	if f == nil {
		return cur
	}
	if cur == nil {
		cur = &ir.HeaderModifier{}
	}
	for _, h := range f.Set {
		cur.Set = append(cur.Set, ir.Header{Name: string(h.Name), Value: h.Value})
	}
	for _, h := range f.Add {
		cur.Add = append(cur.Add, ir.Header{Name: string(h.Name), Value: h.Value})
	}
	cur.Remove = append(cur.Remove, f.Remove...)
	return cur
}

func pathModifier(p *gatewayv1.HTTPPathModifier, matches []ir.Match) (*ir.PathModifier, *ruleError) {
	switch p.Type {
	case gatewayv1.FullPathHTTPPathModifier:
		v := "/"
		if p.ReplaceFullPath != nil {
			v = *p.ReplaceFullPath
		}
		return &ir.PathModifier{Type: ir.ReplaceFullPath, Value: v}, nil
	case gatewayv1.PrefixMatchHTTPPathModifier:
		for _, m := range matches {
			if m.Path == nil || m.Path.Type != ir.MatchPathPrefix {
				return nil, unsupported("ReplacePrefixMatch requires PathPrefix matches")
			}
		}
		v := "/"
		if p.ReplacePrefixMatch != nil {
			v = *p.ReplacePrefixMatch
		}
		return &ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: v}, nil
	}
	return nil, unsupported("path modifier type %q is not supported", p.Type)
}

func redirect(f *gatewayv1.HTTPRequestRedirectFilter, matches []ir.Match) (*ir.Redirect, *ruleError) {
	rd := &ir.Redirect{StatusCode: 302}
	if f.StatusCode != nil {
		switch *f.StatusCode {
		case 301, 302, 303, 307, 308:
			rd.StatusCode = *f.StatusCode
		default:
			return nil, unsupported("redirect status code %d is not supported", *f.StatusCode)
		}
	}
	if f.Scheme != nil {
		switch *f.Scheme {
		case "http", "https":
			rd.Scheme = *f.Scheme
		default:
			return nil, unsupported("redirect scheme %q is not supported", *f.Scheme)
		}
	}
	if f.Hostname != nil {
		rd.Hostname = string(*f.Hostname)
	}
	if f.Port != nil {
		rd.Port = *f.Port
	}
	if f.Path != nil {
		pm, err := pathModifier(f.Path, matches)
		if err != nil {
			return nil, err
		}
		rd.Path = pm
	}
	return rd, nil
}

// redirectPort resolves the redirect port per the spec: the filter's port,
// else the scheme's well-known port when the scheme is set, else the
// listener's port.
func redirectPort(rd *ir.Redirect, listenerPort int32) *ir.Redirect {
	if rd == nil || rd.Port != 0 {
		return rd
	}
	out := *rd
	switch rd.Scheme {
	case "http":
		out.Port = 80
	case "https":
		out.Port = 443
	default:
		out.Port = listenerPort
	}
	return &out
}

func (idx *Index) mirror(rk *routeKind, cr *compiledRoute, ns string, f *gatewayv1.HTTPRequestMirrorFilter) (ir.Mirror, bool) {
	b := idx.resolveBackend(rk, ns, f.BackendRef)
	if b.cluster == "" {
		cr.refsProblem(b.reason, "mirror: "+b.msg)
		return ir.Mirror{}, false
	}
	m := ir.Mirror{Cluster: b.cluster, Numerator: 100, Denominator: 100}
	switch {
	case f.Percent != nil:
		m.Numerator = *f.Percent
	case f.Fraction != nil:
		m.Numerator = f.Fraction.Numerator
		m.Denominator = 100
		if f.Fraction.Denominator != nil && *f.Fraction.Denominator > 0 {
			m.Denominator = *f.Fraction.Denominator
		}
	}
	if m.Numerator < 0 {
		m.Numerator = 0
	}
	if m.Numerator > m.Denominator {
		m.Numerator = m.Denominator
	}
	cr.backends = append(cr.backends, b)
	return m, true
}

func cors(f *gatewayv1.HTTPCORSFilter) *ir.CORS {
	c := &ir.CORS{MaxAge: f.MaxAge}
	for _, o := range f.AllowOrigins {
		c.AllowOrigins = append(c.AllowOrigins, string(o))
	}
	if f.AllowCredentials != nil {
		c.AllowCredentials = *f.AllowCredentials
	}
	for _, m := range f.AllowMethods {
		c.AllowMethods = append(c.AllowMethods, string(m))
	}
	for _, h := range f.AllowHeaders {
		c.AllowHeaders = append(c.AllowHeaders, string(h))
	}
	for _, h := range f.ExposeHeaders {
		c.ExposeHeaders = append(c.ExposeHeaders, string(h))
	}
	return c
}

// parseDuration parses a Gateway API Duration (GEP-2257: a subset of Go's
// syntax, units h, m, s, ms).
func parseDuration(d gatewayv1.Duration) (*metav1.Duration, *ruleError) {
	v, err := time.ParseDuration(string(d))
	if err != nil || v < 0 {
		return nil, unsupported("invalid duration %q", d)
	}
	return &metav1.Duration{Duration: v}, nil
}

func timeouts(t *gatewayv1.HTTPRouteTimeouts) (*ir.Timeouts, *ruleError) {
	out := &ir.Timeouts{}
	var err *ruleError
	if t.Request != nil {
		if out.Request, err = parseDuration(*t.Request); err != nil {
			return nil, err
		}
	}
	if t.BackendRequest != nil {
		if out.BackendRequest, err = parseDuration(*t.BackendRequest); err != nil {
			return nil, err
		}
	}
	if out.Request != nil && out.BackendRequest != nil && out.Request.Duration != 0 &&
		(out.BackendRequest.Duration == 0 || out.BackendRequest.Duration > out.Request.Duration) {
		return nil, unsupported("backendRequest timeout must not exceed request timeout")
	}
	if out.Request == nil && out.BackendRequest == nil {
		return nil, nil
	}
	return out, nil
}

func retry(r *gatewayv1.HTTPRouteRetry) (*ir.Retry, *ruleError) {
	out := &ir.Retry{}
	for _, c := range r.Codes {
		out.Codes = append(out.Codes, int(c))
	}
	if r.Attempts != nil {
		a := *r.Attempts
		if a < 0 {
			return nil, unsupported("retry attempts must not be negative")
		}
		out.Attempts = &a
	}
	if r.Backoff != nil {
		d, err := parseDuration(*r.Backoff)
		if err != nil {
			return nil, err
		}
		out.Backoff = d
	}
	return out, nil
}

func sessionPersistence(s *gatewayv1.SessionPersistence) (*ir.SessionPersistence, *ruleError) {
	out := &ir.SessionPersistence{Type: string(gatewayv1.CookieBasedSessionPersistence)}
	if s.Type != nil {
		switch *s.Type {
		case gatewayv1.CookieBasedSessionPersistence, gatewayv1.HeaderBasedSessionPersistence:
			out.Type = string(*s.Type)
		default:
			return nil, unsupported("session persistence type %q is not supported", *s.Type)
		}
	}
	if s.SessionName != nil {
		out.SessionName = *s.SessionName
	}
	var err *ruleError
	if s.AbsoluteTimeout != nil {
		if out.AbsoluteTimeout, err = parseDuration(*s.AbsoluteTimeout); err != nil {
			return nil, err
		}
	}
	if s.CookieConfig != nil && s.CookieConfig.LifetimeType != nil && out.Type == string(gatewayv1.CookieBasedSessionPersistence) {
		out.CookieLifetime = string(*s.CookieConfig.LifetimeType)
	}
	return out, nil
}
