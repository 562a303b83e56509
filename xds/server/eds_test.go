package server

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
	"github.com/go-logr/logr"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/internal/testwait"
	"github.com/shardgate/shardgate/xds/endpoints"
	"github.com/shardgate/shardgate/xds/translate"
)

// edsSlice is Service default/svc's EndpointSlice: port "http" (8080) on
// the addresses ips.
func edsSlice(svc string, ips ...string) *discoveryv1.EndpointSlice {
	port, name := int32(8080), "http"
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: svc + "-x", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
	}
	for _, ip := range ips {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}})
	}
	return s
}

// svcGateway is Gateway default/name with one HTTP listener and, per
// Service, a cluster ("default/<svc>/80", Service port "http") and a host
// routing to it.
func svcGateway(name string, svcs ...string) *ir.Gateway {
	gw := &ir.Gateway{Namespace: "default", Name: name}
	l := ir.Listener{Name: "http-80", Port: 80, Protocol: ir.ProtocolHTTP}
	slices.Sort(svcs)
	for _, svc := range svcs {
		cluster, host := "default/"+svc+"/80", svc+".example.com"
		gw.Clusters = append(gw.Clusters, &ir.Cluster{Name: cluster, Protocol: ir.ClusterHTTP1,
			Service: ir.ServicePort{Namespace: "default", Name: svc, Port: "http"}})
		l.VirtualHosts = append(l.VirtualHosts, &ir.VirtualHost{Name: host, Domains: []string{host}, Routes: []ir.Route{{
			Name:     "HTTPRoute/default/" + svc + "/rule/0/match/0",
			Match:    ir.Match{Path: &ir.PathMatch{Type: ir.MatchPathPrefix, Value: "/"}},
			Backends: []ir.Backend{{Cluster: cluster, Weight: 1}},
		}}})
	}
	gw.Listeners = []ir.Listener{l}
	return gw
}

// publishSvc publishes gw as the controller does (its clusters name their
// Service ports, whose slices the test handed over) and returns the
// snapshot.
func publishSvc(t *testing.T, s *Server, gw *ir.Gateway) cachev3.ResourceSnapshot {
	t.Helper()
	s.Publish([]*ir.Gateway{gw})
	if errs := s.PublishErrors(); len(errs) != 0 {
		t.Fatal(errs)
	}
	snap, err := s.Snapshot(k8stypes.NamespacedName{Namespace: gw.Namespace, Name: gw.Name})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// addressesOf lists the endpoint addresses of a load assignment.
func addressesOf(cla *endpointv3.ClusterLoadAssignment) []string {
	var out []string
	for _, l := range cla.GetEndpoints() {
		for _, e := range l.GetLbEndpoints() {
			out = append(out, e.GetEndpoint().GetAddress().GetSocketAddress().GetAddress())
		}
	}
	return out
}

// edsWatch is a proxy's open state-of-the-world EDS watch on group, naming
// clusters, after it received (and acknowledged) every load assignment.
type edsWatch struct {
	t     *testing.T
	s     *Server
	group string
	names []string
	sub   stream.Subscription
	out   chan cachev3.Response
}

func openEDSWatch(t *testing.T, s *Server, group string, names ...string) *edsWatch {
	t.Helper()
	w := &edsWatch{t: t, s: s, group: group, names: names, sub: stream.NewSotwSubscription(names, false), out: make(chan cachev3.Response, 1)}
	w.watch("")
	got := w.received()
	if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(names))) {
		t.Fatalf("%s: first EDS response has %v, want %v", group, got, names)
	}
	return w
}

func (w *edsWatch) watch(version string) {
	w.t.Helper()
	req := &cachev3.Request{Node: &core.Node{Id: "p", Cluster: w.group}, TypeUrl: resourcev3.EndpointType, ResourceNames: w.names, VersionInfo: version}
	if _, err := w.s.cache.CreateWatch(req, w.sub, w.out); err != nil {
		w.t.Fatal(err)
	}
}

// received takes the response the watch got (nil if none) and opens the
// next watch, as a proxy's ACK does; it returns the load assignments'
// names.
func (w *edsWatch) received() []string {
	w.t.Helper()
	select {
	case r := <-w.out:
		d, err := r.GetDiscoveryResponse()
		if err != nil {
			w.t.Fatal(err)
		}
		w.sub.SetReturnedResources(r.GetReturnedResources())
		var names []string
		for _, a := range d.GetResources() {
			e := &endpointv3.ClusterLoadAssignment{}
			if err := a.UnmarshalTo(e); err != nil {
				w.t.Fatal(err)
			}
			names = append(names, e.GetClusterName())
		}
		w.watch(d.GetVersionInfo())
		return names
	default:
		return nil
	}
}

