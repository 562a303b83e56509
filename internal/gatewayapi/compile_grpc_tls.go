/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"regexp"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/ir"
)

// compileGRPCRules compiles the rules of a GRPCRoute into HTTP/2 routes on
// the gRPC path "/<service>/<method>".
func compileGRPCRules(idx *Index, rk *routeKind, cr *compiledRoute, obj Object) int {
	r := obj.(*gatewayv1.GRPCRoute)
	cr.rules = make([]compiledRule, 0, len(r.Spec.Rules))
	for i := range r.Spec.Rules {
		rule := &r.Spec.Rules[i]
		matches, keys, err := grpcMatches(rule.Matches)
		if err == nil {
			var c compiledRule
			c, err = idx.compileRequestRule(rk, cr, i, requestRule{
				name: rule.Name, matches: matches, grpcKeys: keys,
				filters: grpcFilters(rule.Filters), backendRefs: grpcBackendRefs(rule.BackendRefs),
				sessionPersistence: rule.SessionPersistence,
			})
			if err == nil {
				cr.rules = append(cr.rules, c)
				continue
			}
		}
		cr.drop(i, err.reason, err.msg)
	}
	return len(r.Spec.Rules)
}

// grpcFilters are GRPCRoute filters as the HTTPRoute filters they are: the
// same types with the same fields, a subset of HTTPRoute's (routeKind.filters
// refuses the others).
func grpcFilters(fs []gatewayv1.GRPCRouteFilter) []gatewayv1.HTTPRouteFilter {
	if len(fs) == 0 {
		return nil
	}
	out := make([]gatewayv1.HTTPRouteFilter, len(fs))
	for i := range fs {
		f := &fs[i]
		out[i] = gatewayv1.HTTPRouteFilter{
			Type:                   gatewayv1.HTTPRouteFilterType(f.Type),
			RequestHeaderModifier:  f.RequestHeaderModifier,
			ResponseHeaderModifier: f.ResponseHeaderModifier,
			RequestMirror:          f.RequestMirror,
			ExtensionRef:           f.ExtensionRef,
		}
	}
	return out
}

func grpcBackendRefs(brs []gatewayv1.GRPCBackendRef) []gatewayv1.HTTPBackendRef {
	if len(brs) == 0 {
		return nil
	}
	out := make([]gatewayv1.HTTPBackendRef, len(brs))
	for i := range brs {
		out[i] = gatewayv1.HTTPBackendRef{BackendRef: brs[i].BackendRef, Filters: grpcFilters(brs[i].Filters)}
	}
	return out
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

// compileStreamRule compiles rule i of a route that forwards streams
// (TLSRoute, TCPRoute): its backends, which compileRoute's caller merges
// with those of the other rules.
func (idx *Index) compileStreamRule(rk *routeKind, cr *compiledRoute, i int, name *gatewayv1.SectionName, brs []gatewayv1.BackendRef) {
	c := compiledRule{index: i}
	if name != nil {
		c.name = string(*name)
	}
	for _, br := range brs {
		w := weight(br.Weight)
		b := idx.resolveBackend(rk, cr.key.NN.Namespace, br.BackendObjectReference)
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
