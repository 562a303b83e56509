/*
Copyright The shardgate Authors.
*/

package translate

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/shardgate/shardgate/internal/ir"
)

// LoadAssignment lists a cluster's ready endpoints. A cluster with none
// still gets an (empty) assignment, so that Envoy finishes warming it and
// answers 503 rather than waiting.
func LoadAssignment(c *ir.Cluster) *endpointv3.ClusterLoadAssignment {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: c.Name}
	if c.TLS != nil && c.TLS.Invalid {
		// A BackendTLSPolicy that cannot be honoured: no endpoint, so
		// every request fails (503) instead of going out in plaintext.
		return cla
	}
	var lbs []*endpointv3.LbEndpoint
	for _, e := range c.Endpoints {
		if !e.Ready {
			continue
		}
		lbs = append(lbs, &endpointv3.LbEndpoint{
			HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: socketAddress(e.IP, uint32(e.Port)),
			}},
		})
	}
	if len(lbs) > 0 {
		// One locality with an explicit (empty) identity and weight:
		// Envoy accepts either way, but proxyless gRPC refuses a locality
		// without an ID, and weighted-locality balancing needs the weight.
		cla.Endpoints = []*endpointv3.LocalityLbEndpoints{{
			Locality:            &corev3.Locality{},
			LoadBalancingWeight: wrapperspb.UInt32(1),
			LbEndpoints:         lbs,
		}}
	}
	return cla
}
