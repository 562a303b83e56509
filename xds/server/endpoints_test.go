package server

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr"
	discoveryv1 "k8s.io/api/discovery/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/build"
	"github.com/shardgate/shardgate/xds/endpoints"
)

// An EndpointSlice change is published on its own path: xds/endpoints
// builds the changed load assignments and hands them to the EDS cache, with
// no translation and no snapshot (the Gateway's published config stays the
// very same). After every step of a random sequence of slice changes (new
// endpoints, the same endpoints, endpoints the proxy cannot take), IR
// changes that keep the endpoints (a new cluster value, a route, a new
// cluster with its host), the server serves exactly what a fresh server
// given the same slices and IR serves.
func TestEndpointChangesServeWhatAFullBuildServes(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			s := New(Options{Log: logr.Discard()})
			gw, initial := bareIR(s, largeIR(20))
			nn := k8stypes.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
			held := map[string]*discoveryv1.EndpointSlice{} // the slices s holds, by name
			for _, es := range initial {
				held[es.Name] = es
			}
			set := func(c *ir.Cluster, eps ...endpoints.Endpoint) {
				es := s.setEndpoints(c, eps...)
				held[es.Name] = es
			}
			s.Publish([]*ir.Gateway{gw})
			group := NodeGroup(nn)
			for step := range 60 {
				kind := rng.IntN(10)
				pub := s.gateways[group].published
				switch {
				case kind < 5: // endpoints of some clusters
					for range 1 + rng.IntN(3) {
						k := rng.IntN(len(gw.Clusters))
						var eps []endpoints.Endpoint
						for e := range rng.IntN(3) {
							eps = append(eps, endpoints.Endpoint{IP: fmt.Sprintf("10.%d.%d.%d", step, k, e+1), Port: 8080})
						}
						set(gw.Clusters[k], eps...)
					}
				case kind == 5: // a slice written again with the same endpoints
					k := rng.IntN(len(gw.Clusters))
					es := held[gw.Clusters[k].Service.Name+"-"+gw.Clusters[k].Service.Port]
					s.UpdateEndpointSlice(nil, es.DeepCopy())
				case kind == 6: // the same endpoints in a new cluster value
					next := *gw
					next.Clusters = slices.Clone(gw.Clusters)
					k := rng.IntN(len(next.Clusters))
					c := *next.Clusters[k]
					next.Clusters[k] = &c
					gw = &next
					s.Publish([]*ir.Gateway{gw})
				case kind == 7: // an endpoint the proxy cannot take, then mended
					k := rng.IntN(len(gw.Clusters))
					name := gw.Clusters[k].Service.Name + "-" + gw.Clusters[k].Service.Port
					good := held[name]
					before := served(t, s, nn)
					set(gw.Clusters[k], endpoints.Endpoint{IP: "", Port: 8080})
					if s.PublishErrors()[nn] == "" {
						t.Fatalf("step %d: an endpoint without an address was taken", step)
					}
					if got := served(t, s, nn); !equalServed(got, before) {
						t.Fatalf("step %d: an endpoint without an address changed what is served", step)
					}
					s.UpdateEndpointSlice(nil, good)
					held[name] = good
				case kind == 8: // a route
					next := *gw
					l := gw.Listeners[0]
					l.VirtualHosts = slices.Clone(l.VirtualHosts)
					k := rng.IntN(len(l.VirtualHosts))
					v := *l.VirtualHosts[k]
					v.Routes = slices.Clone(v.Routes)
					v.Routes[0].Match.Path = &ir.PathMatch{Type: ir.MatchPathPrefix, Value: fmt.Sprintf("/s%d", step)}
					l.VirtualHosts[k] = &v
					next.Listeners = []ir.Listener{l}
					gw = &next
					s.Publish([]*ir.Gateway{gw})
				default: // a new cluster with its host; its slice comes first
					svc := fmt.Sprintf("new-%03d", step)
					name, host := "default/"+svc+"/80", svc+".example.com"
					c := &ir.Cluster{Name: name, Protocol: ir.ClusterHTTP1, Service: ir.ServicePort{Namespace: "default", Name: svc, Port: "http"}}
					set(c, endpoints.Endpoint{IP: "10.9.9.9", Port: 8080})
					next := *gw
					l := gw.Listeners[0]
					l.VirtualHosts = append(slices.Clone(l.VirtualHosts), &ir.VirtualHost{Name: host, Domains: []string{host}, Routes: []ir.Route{{
						Name:     "HTTPRoute/default/" + host,
						Match:    ir.Match{Path: &ir.PathMatch{Type: ir.MatchPathPrefix, Value: "/"}},
						Backends: []ir.Backend{{Cluster: name, Weight: 1}},
					}}})
					slices.SortFunc(l.VirtualHosts, func(a, b *ir.VirtualHost) int { return strings.Compare(a.Name, b.Name) })
					next.Listeners = []ir.Listener{l}
					next.Clusters = append(slices.Clone(gw.Clusters), c)
					slices.SortFunc(next.Clusters, func(a, b *ir.Cluster) int { return strings.Compare(a.Name, b.Name) })
					gw = &next
					s.Publish([]*ir.Gateway{gw})
				}
				if errs := s.PublishErrors(); errs[nn] != "" {
					t.Fatalf("step %d (%d): refused: %v", step, kind, errs)
				}
				if kind <= 5 || kind == 7 {
					if s.gateways[group].published != pub {
						t.Fatalf("step %d (%d): an endpoint change published the Gateway's config", step, kind)
					}
				}
				fresh := New(Options{Log: logr.Discard()})
				for _, es := range held {
					fresh.UpdateEndpointSlice(nil, es)
				}
				fresh.Publish([]*ir.Gateway{gw})
				if got, want := served(t, s, nn), served(t, fresh, nn); !equalServed(got, want) {
					t.Fatalf("step %d (%d): served\n%v\nwant\n%v", step, kind, got, want)
				}
			}
		})
	}
}

