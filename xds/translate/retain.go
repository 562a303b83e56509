/*
Copyright The shardgate Authors.
*/

package translate

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// RetainedRoutePrefix starts the name of a route that references a retained
// cluster and can never match.
const RetainedRoutePrefix = "shardgate-retained/"

// RetainedRoute is a route to cluster that no request can match (":method"
// both present and absent). Proxyless gRPC clients build a balancer only for
// the clusters their route table references; a cluster that has just left a
// Gateway's config, or is about to enter it, stays referenced through such a
// route, so that a route flipping between two backends never tears a
// balancer down and builds it again while RPCs are being picked.
func RetainedRoute(cluster string) *routev3.Route {
	return &routev3.Route{
		Name: RetainedRoutePrefix + cluster,
		Match: &routev3.RouteMatch{
			PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"},
			Headers: []*routev3.HeaderMatcher{
				{Name: ":method", HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}},
				{Name: ":method", HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: false}},
			},
		},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster},
		}},
	}
}
