/*
Copyright The shardgate Authors.
*/

package endpoints

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/internal/ir"
)

// mapSink is a Sink that keeps each group's load assignments in a map, as
// the xDS server's EDS cache does, and counts what it was handed.
type mapSink struct {
	groups map[string]map[string]*endpointv3.ClusterLoadAssignment
	set    map[string][]string // per group, the names set, in order
}

func newMapSink() *mapSink {
	return &mapSink{groups: map[string]map[string]*endpointv3.ClusterLoadAssignment{}, set: map[string][]string{}}
}

func (m *mapSink) SetAssignments(group string, list []*endpointv3.ClusterLoadAssignment) {
	g := m.groups[group]
	if g == nil {
		g = map[string]*endpointv3.ClusterLoadAssignment{}
		m.groups[group] = g
	}
	for _, cla := range list {
		g[cla.GetClusterName()] = cla
		m.set[group] = append(m.set[group], cla.GetClusterName())
	}
}

func (m *mapSink) RemoveAssignments(group string, names []string) {
	for _, n := range names {
		delete(m.groups[group], n)
	}
}

// svcSlice is the EndpointSlice of Service ns/svc with port "http" (8080) and
// the ready addresses ips.
func svcSlice(ns, svc string, ips ...string) *discoveryv1.EndpointSlice {
	port, name := int32(8080), "http"
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: svc + "-x", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
	}
	for _, ip := range ips {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return s
}

func irCluster(svc string) *ir.Cluster {
	return &ir.Cluster{Name: "default/" + svc + "/80", Protocol: ir.ClusterHTTP1, Service: ir.ServicePort{Namespace: "default", Name: svc, Port: "http"}}
}

// ips lists the addresses of a load assignment.
func ips(cla *endpointv3.ClusterLoadAssignment) []string {
	var out []string
	for _, l := range cla.GetEndpoints() {
		for _, e := range l.GetLbEndpoints() {
			out = append(out, e.GetEndpoint().GetAddress().GetSocketAddress().GetAddress())
		}
	}
	return out
}

// A slice change of a Service two groups send to gives both the new load
// assignment of that cluster, and nothing else; a group that does not send
// to it is handed nothing.
func TestUpdatePushesOnlyToTheGroupsOfTheService(t *testing.T) {
	sink := newMapSink()
	e := New(sink)
	e.Update(nil, svcSlice("default", "shared", "10.0.0.1"))
	e.Update(nil, svcSlice("default", "own", "10.0.1.1"))
	shared, own := irCluster("shared"), irCluster("own")
	e.Serve("ns/a", []*ir.Cluster{own, shared}, nil)()
	e.Serve("ns/b", []*ir.Cluster{shared}, nil)()
	e.Serve("ns/c", []*ir.Cluster{own}, nil)()
	clear(sink.set)
	e.Update(svcSlice("default", "shared", "10.0.0.1"), svcSlice("default", "shared", "10.0.0.2"))
	want := map[string][]string{"ns/a": {shared.Name}, "ns/b": {shared.Name}}
	if !maps.EqualFunc(sink.set, want, slices.Equal) {
		t.Fatalf("handed %v, want %v", sink.set, want)
	}
	for _, g := range []string{"ns/a", "ns/b"} {
		if got := ips(sink.groups[g][shared.Name]); !slices.Equal(got, []string{"10.0.0.2"}) {
			t.Fatalf("%s serves %v", g, got)
		}
	}
	// The same endpoints again (another resource version) hand nothing.
	clear(sink.set)
	again := svcSlice("default", "shared", "10.0.0.2")
	again.ResourceVersion = "2"
	e.Update(svcSlice("default", "shared", "10.0.0.2"), again)
	if len(sink.set) != 0 {
		t.Fatalf("an unchanged slice handed %v", sink.set)
	}
	// A group that stops serving the cluster gets no more of it.
	e.Serve("ns/b", nil, nil)()
	clear(sink.set)
	e.Update(again, svcSlice("default", "shared", "10.0.0.3"))
	if want := map[string][]string{"ns/a": {shared.Name}}; !maps.EqualFunc(sink.set, want, slices.Equal) {
		t.Fatalf("handed %v, want %v", sink.set, want)
	}
	if _, ok := sink.groups["ns/b"][shared.Name]; ok {
		t.Fatal("a cluster that left keeps its load assignment")
	}
}

