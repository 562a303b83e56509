/*
Copyright The shardgate Authors.
*/

package endpoints

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/shardgate/shardgate/internal/ir"
)

// Endpoint is one ready backend address of a Service port.
type Endpoint struct {
	IP   string `json:"ip"`
	Port int32  `json:"port"`
}

// Cluster is what one cluster's load assignment is made of.
type Cluster struct {
	// Name is the cluster's name, the load assignment's cluster_name.
	Name string
	// Service is the Service port whose endpoints it lists (no name:
	// none).
	Service ir.ServicePort
	// NoEndpoints: the cluster's BackendTLSPolicy cannot be honoured, so
	// its load assignment lists no endpoint and every request fails (503)
	// instead of going out in plaintext.
	NoEndpoints bool
}

// ClusterOf is what c's load assignment is made of.
func ClusterOf(c *ir.Cluster) Cluster {
	return Cluster{Name: c.Name, Service: c.Service, NoEndpoints: c.TLS != nil && c.TLS.Invalid}
}

// Assignment is the load assignment of the cluster named name with the
// endpoints eps (none when noEndpoints). A cluster with no endpoint still
// gets an (empty) assignment, so that Envoy finishes warming it and answers
// 503 rather than waiting.
func Assignment(name string, eps []Endpoint, noEndpoints bool) *endpointv3.ClusterLoadAssignment {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: name}
	if noEndpoints || len(eps) == 0 {
		return cla
	}
	lbs := make([]*endpointv3.LbEndpoint, len(eps))
	for i, e := range eps {
		lbs[i] = &endpointv3.LbEndpoint{
			HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					Protocol:      corev3.SocketAddress_TCP,
					Address:       e.IP,
					PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(e.Port)},
				}}},
			}},
		}
	}
	// One locality with an explicit (empty) identity and weight: Envoy
	// accepts either way, but proxyless gRPC refuses a locality without
	// an ID, and weighted-locality balancing needs the weight.
	cla.Endpoints = []*endpointv3.LocalityLbEndpoints{{
		Locality:            &corev3.Locality{},
		LoadBalancingWeight: wrapperspb.UInt32(1),
		LbEndpoints:         lbs,
	}}
	return cla
}
