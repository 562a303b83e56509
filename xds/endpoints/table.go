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
	// slices are each Service's EndpointSlices, sorted by name.
	slices map[types.NamespacedName][]*discoveryv1.EndpointSlice
	// ports memoises For per Service until its slices change.
	ports map[types.NamespacedName]map[string][]Endpoint
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{
		slices: map[types.NamespacedName][]*discoveryv1.EndpointSlice{},
		ports:  map[types.NamespacedName]map[string][]Endpoint{},
	}
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
			list := t.slices[svc]
			out := list[:0:0]
			for _, e := range list {
				if e.Name != old.Name {
					out = append(out, e)
				}
			}
			if len(out) == 0 {
				delete(t.slices, svc)
			} else {
				t.slices[svc] = out
			}
			if relevant {
				delete(t.ports, svc)
				changed = append(changed, svc)
			}
		}
	}
	if obj != nil {
		if svc := Service(obj); svc.Name != "" {
			list := t.slices[svc]
			out := make([]*discoveryv1.EndpointSlice, 0, len(list)+1)
			for _, e := range list {
				if e.Name != obj.Name {
					out = append(out, e)
				}
			}
			out = append(out, obj)
			slices.SortFunc(out, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
			t.slices[svc] = out
			if relevant && !slices.Contains(changed, svc) {
				delete(t.ports, svc)
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
	if eps, ok := t.ports[svc][p.Port]; ok {
		return eps
	}
	sl := t.slices[svc]
	if len(sl) == 0 {
		// Nothing to remember: a Service with no slices (one whose lease
		// ended, say) would otherwise keep an entry for good.
		return nil
	}
	eps := ForPort(sl, p.Port)
	m := t.ports[svc]
	if m == nil {
		m = map[string][]Endpoint{}
		t.ports[svc] = m
	}
	m[p.Port] = eps
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