// A cluster whose BackendTLSPolicy cannot be honoured gets an empty load
// assignment, whatever its Service's slices list.
func TestInvalidTLSClusterGetsAnEmptyAssignment(t *testing.T) {
	sink := newMapSink()
	e := New(sink)
	e.Update(nil, svcSlice("default", "b", "10.0.0.1"))
	c := irCluster("b")
	c.TLS = &ir.UpstreamTLS{Invalid: true}
	e.Serve("ns/gw", []*ir.Cluster{c}, nil)()
	cla := sink.groups["ns/gw"][c.Name]
	if cla == nil || len(cla.GetEndpoints()) != 0 {
		t.Fatalf("an invalid policy's cluster is served %v", cla)
	}
	e.Update(svcSlice("default", "b", "10.0.0.1"), svcSlice("default", "b", "10.0.0.2"))
	if cla := sink.groups["ns/gw"][c.Name]; len(cla.GetEndpoints()) != 0 {
		t.Fatalf("after a slice change, an invalid policy's cluster is served %v", cla)
	}
	// The policy mended: the same cluster name now lists its endpoints.
	e.Serve("ns/gw", []*ir.Cluster{irCluster("b")}, nil)()
	if got := ips(sink.groups["ns/gw"][c.Name]); !slices.Equal(got, []string{"10.0.0.2"}) {
		t.Fatalf("a valid policy's cluster is served %v", got)
	}
}

// A load assignment that fails validation is not handed over: the cluster
// keeps its last good one (an empty one at first), and Err says why until a
// valid one replaces it.
func TestInvalidEndpointKeepsTheLastGoodAssignment(t *testing.T) {
	sink := newMapSink()
	e := New(sink)
	c := irCluster("web")
	e.Update(nil, svcSlice("default", "web", ""))
	e.Serve("ns/gw", []*ir.Cluster{c}, nil)()
	if cla := sink.groups["ns/gw"][c.Name]; cla == nil || len(cla.GetEndpoints()) != 0 || e.Err("ns/gw") == "" {
		t.Fatalf("a new cluster with an invalid endpoint is served %v (err %q)", cla, e.Err("ns/gw"))
	}
	if changed := e.Update(svcSlice("default", "web", ""), svcSlice("default", "web", "10.0.0.1")); !slices.Equal(changed, []string{"ns/gw"}) {
		t.Fatalf("mended: groups whose error changed %v", changed)
	}
	if got := ips(sink.groups["ns/gw"][c.Name]); !slices.Equal(got, []string{"10.0.0.1"}) || e.Err("ns/gw") != "" {
		t.Fatalf("mended: served %v (err %q)", got, e.Err("ns/gw"))
	}
	if changed := e.Update(svcSlice("default", "web", "10.0.0.1"), svcSlice("default", "web", "")); !slices.Equal(changed, []string{"ns/gw"}) {
		t.Fatalf("broken: groups whose error changed %v", changed)
	}
	if got := ips(sink.groups["ns/gw"][c.Name]); !slices.Equal(got, []string{"10.0.0.1"}) || !strings.Contains(e.Err("ns/gw"), c.Name) {
		t.Fatalf("broken again: served %v (err %q)", got, e.Err("ns/gw"))
	}
	e.Serve("ns/gw", nil, nil)()
	if e.Err("ns/gw") != "" {
		t.Fatalf("the cluster left, the error stays: %q", e.Err("ns/gw"))
	}
}

// Serve hands over the load assignments of new clusters before it returns
// and removes those of the clusters that left only when its function is
// called; a kept cluster keeps its load assignment (and its updates) until
// it is no longer kept.
func TestServeOrderAndKeptClusters(t *testing.T) {
	sink := newMapSink()
	e := New(sink)
	e.Update(nil, svcSlice("default", "a", "10.0.0.1"))
	e.Update(nil, svcSlice("default", "b", "10.0.0.2"))
	a, b := irCluster("a"), irCluster("b")
	e.Serve("ns/gw", []*ir.Cluster{a}, nil)()
	remove := e.Serve("ns/gw", []*ir.Cluster{b}, nil)
	if sink.groups["ns/gw"][b.Name] == nil || sink.groups["ns/gw"][a.Name] == nil {
		t.Fatalf("before remove: served %v; want both", slices.Sorted(maps.Keys(sink.groups["ns/gw"])))
	}
	remove()
	if sink.groups["ns/gw"][a.Name] != nil {
		t.Fatal("a cluster that left keeps its load assignment")
	}
	// b leaves the IR and is kept: its load assignment stays, is not
	// handed over again, and follows its Service.
	clear(sink.set)
	e.Serve("ns/gw", []*ir.Cluster{a}, []Cluster{ClusterOf(b)})()
	if got := sink.set["ns/gw"]; !slices.Equal(got, []string{a.Name}) {
		t.Fatalf("handed %v, want only %s", got, a.Name)
	}
	e.Update(svcSlice("default", "b", "10.0.0.2"), svcSlice("default", "b", "10.0.0.3"))
	if got := ips(sink.groups["ns/gw"][b.Name]); !slices.Equal(got, []string{"10.0.0.3"}) {
		t.Fatalf("a kept cluster serves %v", got)
	}
	// No longer kept: gone.
	e.Serve("ns/gw", []*ir.Cluster{a}, nil)()
	if sink.groups["ns/gw"][b.Name] != nil {
		t.Fatal("a cluster no longer kept keeps its load assignment")
	}
	// Forget: nothing more is handed over for the group.
	e.Forget("ns/gw")
	clear(sink.set)
	e.Update(svcSlice("default", "a", "10.0.0.1"), svcSlice("default", "a", "10.0.0.9"))
	if len(sink.set) != 0 {
		t.Fatalf("a forgotten group was handed %v", sink.set)
	}
}

