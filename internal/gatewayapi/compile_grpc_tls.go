/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"regexp"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/ir"
)

// compileGRPCRoute compiles a GRPCRoute into HTTP/2 routes on the gRPC path
// "/<service>/<method>".
func (idx *Index) compileGRPCRoute(r *gatewayv1.GRPCRoute) *compiledRoute {
	cr := &compiledRoute{
		key:       RouteKey{Kind: kindGRPCRoute, NN: nn(r.Namespace, r.Name)},
		gen:       r.Generation,
		created:   r.CreationTimestamp,
		uid:       r.UID,
		hostnames: lowerHostnames(r.Spec.Hostnames),
		refs:      r.Spec.ParentRefs,
	}
	for i := range r.Spec.Rules {
		c, err := idx.compileGRPCRule(cr, r.Namespace, i, &r.Spec.Rules[i])
		if err != nil {
			cr.drop(i, err.reason, err.msg)
			continue
		}
		cr.rules = append(cr.rules, c)
	}
	cr.finish(len(r.Spec.Rules))
	return cr
}

func (idx *Index) compileGRPCRule(cr *compiledRoute, ns string, i int, rule *gatewayv1.GRPCRouteRule) (compiledRule, *ruleError) {
	c := compiledRule{index: i}
	if rule.Name != nil {
		c.name = string(*rule.Name)
	}
	matches, keys, rerr := grpcMatches(rule.Matches)
	if rerr != nil {
		return c, rerr
	}
	tmpl := ir.Route{GRPC: true}
	tmpl.Source = ir.Source{Kind: cr.key.Kind, Namespace: cr.key.NN.Namespace, Name: cr.key.NN.Name, Rule: i, RuleName: c.name}
	fail500 := false
	for fi := range rule.Filters {
		f := &rule.Filters[fi]
		switch f.Type {
		case gatewayv1.GRPCRouteFilterRequestHeaderModifier:
			tmpl.RequestHeaders = mergeHeaders(tmpl.RequestHeaders, f.RequestHeaderModifier)
		case gatewayv1.GRPCRouteFilterResponseHeaderModifier:
			tmpl.ResponseHeaders = mergeHeaders(tmpl.ResponseHeaders, f.ResponseHeaderModifier)
		case gatewayv1.GRPCRouteFilterRequestMirror:
			if f.RequestMirror == nil {
				return c, unsupported("RequestMirror filter without requestMirror")
			}
			if m, ok := idx.mirror(cr, kindGRPCRoute, ns, f.RequestMirror); ok {
				tmpl.Mirrors = append(tmpl.Mirrors, m)
			}
		case gatewayv1.GRPCRouteFilterExtensionRef:
			cr.refsProblem(string(gatewayv1.RouteReasonInvalidKind), "extensionRef filters are not supported")
			fail500 = true
		default:
			return c, unsupported("filter type %q is not supported", f.Type)
		}
	}
	if rule.SessionPersistence != nil {
		sp, err := sessionPersistence(rule.SessionPersistence)
		if err != nil {
			return c, err
		}
		tmpl.SessionPersistence = sp
	}
	var bes []ir.Backend
	var invalid uint32
	for bi := range rule.BackendRefs {
		br := &rule.BackendRefs[bi]
		w := weight(br.Weight)
		b := idx.resolveBackend(kindGRPCRoute, ns, br.BackendObjectReference, true)
		if b.cluster == "" {
			cr.refsProblem(b.reason, b.msg)
			invalid += w
			continue
		}
		be := ir.Backend{Cluster: b.cluster, Weight: w}
		for fi := range br.Filters {
			f := &br.Filters[fi]
			switch f.Type {
			case gatewayv1.GRPCRouteFilterRequestHeaderModifier:
				be.RequestHeaders = mergeHeaders(be.RequestHeaders, f.RequestHeaderModifier)
			case gatewayv1.GRPCRouteFilterResponseHeaderModifier:
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
	case fail500, len(bes) == 0:
		tmpl.DirectResponse = &ir.DirectResponse{Status: 500}
	default:
		tmpl.Backends = bes
		tmpl.InvalidWeight = invalid
	}
	for mi, m := range matches {
		rt := tmpl
		rt.Match = m
		rt.Name = ruleMatchName("grpcroute", cr.key.NN, i, mi)
		c.routes = append(c.routes, rt)
	}
	c.grpcKeys = keys
	return c, nil
}

// grpcKey is what gRPC precedence looks at, besides hostname and headers:
// the characters of the matched service, then of the method.
type grpcKey struct {
	service, method int
}

// grpcMatches maps gRPC method matches onto paths: service and method give
// an exact path, service alone a prefix, method alone (or any
// RegularExpression) a regular expression.
func grpcMatches(ms []gatewayv1.GRPCRouteMatch) ([]ir.Match, []grpcKey, *ruleError) {
	if len(ms) == 0 {
		return []ir.Match{{Path: &ir.PathMatch{Type: ir.MatchPathPrefix, Value: "/"}}}, []grpcKey{{}}, nil
	}
	out := make([]ir.Match, 0, len(ms))
	keys := make([]grpcKey, 0, len(ms))
	for _, m := range ms {
		var key grpcKey
		im := ir.Match{Path: &ir.PathMatch{Type: ir.MatchPathPrefix, Value: "/"}}
		if m.Method != nil {
			t := gatewayv1.GRPCMethodMatchExact
			if m.Method.Type != nil {
				t = *m.Method.Type
			}
			svc, meth := "", ""
			if m.Method.Service != nil {
				svc = *m.Method.Service
			}
			if m.Method.Method != nil {
				meth = *m.Method.Method
			}
			key = grpcKey{service: len(svc), method: len(meth)}
			switch t {
			case gatewayv1.GRPCMethodMatchExact:
				switch {
				case svc != "" && meth != "":
					im.Path = &ir.PathMatch{Type: ir.MatchExact, Value: "/" + svc + "/" + meth}
				case svc != "":
					im.Path = &ir.PathMatch{Type: ir.MatchPathPrefix, Value: "/" + svc}
				case meth != "":
					im.Path = &ir.PathMatch{Type: ir.MatchRegularExpression, Value: "/[^/]+/" + regexp.QuoteMeta(meth)}
				}
			case gatewayv1.GRPCMethodMatchRegularExpression:
				sre, mre := "[^/]+", "[^/]+"
				if svc != "" {
					if err := checkRegex(svc); err != nil {
						return nil, nil, unsupported("invalid service regular expression %q: %v", svc, err)
					}
					sre = svc
				}
				if meth != "" {
					if err := checkRegex(meth); err != nil {
						return nil, nil, unsupported("invalid method regular expression %q: %v", meth, err)
					}
					mre = meth
				}
				im.Path = &ir.PathMatch{Type: ir.MatchRegularExpression, Value: "/(" + sre + ")/(" + mre + ")"}
			default:
				return nil, nil, unsupported("method match type %q is not supported", t)
			}
		}
		for _, h := range m.Headers {
			t := gatewayv1.GRPCHeaderMatchExact
			if h.Type != nil {
				t = *h.Type
			}
			vm, err := valueMatch(string(h.Name), string(t), h.Value, "header")
			if err != nil {
				return nil, nil, err
			}
			im.Headers = append(im.Headers, vm)
		}
		out = append(out, im)
		keys = append(keys, key)
	}
	return out, keys, nil
}

// compileTLSRoute compiles a TLSRoute: its rules' backends, merged.
func (idx *Index) compileTLSRoute(r *gatewayv1.TLSRoute) *compiledRoute {
	cr := &compiledRoute{
		key:       RouteKey{Kind: kindTLSRoute, NN: nn(r.Namespace, r.Name)},
		gen:       r.Generation,
		created:   r.CreationTimestamp,
		uid:       r.UID,
		hostnames: lowerHostnames(r.Spec.Hostnames),
		refs:      r.Spec.ParentRefs,
	}
	for i := range r.Spec.Rules {
		rule := &r.Spec.Rules[i]
		c := compiledRule{index: i}
		if rule.Name != nil {
			c.name = string(*rule.Name)
		}
		for _, br := range rule.BackendRefs {
			w := weight(br.Weight)
			b := idx.resolveBackend(kindTLSRoute, r.Namespace, br.BackendObjectReference, false)
			if b.cluster == "" {
				cr.refsProblem(b.reason, b.msg)
				c.tlsInvalidWeight += w
				continue
			}
			if w == 0 {
				continue
			}
			cr.backends = append(cr.backends, b)
			c.tlsBackends = append(c.tlsBackends, ir.Backend{Cluster: b.cluster, Weight: w})
		}
		cr.rules = append(cr.rules, c)
	}
	cr.finish(len(r.Spec.Rules))
	return cr
}