// served is the load assignment group's proxies are served for cluster.
func servedAssignment(s *Server, group, cluster string) *endpointv3.ClusterLoadAssignment {
	list, _ := s.types.endpoints(group).current()
	for _, e := range list {
		if e.GetClusterName() == cluster {
			// A wire form (the cache keeps the serialization): read
			// what it sends.
			full, err := translate.Decode(e)
			if err != nil {
				panic(err)
			}
			return full.(*endpointv3.ClusterLoadAssignment)
		}
	}
	return nil
}

// An EndpointSlice change of a Service that two Gateways' clusters send to
// is pushed to the proxies of both, as that one load assignment, and to no
// other Gateway's; no Gateway's config is built or published for it.
func TestSliceChangePushesToTheGatewaysOfItsServiceOnly(t *testing.T) {
	s := New(Options{Log: logr.Discard()})
	s.UpdateEndpointSlice(nil, edsSlice("shared", "10.0.0.1"))
	s.UpdateEndpointSlice(nil, edsSlice("own", "10.0.1.1"))
	s.UpdateEndpointSlice(nil, edsSlice("other", "10.0.2.1"))
	a, b, c := svcGateway("a", "own", "shared"), svcGateway("b", "shared"), svcGateway("c", "other")
	s.Publish([]*ir.Gateway{a, b, c})
	if errs := s.PublishErrors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	group := func(gw *ir.Gateway) string {
		return NodeGroup(k8stypes.NamespacedName{Namespace: gw.Namespace, Name: gw.Name})
	}
	names := func(gw *ir.Gateway) []string {
		var out []string
		for _, c := range gw.Clusters {
			out = append(out, c.Name)
		}
		return out
	}
	watches := map[string]*edsWatch{}
	published := map[string]*published{}
	for _, gw := range []*ir.Gateway{a, b, c} {
		watches[gw.Name] = openEDSWatch(t, s, group(gw), names(gw)...)
		published[gw.Name] = s.gateways[group(gw)].published
	}

	s.UpdateEndpointSlice(edsSlice("shared", "10.0.0.1"), edsSlice("shared", "10.0.0.2"))
	for _, gw := range []*ir.Gateway{a, b} {
		if got := watches[gw.Name].received(); !slices.Equal(got, []string{"default/shared/80"}) {
			t.Fatalf("%s's proxy got %v, want the shared cluster's load assignment", gw.Name, got)
		}
		if got := addressesOf(servedAssignment(s, group(gw), "default/shared/80")); !slices.Equal(got, []string{"10.0.0.2"}) {
			t.Fatalf("%s serves %v", gw.Name, got)
		}
	}
	if got := watches["c"].received(); got != nil {
		t.Fatalf("a Gateway whose clusters do not use the Service got %v", got)
	}
	for _, gw := range []*ir.Gateway{a, b, c} {
		if s.gateways[group(gw)].published != published[gw.Name] {
			t.Fatalf("an endpoint change published %s's config", gw.Name)
		}
	}
}

// A cluster that leaves the Gateway's IR is retained a while: its load
// assignment stays served (and follows its Service) until the cluster
// expires, and goes with it.
func TestRetainedClusterKeepsItsAssignmentUntilItExpires(t *testing.T) {
	// Long enough for the checks above the wait to see the cluster
	// retained on a loaded machine.
	const retainRemoved = 5 * time.Second
	s := New(Options{Log: logr.Discard(), RetainRemoved: retainRemoved})
	s.UpdateEndpointSlice(nil, edsSlice("stay", "10.0.0.1"))
	s.UpdateEndpointSlice(nil, edsSlice("gone", "10.0.1.1"))
	nn := k8stypes.NamespacedName{Namespace: "default", Name: "gw"}
	group := NodeGroup(nn)
	publishSvc(t, s, svcGateway("gw", "gone", "stay"))
	snap := publishSvc(t, s, svcGateway("gw", "stay"))
	start := time.Now()
	if _, ok := snap.GetResources(resourcev3.ClusterType)["default/gone/80"]; !ok {
		t.Fatal("the removed cluster is not retained")
	}
	if got := addressesOf(servedAssignment(s, group, "default/gone/80")); !slices.Equal(got, []string{"10.0.1.1"}) {
		t.Fatalf("the retained cluster is served %v", got)
	}
	s.UpdateEndpointSlice(edsSlice("gone", "10.0.1.1"), edsSlice("gone", "10.0.1.2"))
	if got := addressesOf(servedAssignment(s, group, "default/gone/80")); !slices.Equal(got, []string{"10.0.1.2"}) {
		t.Fatalf("after its slice changed, the retained cluster is served %v", got)
	}
	testwait.For(t, "the expired cluster's load assignment to go", func() bool {
		return servedAssignment(s, group, "default/gone/80") == nil
	})
	if time.Since(start) < retainRemoved {
		t.Fatalf("the load assignment went after %v, before the cluster expired", time.Since(start))
	}
	snap2, err := s.Snapshot(nn)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap2.GetResources(resourcev3.ClusterType)["default/gone/80"]; ok {
		t.Fatal("the expired cluster is still published")
	}
	if servedAssignment(s, group, "default/stay/80") == nil {
		t.Fatal("the other cluster's load assignment went too")
	}
}

