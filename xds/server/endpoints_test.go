package server

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/ir"
)

// An endpoint-only change is published on its own path (publishEndpoints):
// after every step of a random sequence of endpoint changes, route changes,
// new clusters and invalid endpoints, the server serves exactly what a
// fresh server publishing the same IR serves, and the endpoint-only steps
// took the short path.
func TestEndpointChangesServeWhatAFullBuildServes(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			gw := largeIR(20)
			nn := k8stypes.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
			s := New(Options{Log: logr.Discard()})
			s.Publish([]*ir.Gateway{gw})
			good := gw
			short, wasRefused := 0, false
			for step := range 60 {
				next := *gw // IR is never modified: each step makes new lists
				kind := rng.IntN(10)
				if kind <= 6 && !wasRefused {
					short++ // after a refused config, the full build reports again
				}
				switch {
				case kind < 6: // endpoints of some clusters
					next.Clusters = slices.Clone(gw.Clusters)
					for range 1 + rng.IntN(3) {
						k := rng.IntN(len(next.Clusters))
						c := *next.Clusters[k]
						c.Endpoints = nil
						for e := range rng.IntN(3) {
							c.Endpoints = append(c.Endpoints, ir.Endpoint{IP: fmt.Sprintf("10.%d.%d.%d", step, k, e+1), Port: 8080, Ready: true})
						}
						next.Clusters[k] = &c
					}
				case kind == 6: // the same endpoints in a new cluster value
					next.Clusters = slices.Clone(gw.Clusters)
					k := rng.IntN(len(next.Clusters))
					c := *next.Clusters[k]
					next.Clusters[k] = &c
				case kind == 7: // an endpoint the proxy cannot take
					next.Clusters = slices.Clone(gw.Clusters)
					k := rng.IntN(len(next.Clusters))
					c := *next.Clusters[k]
					c.Endpoints = []ir.Endpoint{{IP: "", Port: 8080, Ready: true}}
					next.Clusters[k] = &c
				case kind == 8: // a route
					l := gw.Listeners[0]
					l.VirtualHosts = slices.Clone(l.VirtualHosts)
					k := rng.IntN(len(l.VirtualHosts))
					v := *l.VirtualHosts[k]
					v.Routes = slices.Clone(v.Routes)
					v.Routes[0].Match.Path = &ir.PathMatch{Type: ir.MatchPathPrefix, Value: fmt.Sprintf("/s%d", step)}
					l.VirtualHosts[k] = &v
					next.Listeners = []ir.Listener{l}
				default: // a new cluster with its host
					name := fmt.Sprintf("default/new-%03d/80", step)
					host := fmt.Sprintf("new-%03d.example.com", step)
					l := gw.Listeners[0]
					l.VirtualHosts = append(slices.Clone(l.VirtualHosts), &ir.VirtualHost{Name: host, Domains: []string{host}, Routes: []ir.Route{{
						Name:     "HTTPRoute/default/" + host,
						Match:    ir.Match{Path: &ir.PathMatch{Type: ir.MatchPathPrefix, Value: "/"}},
						Backends: []ir.Backend{{Cluster: name, Weight: 1}},
					}}})
					slices.SortFunc(l.VirtualHosts, func(a, b *ir.VirtualHost) int { return compareStrings(a.Name, b.Name) })
					next.Listeners = []ir.Listener{l}
					next.Clusters = append(slices.Clone(gw.Clusters), &ir.Cluster{Name: name, Protocol: ir.ClusterHTTP1,
						Endpoints: []ir.Endpoint{{IP: "10.9.9.9", Port: 8080, Ready: true}}})
					slices.SortFunc(next.Clusters, func(a, b *ir.Cluster) int { return compareStrings(a.Name, b.Name) })
				}
				s.Publish([]*ir.Gateway{&next})
				refused := s.PublishErrors()[nn] != ""
				if refused != (kind == 7) {
					t.Fatalf("step %d (%d): refused %v: %v", step, kind, refused, s.PublishErrors())
				}
				if !refused {
					good = &next
				}
				wasRefused = refused
				if got := s.gateways[NodeGroup(nn)].endpointsOnly; got != short {
					t.Fatalf("step %d (%d): %d changes took the short path, want %d", step, kind, got, short)
				}
				gw = good // the next step starts from what is served
				fresh := New(Options{Log: logr.Discard()})
				fresh.Publish([]*ir.Gateway{good})
				if got, want := served(t, s, nn), served(t, fresh, nn); !equalServed(got, want) {
					t.Fatalf("step %d (%d): served\n%v\nwant\n%v", step, kind, got, want)
				}
			}
		})
	}
}

// served is every resource the server serves for nn, serialized as sent,
// by type and name.
func served(t *testing.T, s *Server, nn k8stypes.NamespacedName) map[string]map[string]string {
	t.Helper()
	snap, err := s.Snapshot(nn)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, typ := range typeOrder {
		out[typ] = map[string]string{}
		for name, r := range snap.GetResources(typ) {
			b, err := cachev3.MarshalResource(r)
			if err != nil {
				t.Fatal(err)
			}
			out[typ][name] = string(b)
		}
	}
	if len(out[resourcev3.EndpointType]) == 0 {
		t.Fatal("no load assignments served")
	}
	return out
}

func equalServed(a, b map[string]map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for typ, m := range a {
		n := b[typ]
		if len(m) != len(n) {
			return false
		}
		for name, v := range m {
			if w, ok := n[name]; !ok || w != v {
				return false
			}
		}
	}
	return true
}

// The IR promises clusters sorted by name; a list that is not (translation
// then sorts the load assignments) is published in full, and right.
func TestEndpointChangesOfAnUnsortedClusterList(t *testing.T) {
	gw := largeIR(6)
	gw.Clusters = slices.Clone(gw.Clusters)
	slices.Reverse(gw.Clusters)
	nn := k8stypes.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
	s := New(Options{Log: logr.Discard()})
	s.Publish([]*ir.Gateway{gw})
	for step := range 4 {
		next := *gw
		next.Clusters = slices.Clone(gw.Clusters)
		c := *next.Clusters[1]
		c.Endpoints = []ir.Endpoint{{IP: fmt.Sprintf("10.8.0.%d", step+1), Port: 8080, Ready: true}}
		next.Clusters[1] = &c
		s.Publish([]*ir.Gateway{&next})
		if errs := s.PublishErrors(); len(errs) > 0 {
			t.Fatal(errs)
		}
		fresh := New(Options{Log: logr.Discard()})
		fresh.Publish([]*ir.Gateway{&next})
		if got, want := served(t, s, nn), served(t, fresh, nn); !equalServed(got, want) {
			t.Fatalf("step %d: served\n%v\nwant\n%v", step, got, want)
		}
		gw = &next
	}
}
