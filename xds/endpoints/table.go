/*
Copyright The shardgate Authors.
*/

package endpoints

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/ir"
)

// Table holds the EndpointSlices of every Service and lists each Service
// port's ready endpoints. It is safe for concurrent use.
type Table struct {
	mu sync.Mutex
	// services are each Service's EndpointSlices, with For's memo of its
	// ports' endpoints.
	services map[types.NamespacedName]*service
}

// service is one Service's EndpointSlices, sorted by name, and the
// endpoints For listed of its ports until the slices change (a Service
// has few ports: a list, not a map, keeps them).
type service struct {
	slices []*discoveryv1.EndpointSlice
	ports  []portEndpoints
}

type portEndpoints struct {
	port string
	eps  []Endpoint
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{services: map[types.NamespacedName]*service{}}
}

// Set replaces old by obj (old nil: a new slice; obj nil: a deleted one)
// and returns the Services whose endpoints this may change: none when the
// update changes nothing the endpoints are made of (an EndpointSlice
// controller update of a trigger time, a zone or a Pod reference).
func (t *Table) Set(old, obj *discoveryv1.EndpointSlice) []types.NamespacedName {
	t.mu.Lock()
	defer t.mu.Unlock()
	relevant := old == nil || obj == nil || !SameReads(old, obj)
	var changed []types.NamespacedName
	if old != nil {
		if svc := Service(old); svc.Name != "" {
			// Drop whichever version the table holds under old's name.
			if s := t.services[svc]; s != nil {
				out := s.slices[:0:0]
				for _, e := range s.slices {
					if e.Name != old.Name {
						out = append(out, e)
					}
				}
				s.slices = out
				if relevant {
					s.ports = nil
				}
				// Kept while obj, of the same Service, comes in its
				// place (an update of what is not read keeps the memo).
				if len(out) == 0 && (obj == nil || Service(obj) != svc) {
					delete(t.services, svc)
				}
			}
			if relevant {
				changed = append(changed, svc)
			}
		}
	}
	if obj != nil {
		if svc := Service(obj); svc.Name != "" {
			s := t.services[svc]
			if s == nil {
				s = &service{}
				t.services[svc] = s
			}
			out := make([]*discoveryv1.EndpointSlice, 0, len(s.slices)+1)
			for _, e := range s.slices {
				if e.Name != obj.Name {
					out = append(out, e)
				}
			}
			out = append(out, obj)
			slices.SortFunc(out, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
			s.slices = out
			if relevant && !slices.Contains(changed, svc) {
				s.ports = nil
				changed = append(changed, svc)
			}
		}
	}
	return changed
}

// For lists the ready endpoints of a Service port (nil when the Service has
// no EndpointSlice). The list is shared: callers must not modify it.
func (t *Table) For(p ir.ServicePort) []Endpoint {
	svc := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.services[svc]
	if s == nil || len(s.slices) == 0 {
		// Nothing to remember: a Service with no slices (one whose lease
		// ended, say) would otherwise keep an entry for good.
		return nil
	}
	for _, pe := range s.ports {
		if pe.port == p.Port {
			return pe.eps
		}
	}
	eps := ForPort(s.slices, p.Port)
	s.ports = append(s.ports, portEndpoints{port: p.Port, eps: eps})
	return eps
}

// Service is the Service an EndpointSlice belongs to (no name: none).
func Service(s *discoveryv1.EndpointSlice) types.NamespacedName {
	return types.NamespacedName{Namespace: s.Namespace, Name: s.Labels[discoveryv1.LabelServiceName]}
}

// Ready reports whether e may take traffic. An unknown readiness counts as
// ready, as the EndpointSlice API says consumers should take it.
func Ready(e discoveryv1.Endpoint) bool {
	return e.Conditions.Ready == nil || *e.Conditions.Ready
}

// ForPort lists the ready endpoints of the Service port named port from
// the Service's EndpointSlices, matching each slice's port by name, sorted
// by IP then port, without duplicates (the same address can appear in
// several slices during a rollover). Slices of FQDN addresses are skipped.
func ForPort(sl []*discoveryv1.EndpointSlice, port string) []Endpoint {
	n := 0
	for _, s := range sl {
		for _, e := range s.Endpoints {
			n += len(e.Addresses)
		}
	}
	out := make([]Endpoint, 0, n)
	for _, s := range sl {
		if s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		var num *int32
		for _, p := range s.Ports {
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			if name == port && p.Port != nil {
				num = p.Port
				break
			}
		}
		if num == nil {
			continue
		}
		for _, e := range s.Endpoints {
			if !Ready(e) {
				continue
			}
			for _, a := range e.Addresses {
				out = append(out, Endpoint{IP: a, Port: *num})
			}
		}
	}
	slices.SortFunc(out, func(a, b Endpoint) int {
		if c := strings.Compare(a.IP, b.IP); c != 0 {
			return c
		}
		return cmp.Compare(a.Port, b.Port)
	})
	return slices.Compact(out)
}

// SameReads reports whether a and b give every Service port the same
// endpoints: the same Service, address type, ports and ready addresses.
func SameReads(a, b *discoveryv1.EndpointSlice) bool {
	return Service(a) == Service(b) && a.AddressType == b.AddressType &&
		equality.Semantic.DeepEqual(a.Ports, b.Ports) && slices.Equal(readyAddresses(a), readyAddresses(b))
}

// readyAddresses lists the addresses of s's ready endpoints, in order.
func readyAddresses(s *discoveryv1.EndpointSlice) []string {
	var out []string
	for _, e := range s.Endpoints {
		if Ready(e) {
			out = append(out, e.Addresses...)
		}
	}
	return out
}
