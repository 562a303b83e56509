package server

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/internal/ir"
)

// waitEndpoints waits until the Gateways of every EndpointSlice change
// handed to UpdateEndpointSlice so far are published.
func (s *Server) waitEndpoints() {
	s.epMu.Lock()
	defer s.epMu.Unlock()
	for s.epRunning {
		s.epIdle.Wait()
	}
}

// setEndpoints gives the Service port a cluster names exactly the ready
// endpoints eps (IP and port; Ready is ignored: unready ones are left
// out), through an EndpointSlice of its own (named after the Service and
// the port) handed to UpdateEndpointSlice as the controller's event
// handler hands it, and waits for the publish. It returns the slice.
func (s *Server) setEndpoints(c *ir.Cluster, eps ...ir.Endpoint) *discoveryv1.EndpointSlice {
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
		if !e.Ready {
			continue
		}
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
	s.waitEndpoints()
	return es
}

// irEndpoints remembers, per server, what publishIR made of the IR it was
// given, so that the same IR gives the server the same pointers.
type irEndpoints struct {
	clusters map[*ir.Cluster]*ir.Cluster
	lists    map[*ir.Cluster][]*ir.Cluster // by a list's first element
	set      map[ir.ServicePort][]ir.Endpoint
}

var (
	irEndpointsMu sync.Mutex
	irEndpointsOf = map[*Server]*irEndpoints{}
)

// publishIR publishes gateways whose clusters carry their endpoints (the
// xDS translation's input, as its golden cases have it) the way the
// controller does: each cluster, unless it names one already, names a
// Service port of its own ("<namespace>/<service>/<port>" gives Service
// <service> and port "p<port>"), whose endpoints go to the server in an
// EndpointSlice (setEndpoints) when they differ from those last given, and
// the IR is published without them.
func publishIR(s *Server, gateways ...*ir.Gateway) {
	irEndpointsMu.Lock()
	m := irEndpointsOf[s]
	if m == nil {
		m = &irEndpoints{clusters: map[*ir.Cluster]*ir.Cluster{}, lists: map[*ir.Cluster][]*ir.Cluster{}, set: map[ir.ServicePort][]ir.Endpoint{}}
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
				if prev, ok := m.set[sp]; !ok || !slices.Equal(prev, c.Endpoints) {
					s.setEndpoints(list[k], c.Endpoints...)
					m.set[sp] = c.Endpoints
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

// bare is c without its endpoints, naming its Service port.
func (m *irEndpoints) bare(c *ir.Cluster) *ir.Cluster {
	if b := m.clusters[c]; b != nil {
		return b
	}
	b := *c
	b.Endpoints = nil
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