// After every step of random cluster lists (sorted or not, kept clusters,
// new cluster values) and slice changes, each group's sink holds exactly
// the load assignment Assignment makes of each cluster it serves from the
// Service's endpoints now, and nothing else.
func TestServeAndUpdateMatchAFreshBuild(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 11))
		sink := newMapSink()
		e := New(sink)
		svcs := make([]string, 12)
		cur := map[string]*discoveryv1.EndpointSlice{}
		for i := range svcs {
			svcs[i] = fmt.Sprintf("s%02d", i)
		}
		served := map[string][]Cluster{}
		for step := range 80 {
			switch op := rng.IntN(4); op {
			case 0, 1: // a slice
				svc := svcs[rng.IntN(len(svcs))]
				var addrs []string
				for k := range rng.IntN(3) {
					addrs = append(addrs, fmt.Sprintf("10.%d.%d.%d", step, rng.IntN(4), k+1))
				}
				next := svcSlice("default", svc, addrs...)
				if rng.IntN(5) == 0 {
					next = nil
				}
				old := cur[svc]
				if old == nil && next == nil {
					continue
				}
				e.Update(old, next)
				cur[svc] = next
			default: // a group's clusters
				group := fmt.Sprintf("ns/g%d", rng.IntN(3))
				var list []*ir.Cluster
				var kept []Cluster
				for _, svc := range svcs {
					switch rng.IntN(5) {
					case 0:
						c := irCluster(svc)
						if rng.IntN(4) == 0 {
							c.TLS = &ir.UpstreamTLS{Invalid: true}
						}
						list = append(list, c)
					case 1:
						kept = append(kept, ClusterOf(irCluster(svc)))
					}
				}
				if rng.IntN(4) == 0 {
					slices.Reverse(list)
				}
				want := kept
				for _, c := range list {
					want = append(want, ClusterOf(c))
				}
				e.Serve(group, list, kept)()
				served[group] = want
			}
			for group, want := range served {
				got := sink.groups[group]
				if len(got) != len(want) {
					t.Fatalf("seed %d step %d: %s serves %d load assignments, want %d", seed, step, group, len(got), len(want))
				}
				for _, c := range want {
					var eps []Endpoint
					if s := cur[c.Service.Name]; s != nil {
						eps = ForPort([]*discoveryv1.EndpointSlice{s}, "http")
					}
					if w := Assignment(c.Name, eps, c.NoEndpoints); !proto.Equal(got[c.Name], w) {
						t.Fatalf("seed %d step %d: %s serves %v for %s, want %v", seed, step, group, got[c.Name], c.Name, w)
					}
				}
			}
		}
	}
}

// TestHugeSlices: a Service of 5000 endpoints, in one EndpointSlice or in
// five, is served as one valid load assignment of 5000 endpoints.
func TestHugeSlices(t *testing.T) {
	for _, c := range []struct {
		name   string
		slices []*discoveryv1.EndpointSlice
	}{
		{"one slice of 5000", []*discoveryv1.EndpointSlice{slice("default", "web", "web-0", 0, 5000)}},
		{"five slices of 1000", func() []*discoveryv1.EndpointSlice {
			var out []*discoveryv1.EndpointSlice
			for i := range 5 {
				out = append(out, slice("default", "web", fmt.Sprintf("web-%d", i), i*1000, 1000))
			}
			return out
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			sink := newMapSink()
			e := New(sink)
			for _, s := range c.slices {
				e.Update(nil, s)
			}
			cluster := &ir.Cluster{Name: "default/web/80", Protocol: ir.ClusterHTTP1,
				Service: ir.ServicePort{Namespace: "default", Name: "web", Port: "http"}}
			if n := len(e.table.For(cluster.Service)); n != 5000 {
				t.Fatalf("the Service port lists %d endpoints; want 5000", n)
			}
			e.Serve("default/gw", []*ir.Cluster{cluster}, nil)()
			if err := e.Err("default/gw"); err != "" {
				t.Fatal(err)
			}
			cla := sink.groups["default/gw"][cluster.Name]
			if err := cla.ValidateAll(); err != nil {
				t.Fatal(err)
			}
			if got := len(ips(cla)); got != 5000 {
				t.Fatalf("the load assignment has %d endpoints; want 5000", got)
			}
		})
	}
}