// A cluster whose BackendTLSPolicy cannot be honoured is served an empty
// load assignment, whatever its Service's slices list, so requests fail
// rather than go out in plaintext.
func TestInvalidTLSClusterIsServedNoEndpoints(t *testing.T) {
	s := New(Options{Log: logr.Discard()})
	s.UpdateEndpointSlice(nil, edsSlice("b", "10.0.0.1"))
	gw := svcGateway("gw", "b")
	gw.Clusters[0].TLS = &ir.UpstreamTLS{Invalid: true}
	publishSvc(t, s, gw)
	group := NodeGroup(k8stypes.NamespacedName{Namespace: "default", Name: "gw"})
	cla := servedAssignment(s, group, "default/b/80")
	if cla == nil || len(cla.GetEndpoints()) != 0 {
		t.Fatalf("an invalid policy's cluster is served %v", cla)
	}
	s.UpdateEndpointSlice(edsSlice("b", "10.0.0.1"), edsSlice("b", "10.0.0.2"))
	if cla := servedAssignment(s, group, "default/b/80"); cla == nil || len(cla.GetEndpoints()) != 0 {
		t.Fatalf("after a slice change, an invalid policy's cluster is served %v", cla)
	}
}

// publishLog records, in order, what a publish hands the EDS cache and the
// snapshot cache, passing everything on to them.
type publishLog struct {
	mu     sync.Mutex
	events []string
}

func (l *publishLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// loggedSink is the server's EDS cache, logged.
type loggedSink struct {
	endpoints.Sink
	log *publishLog
}

func (s loggedSink) SetAssignments(group string, list []*endpointv3.ClusterLoadAssignment) {
	for _, e := range list {
		s.log.add("set " + e.GetClusterName())
	}
	s.Sink.SetAssignments(group, list)
}

func (s loggedSink) RemoveAssignments(group string, names []string) {
	for _, n := range names {
		s.log.add("remove " + n)
	}
	s.Sink.RemoveAssignments(group, names)
}

// loggedCache is the server's snapshot cache, logged.
type loggedCache struct {
	cachev3.SnapshotCache
	log *publishLog
}

func (c loggedCache) SetSnapshot(ctx context.Context, group string, snap cachev3.ResourceSnapshot) error {
	c.log.add("snapshot")
	return c.SnapshotCache.SetSnapshot(ctx, group, snap)
}

// The load assignment of a cluster a config introduces goes to the EDS
// cache before the snapshot whose clusters use it, and that of a cluster it
// drops leaves only after that snapshot.
func TestNewClusterAssignmentPrecedesItsCDS(t *testing.T) {
	s := New(Options{Log: logr.Discard(), RetainRemoved: -1}) // the dropped cluster is not retained
	log := &publishLog{}
	s.eds = endpoints.New(loggedSink{Sink: s.types, log: log})
	s.cache = loggedCache{SnapshotCache: s.cache, log: log}
	for i := range 3 {
		s.UpdateEndpointSlice(nil, edsSlice(fmt.Sprintf("s%d", i), fmt.Sprintf("10.0.0.%d", i+1)))
	}
	group := NodeGroup(k8stypes.NamespacedName{Namespace: "default", Name: "gw"})
	publishSvc(t, s, svcGateway("gw", "s0", "s1"))
	if want := []string{"set default/s0/80", "set default/s1/80", "snapshot"}; !slices.Equal(log.events, want) {
		t.Fatalf("first publish: %v, want %v", log.events, want)
	}
	log.events = nil
	snap := publishSvc(t, s, svcGateway("gw", "s0", "s2"))
	if want := []string{"set default/s2/80", "snapshot", "remove default/s1/80"}; !slices.Equal(log.events, want) {
		t.Fatalf("a cluster added and one dropped: %v, want %v", log.events, want)
	}
	clusters := snap.GetResources(resourcev3.ClusterType)
	if _, ok := clusters["default/s2/80"]; !ok {
		t.Fatal("the new cluster is not published")
	}
	if got := addressesOf(servedAssignment(s, group, "default/s2/80")); !slices.Equal(got, []string{"10.0.0.3"}) {
		t.Fatalf("the new cluster is served %v", got)
	}
	if servedAssignment(s, group, "default/s1/80") != nil {
		t.Fatal("the dropped cluster's load assignment is still served")
	}
}
