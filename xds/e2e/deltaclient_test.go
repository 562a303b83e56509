package e2e_test

import (
	"context"
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/xdstest"
	xdsserver "github.com/shardgate/shardgate/xds/server"
)

type deltaOptions struct {
	// initial: type → resource name → version the client says it holds
	// when it subscribes (initial_resource_versions, as after a
	// reconnect).
	initial map[string]map[string]string
	// reject: NACK every route configuration that mentions this text.
	reject string
	// target: the server to dial ("" for the suite's, xdsTarget).
	target string
}

// dialDelta connects the shared delta client (xdstest.Delta) as node
// (node.cluster is gw's group) and subscribes to every resource of each of
// xdstest.DeltaTypes.
func dialDelta(ctx context.Context, gw types.NamespacedName, node string, o deltaOptions) (*xdstest.Delta, error) {
	target := xdsTarget
	if o.target != "" {
		target = o.target
	}
	do := xdstest.DeltaOptions{
		Node:  &core.Node{Id: node, Cluster: xdsserver.NodeGroup(gw)},
		Types: xdstest.DeltaTypes, Initial: o.initial,
	}
	if o.reject != "" {
		do.Reject = func(r *xdstest.DeltaResponse) string {
			for _, m := range r.Resources {
				if rc, ok := m.(*routev3.RouteConfiguration); ok && strings.Contains(xdstest.Text(rc), o.reject) {
					return "route configuration mentions " + o.reject
				}
			}
			return ""
		}
	}
	return xdstest.DialDelta(ctx, target, clientTLS(xdsCA, gw), do)
}
