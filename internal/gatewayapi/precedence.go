/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/internal/ir"
)

// routeEntry is one IR route with what its precedence depends on.
type routeEntry struct {
	// route is the compiled route itself (run[match]), or a copy with the
	// listener port filled into its redirect (run nil).
	route   *ir.Route
	run     []ir.Route
	host    string // the route hostname that matched ("" = any)
	created metav1.Time
	kind    string
	ns      string
	name    string
	rule    int
	match   int
	grpc    *grpcKey // set for GRPCRoute matches
}

// routeLess is the one comparator for route precedence within a virtual
// host. The Gateway API orders, across routes:
//
//  0. the most specific matching route hostname: a virtual host for
//     foo.example.com also carries the routes of *.example.com (and of "any")
//     owned by the same listener, after its own;
//  1. an Exact path match;
//  2. a PathPrefix match with the most characters;
//  3. a method match;
//  4. the most header matches;
//  5. the most query parameter matches;
//  6. the oldest route by creationTimestamp;
//  7. the route first in alphabetical "{namespace}/{name}" order;
//  8. within a route, the first rule (then the first match) in list order.
//
// RegularExpression paths are implementation-specific; they sort between
// Exact and PathPrefix, longer expressions first (as Envoy Gateway and
// Contour do). Two GRPCRoute matches compare, after the hostname, by the
// characters of the matched service, then of the method, then by header
// matches (the GRPCRoute precedence rules), then by the same tie-breaks.
// Route kinds (HTTPRoute, GRPCRoute) break the last tie before
// rule order so the order is total.
func routeLess(a, b *routeEntry) bool {
	if a.host != b.host {
		return hostnameMoreSpecific(a.host, b.host)
	}
	if a.grpc != nil && b.grpc != nil {
		// GRPCRoute: the most characters of matched service, then method,
		// then the most header matches.
		if a.grpc.service != b.grpc.service {
			return a.grpc.service > b.grpc.service
		}
		if a.grpc.method != b.grpc.method {
			return a.grpc.method > b.grpc.method
		}
		if ha, hb := len(a.route.Match.Headers), len(b.route.Match.Headers); ha != hb {
			return ha > hb
		}
		return tieLess(a, b)
	}
	pa, pb := a.route.Match.Path, b.route.Match.Path
	ra, rb := pathRank(pa), pathRank(pb)
	if ra != rb {
		return ra < rb
	}
	if la, lb := pathLen(pa), pathLen(pb); la != lb {
		return la > lb
	}
	if ma, mb := a.route.Match.Method != "", b.route.Match.Method != ""; ma != mb {
		return ma
	}
	if ha, hb := len(a.route.Match.Headers), len(b.route.Match.Headers); ha != hb {
		return ha > hb
	}
	if qa, qb := len(a.route.Match.QueryParams), len(b.route.Match.QueryParams); qa != qb {
		return qa > qb
	}
	return tieLess(a, b)
}

// tieLess breaks ties between equally specific matches: oldest route, then
// namespace/name, then kind, then rule and match order.
func tieLess(a, b *routeEntry) bool {
	if !a.created.Equal(&b.created) {
		return a.created.Before(&b.created)
	}
	if a.ns != b.ns {
		return a.ns < b.ns
	}
	if a.name != b.name {
		return a.name < b.name
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	if a.rule != b.rule {
		return a.rule < b.rule
	}
	return a.match < b.match
}

func pathRank(p *ir.PathMatch) int {
	if p == nil {
		return 2
	}
	switch p.Type {
	case ir.MatchExact:
		return 0
	case ir.MatchRegularExpression:
		return 1
	}
	return 2
}

func pathLen(p *ir.PathMatch) int {
	if p == nil {
		return 1
	}
	return len(p.Value)
}