// bareIR gives s the endpoints of gw's clusters as EndpointSlices, and
// returns gw as the Gateway API translation makes it (clusters naming a
// Service port, with no endpoints: publishIR) and the slices.
func bareIR(s *Server, gw *ir.Gateway) (*ir.Gateway, []*discoveryv1.EndpointSlice) {
	out := *gw
	out.Clusters = make([]*ir.Cluster, len(gw.Clusters))
	m := &irEndpoints{clusters: map[*ir.Cluster]*ir.Cluster{}}
	var sl []*discoveryv1.EndpointSlice
	for i, c := range gw.Clusters {
		out.Clusters[i] = m.bare(c)
		eps, _ := endpointsOf(c)
		sl = append(sl, s.setEndpoints(out.Clusters[i], eps...))
	}
	return &out, sl
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
	for _, typ := range build.TypeOrder {
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
// then sorts the load assignments) is published in full, and right, when
// its endpoints change.
func TestEndpointChangesOfAnUnsortedClusterList(t *testing.T) {
	s := New(Options{Log: logr.Discard()})
	gw, sl := bareIR(s, largeIR(6))
	gw.Clusters = slices.Clone(gw.Clusters)
	slices.Reverse(gw.Clusters)
	nn := k8stypes.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
	s.Publish([]*ir.Gateway{gw})
	for step := range 4 {
		es := s.setEndpoints(gw.Clusters[1], endpoints.Endpoint{IP: fmt.Sprintf("10.8.0.%d", step+1), Port: 8080})
		for i := range sl {
			if sl[i].Name == es.Name {
				sl[i] = es
			}
		}
		if errs := s.PublishErrors(); len(errs) > 0 {
			t.Fatal(errs)
		}
		fresh := New(Options{Log: logr.Discard()})
		for _, es := range sl { // the same slices
			fresh.UpdateEndpointSlice(nil, es)
		}
		fresh.Publish([]*ir.Gateway{gw})
		if got, want := served(t, s, nn), served(t, fresh, nn); !equalServed(got, want) {
			t.Fatalf("step %d: served\n%v\nwant\n%v", step, got, want)
		}
		if eps := served(t, s, nn)[resourcev3.EndpointType][gw.Clusters[1].Name]; !strings.Contains(eps, fmt.Sprintf("10.8.0.%d", step+1)) {
			t.Fatalf("step %d: the changed endpoints are not served", step)
		}
	}
}
