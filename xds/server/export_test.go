package server

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/endpoints"
)

// setEndpoints gives the Service port a cluster names exactly the
// endpoints eps, through an EndpointSlice of its own (named after the Service and
// the port) handed to UpdateEndpointSlice as the controller's event
// handler hands it. It returns the slice.
func (s *Server) setEndpoints(c *ir.Cluster, eps ...endpoints.Endpoint) *discoveryv1.EndpointSlice {
	sp := c.Service
	if sp.Name == "" {
		panic(fmt.Sprintf("cluster %s names no Service port", c.Name))
	}
	name := sp.Name + "-" + sp.Port
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: sp.Namespace, Name: name,
			Labels: map[string]string{discoveryv1.LabelServiceName: sp.Name}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	byPort := map[int32][]string{}
	var ports []int32
	for _, e := range eps {
		if _, ok := byPort[e.Port]; !ok {
			ports = append(ports, e.Port)
		}
		byPort[e.Port] = append(byPort[e.Port], e.IP)
	}
	if len(ports) > 1 {
		panic("setEndpoints takes one port")
	}
	port := sp.Port
	if len(ports) == 1 {
		num := ports[0]
		es.Ports = []discoveryv1.EndpointPort{{Name: &port, Port: &num}}
		for _, ip := range byPort[num] {
			es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}})
		}
	}
	s.UpdateEndpointSlice(nil, es) // replaces the slice of that name
	return es
}

// irEndpoints remembers, per server, what publishIR made of the IR it was
// given, so that the same IR gives the server the same pointers.
type irEndpoints struct {
	clusters map[*ir.Cluster]*ir.Cluster
	lists    map[*ir.Cluster][]*ir.Cluster // by a list's first element
	set      map[ir.ServicePort][]endpoints.Endpoint
}

var (
	irEndpointsMu sync.Mutex
	irEndpointsOf = map[*Server]*irEndpoints{}
	// clusterEndpoints: the endpoints tests give IR clusters
	// (withEndpoints), by cluster.
	clusterEndpoints sync.Map
)

// withEndpoints records eps as c's endpoints for publishIR, and returns c.
func withEndpoints(c *ir.Cluster, eps ...endpoints.Endpoint) *ir.Cluster {
	clusterEndpoints.Store(c, eps)
	return c
}

// endpointsOf are the endpoints withEndpoints gave c (ok false: none).
func endpointsOf(c *ir.Cluster) (eps []endpoints.Endpoint, ok bool) {
	v, ok := clusterEndpoints.Load(c)
	if !ok {
		return nil, false
	}
	return v.([]endpoints.Endpoint), true
}

// publishIR publishes gateways the way the controller does, their
// clusters' endpoints (withEndpoints) given as EndpointSlices: each
// cluster, unless it names one already, names a Service port of its own
// ("<namespace>/<service>/<port>" gives Service <service> and port
// "p<port>"), whose endpoints go to the server in an EndpointSlice
// (setEndpoints) when they differ from those last given. A cluster given
// no endpoints leaves its Service's slice as it is.
func publishIR(s *Server, gateways ...*ir.Gateway) {
	irEndpointsMu.Lock()
	m := irEndpointsOf[s]
	if m == nil {
		m = &irEndpoints{clusters: map[*ir.Cluster]*ir.Cluster{}, lists: map[*ir.Cluster][]*ir.Cluster{}, set: map[ir.ServicePort][]endpoints.Endpoint{}}
		irEndpointsOf[s] = m
	}
	irEndpointsMu.Unlock()
	out := make([]*ir.Gateway, len(gateways))
	for i, gw := range gateways {
		if gw == nil {
			continue
		}
		g := *gw
		if len(gw.Clusters) > 0 {
			list, ok := m.lists[gw.Clusters[0]]
			if !ok || len(list) != len(gw.Clusters) || !sameElems(list, gw.Clusters, m) {
				list = make([]*ir.Cluster, len(gw.Clusters))
				for k, c := range gw.Clusters {
					list[k] = m.bare(c)
				}
				m.lists[gw.Clusters[0]] = list
			}
			g.Clusters = list
			for k, c := range gw.Clusters {
				sp := list[k].Service
				eps, given := endpointsOf(c)
				if prev, ok := m.set[sp]; !ok || given && !slices.Equal(prev, eps) {
					s.setEndpoints(list[k], eps...)
					m.set[sp] = eps
				}
			}
		}
		out[i] = &g
	}
	s.Publish(out)
}

func sameElems(list, src []*ir.Cluster, m *irEndpoints) bool {
	for k, c := range src {
		if m.clusters[c] != list[k] {
			return false
		}
	}
	return true
}

// bare is c naming its Service port.
func (m *irEndpoints) bare(c *ir.Cluster) *ir.Cluster {
	if b := m.clusters[c]; b != nil {
		return b
	}
	b := *c
	if b.Service.Name == "" {
		parts := strings.Split(c.Name, "/")
		if len(parts) != 3 {
			panic(fmt.Sprintf("cluster name %q is not <namespace>/<service>/<port>", c.Name))
		}
		b.Service = ir.ServicePort{Namespace: parts[0], Name: parts[1], Port: "p" + parts[2]}
	}
	m.clusters[c] = &b
	return &b
}
