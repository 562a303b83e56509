package server

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/build"
	"github.com/shardgate/shardgate/xds/endpoints"
	"github.com/shardgate/shardgate/xds/translate"
)

// gatewayIR loads an IR case of the translator's goldens: a Gateway that
// routes to one cluster.
func gatewayIR(t *testing.T, file string) *ir.Gateway {
	t.Helper()
	data, err := os.ReadFile("../translate/testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var gw ir.Gateway
	if err := yaml.Unmarshal(data, &gw); err != nil {
		t.Fatal(err)
	}
	return &gw
}

// A config that fails validation is never published: the last good one
// stays, the Gateway reports why, and the outcome is handed over without a
// new translation.
func TestRefusedConfigKeepsTheLastGoodOne(t *testing.T) {
	outcomes := make(chan struct{}, 16)
	s := New(Options{Log: logr.Discard(), OnOutcome: func() { outcomes <- struct{}{} }})
	gw := gatewayIR(t, "http-single-route.in.yaml")
	nn := k8stypes.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}

	publishIR(s, gw)
	if errs := s.PublishErrors(); len(errs) != 0 {
		t.Fatalf("good config refused: %v", errs)
	}
	snap, err := s.Snapshot(nn)
	if err != nil {
		t.Fatal(err)
	}
	good := snap.GetVersion(resourcev3.RouteType)

	// IR whose route names a cluster the Gateway does not have: the
	// referential check refuses it.
	broken := gatewayIR(t, "http-single-route.in.yaml")
	vh := broken.Listeners[0].VirtualHosts[0]
	vh.Routes = append(vh.Routes, ir.Route{Name: "HTTPRoute/default/broken/rule/0/match/0",
		Match:    ir.Match{Path: &ir.PathMatch{Type: ir.MatchPathPrefix, Value: "/broken"}},
		Backends: []ir.Backend{{Cluster: "no/such/cluster", Weight: 1}}})
	publishIR(s, broken)
	msg := s.PublishErrors()[nn]
	if !strings.HasPrefix(msg, RefusedPrefix) || !strings.Contains(msg, "no/such/cluster") {
		t.Fatalf("refusal not reported with the missing cluster: %q", msg)
	}
	select {
	case <-outcomes:
	case <-time.After(10 * time.Second):
		t.Fatal("the refusal was not reported through OnOutcome")
	}
	snap, _ = s.Snapshot(nn)
	if v := snap.GetVersion(resourcev3.RouteType); v != good {
		t.Fatalf("a refused config was published: route version %s, last good %s", v, good)
	}
	for _, r := range snap.GetResources(resourcev3.RouteType) {
		for _, vh := range routeConfiguration(t, r).GetVirtualHosts() {
			for _, rt := range vh.GetRoutes() {
				if rt.GetRoute().GetCluster() == "no/such/cluster" {
					t.Fatal("the broken route reached the published snapshot")
				}
			}
		}
	}

	publishIR(s, gw)
	if errs := s.PublishErrors(); len(errs) != 0 {
		t.Fatalf("recovery not recorded: %v", errs)
	}
	select {
	case <-outcomes:
	case <-time.After(10 * time.Second):
		t.Fatal("the recovery was not reported through OnOutcome")
	}
}

// routeConfiguration is a published route table as a message.
func routeConfiguration(t *testing.T, r types.Resource) *routev3.RouteConfiguration {
	t.Helper()
	rc, ok := r.(*routev3.RouteConfiguration)
	if !ok {
		t.Fatalf("route resource of type %T", r)
	}
	decoded, err := translate.DecodeRouteConfiguration(rc)
	if err != nil {
		t.Fatal(err)
	}
	return decoded
}

// Publishing an unchanged config keeps every type's version, so nothing is
// sent again; a removed cluster stays for RetainRemoved, referenced by
// routes that never match, then goes without a new Publish.
func TestVersionsAndRetention(t *testing.T) {
	s := New(Options{Log: logr.Discard(), RetainRemoved: 200 * time.Millisecond})
	two := gatewayIR(t, "weighted-two-backends.in.yaml")
	nn := k8stypes.NamespacedName{Namespace: two.Namespace, Name: two.Name}
	publishIR(s, two)
	first, _ := s.Snapshot(nn)
	publishIR(s, two)
	again, _ := s.Snapshot(nn)
	for _, typ := range build.TypeOrder {
		if first.GetVersion(typ) != again.GetVersion(typ) {
			t.Fatalf("%s version changed for an unchanged config", typ)
		}
	}
	clusters := len(first.GetResources(resourcev3.ClusterType))
	if clusters < 2 {
		t.Fatalf("want two clusters in the case, got %d", clusters)
	}

	one := gatewayIR(t, "http-single-route.in.yaml")
	one.Namespace, one.Name = two.Namespace, two.Name
	publishIR(s, one)
	if errs := s.PublishErrors(); len(errs) != 0 {
		t.Fatalf("config with retained clusters refused: %v", errs)
	}
	kept, _ := s.Snapshot(nn)
	if got := len(kept.GetResources(resourcev3.ClusterType)); got < clusters {
		t.Fatalf("removed clusters were dropped at once: %d clusters, had %d", got, clusters)
	}
	retainedRoutes := 0
	for _, r := range kept.GetResources(resourcev3.RouteType) {
		for _, vh := range routeConfiguration(t, r).GetVirtualHosts() {
			for _, rt := range vh.GetRoutes() {
				if strings.HasPrefix(rt.GetName(), translate.RetainedRoutePrefix) {
					retainedRoutes++
				}
			}
		}
	}
	if retainedRoutes == 0 {
		t.Fatal("the retained clusters are not referenced from the route tables")
	}
	want := len(translateOrDie(t, one).Clusters)
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		after, err := s.Snapshot(nn)
		return err == nil && len(after.GetResources(resourcev3.ClusterType)) == want, nil
	}); err != nil {
		t.Fatalf("retained clusters not dropped after RetainRemoved: %v", err)
	}
}

// publishOrDie publishes gw and returns its snapshot.
func publishOrDie(t *testing.T, s *Server, gw *ir.Gateway) cachev3.ResourceSnapshot {
	t.Helper()
	publishIR(s, gw)
	if errs := s.PublishErrors(); len(errs) != 0 {
		t.Fatal(errs)
	}
	snap, err := s.Snapshot(k8stypes.NamespacedName{Namespace: gw.Namespace, Name: gw.Name})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func translateOrDie(t *testing.T, gw *ir.Gateway) *translate.Resources {
	t.Helper()
	res, err := translate.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A Gateway with only Envoys connected is published in one step; one with a
// proxyless gRPC client first gets the new cluster referenced from the old
// route table, and the new route table only after the client acknowledged.
func TestTwoPhaseOnlyForProxylessClients(t *testing.T) {
	for _, tc := range []struct {
		userAgent string
		twoPhase  bool
	}{{"envoy", false}, {"gRPC Go", true}} {
		t.Run(tc.userAgent, func(t *testing.T) {
			s := New(Options{Log: logr.Discard(), PhaseTwoTimeout: 5 * time.Second})
			one := gatewayIR(t, "http-single-route.in.yaml")
			two := gatewayIR(t, "weighted-two-backends.in.yaml")
			two.Namespace, two.Name = one.Namespace, one.Name
			nn := k8stypes.NamespacedName{Namespace: one.Namespace, Name: one.Name}
			group := NodeGroup(nn)
			publishIR(s, one)
			before, _ := s.Snapshot(nn)
			oldRoutes := before.GetVersion(resourcev3.RouteType)
			// A stream bound to the Gateway, as its open would bind it.
			s.mu.Lock()
			s.streams[sotwStream(1)] = &streamState{identity: group, group: group}
			s.mu.Unlock()
			s.observeRequest(sotwStream(1), &discovery.DiscoveryRequest{
				Node:    &core.Node{Id: "n1", Cluster: group, UserAgentName: tc.userAgent},
				TypeUrl: resourcev3.RouteType, VersionInfo: oldRoutes,
			})

			publishIR(s, two)
			final := translateOrDie(t, two)
			mid, _ := s.Snapshot(nn)
			if !tc.twoPhase {
				if isPending(s, group) || len(mid.GetResources(resourcev3.ClusterType)) < len(final.Clusters) {
					t.Fatal("an Envoy-only Gateway was not published in one step")
				}
				return
			}
			// Phase one: every new cluster, referenced only by routes that
			// cannot match, in the old route table.
			for _, c := range final.Clusters {
				if _, ok := mid.GetResources(resourcev3.ClusterType)[c.GetName()]; !ok {
					t.Fatalf("phase one lacks cluster %s", c.GetName())
				}
			}
			placeholders := 0
			for _, r := range mid.GetResources(resourcev3.RouteType) {
				for _, vh := range routeConfiguration(t, r).GetVirtualHosts() {
					for _, rt := range vh.GetRoutes() {
						if strings.HasPrefix(rt.GetName(), translate.RetainedRoutePrefix) {
							placeholders++
						}
					}
				}
			}
			if placeholders == 0 {
				t.Fatal("phase one does not reference the new clusters")
			}
			phaseOne := mid.GetVersion(resourcev3.RouteType)
			// Nothing but the acknowledgement may release phase two: for a
			// while without one, it stays pending. The window is the
			// assertion.
			stillPending := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 200*time.Millisecond, true,
				func(context.Context) (bool, error) { return !isPending(s, group), nil })
			if stillPending == nil {
				t.Fatal("phase two was published before the client acknowledged phase one")
			}
			s.observeRequest(sotwStream(1), &discovery.DiscoveryRequest{TypeUrl: resourcev3.RouteType, VersionInfo: phaseOne})
			if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true,
				func(context.Context) (bool, error) { return !isPending(s, group), nil }); err != nil {
				t.Fatalf("phase two not published after the acknowledgement: %v", err)
			}
			after, _ := s.Snapshot(nn)
			if after.GetVersion(resourcev3.RouteType) == phaseOne {
				t.Fatal("the route table did not move to the new config")
			}
		})
	}
}

// A new lease (a new host and its new cluster) is published in one step
// even with a proxyless client connected: no existing host switches to the
// new cluster, so no client could pick it before its balancer exists. A
// host that does switch to a new cluster still gets phase one, in which
// only that host references the cluster.
func TestTwoPhaseOnlyForHostsThatSwitch(t *testing.T) {
	s := New(Options{Log: logr.Discard(), PhaseTwoTimeout: 5 * time.Second})
	gw := largeIR(20)
	nn := k8stypes.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
	group := NodeGroup(nn)
	publishIR(s, gw)
	before, _ := s.Snapshot(nn)
	s.mu.Lock()
	s.streams[sotwStream(1)] = &streamState{identity: group, group: group}
	s.mu.Unlock()
	s.observeRequest(sotwStream(1), &discovery.DiscoveryRequest{
		Node:    &core.Node{Id: "n1", Cluster: group, UserAgentName: "gRPC Go"},
		TypeUrl: resourcev3.RouteType, VersionInfo: before.GetVersion(resourcev3.RouteType),
	})

	// A new lease: its host and cluster.
	lease := largeIR(21)
	publishIR(s, lease)
	if isPending(s, group) {
		t.Fatal("a new host with a new cluster waited for a phase two")
	}
	after, _ := s.Snapshot(nn)
	if got := len(routeConfiguration(t, after.GetResources(resourcev3.RouteType)["http-80"]).GetVirtualHosts()); got != 21 {
		t.Fatalf("the new host is not published: %d virtual hosts", got)
	}

	// An existing host switches to a new cluster: phase one references it
	// from that host alone.
	next := *lease
	next.Listeners = slices.Clone(lease.Listeners)
	vhs := slices.Clone(lease.Listeners[0].VirtualHosts)
	sw := *vhs[5]
	sw.Routes = slices.Clone(sw.Routes)
	sw.Routes[0].Backends = []ir.Backend{{Cluster: "default/new/80", Weight: 1}}
	vhs[5] = &sw
	next.Listeners[0].VirtualHosts = vhs
	next.Clusters = append(slices.Clone(lease.Clusters), withEndpoints(&ir.Cluster{Name: "default/new/80", Protocol: ir.ClusterHTTP1},
		endpoints.Endpoint{IP: "10.250.0.1", Port: 8080}))
	slices.SortFunc(next.Clusters, func(a, b *ir.Cluster) int { return strings.Compare(a.Name, b.Name) })
	publishIR(s, &next)
	if !isPending(s, group) {
		t.Fatal("a host switching to a new cluster was published in one step")
	}
	mid, _ := s.Snapshot(nn)
	var with []string
	for _, vh := range routeConfiguration(t, mid.GetResources(resourcev3.RouteType)["http-80"]).GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			if r.GetName() == translate.RetainedRoutePrefix+"default/new/80" {
				with = append(with, vh.GetName())
			}
		}
	}
	if !slices.Equal(with, []string{sw.Name}) {
		t.Fatalf("phase one references the new cluster from %v, want only %s", with, sw.Name)
	}
}

func isPending(s *Server, group string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gateways[group] != nil && s.gateways[group].pending != nil
}

// What go-control-plane sends for a published route table (its
// MarshalResource of the wire form) reads back as the table Translate
// builds, before and after a one-route change, and the change serializes
// one virtual host, not the table.
func TestPublishedRouteTablesReadBackAsTranslated(t *testing.T) {
	s := New(Options{Log: logr.Discard()})
	gw := largeIR(300)
	gw.Change = &ir.Change{Generation: 1}
	nn := k8stypes.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
	check := func(gw *ir.Gateway) {
		t.Helper()
		snap := publishOrDie(t, s, gw)
		want := translateOrDie(t, gw)
		routes := snap.GetResources(resourcev3.RouteType)
		if len(routes) != len(want.Routes) {
			t.Fatalf("%d route tables published, want %d", len(routes), len(want.Routes))
		}
		for _, rc := range want.Routes {
			enc, err := cachev3.MarshalResource(routes[rc.GetName()])
			if err != nil {
				t.Fatal(err)
			}
			got := &routev3.RouteConfiguration{}
			if err := proto.Unmarshal(enc, got); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, rc) {
				t.Fatalf("route table %s as sent differs from the translated one", rc.GetName())
			}
		}
	}
	check(gw)
	full := s.gateways[NodeGroup(nn)].builder.Encoded()

	next := *gw
	next.Listeners = slices.Clone(gw.Listeners)
	vhs := slices.Clone(next.Listeners[0].VirtualHosts)
	vh7 := *vhs[7]
	vh7.Routes = slices.Clone(vh7.Routes)
	vh7.Routes[0].Match.Path = &ir.PathMatch{Type: ir.MatchPathPrefix, Value: "/changed"}
	vhs[7] = &vh7
	next.Listeners[0].VirtualHosts = vhs
	next.Change = &ir.Change{Generation: 2, Since: 1, VirtualHosts: []ir.VirtualHostRef{{Listener: "http-80", Name: vh7.Name}}}
	check(&next)
	one := s.gateways[NodeGroup(nn)].builder.Encoded()
	if one <= 0 || one*50 > full {
		t.Fatalf("a one-route change serialized %d bytes; the whole config was %d", one, full)
	}
}

// largeIR is one HTTP listener with n virtual hosts, each routing to its
// own cluster.
func largeIR(n int) *ir.Gateway {
	gw := &ir.Gateway{Namespace: "default", Name: "gw"}
	l := ir.Listener{Name: "http-80", Port: 80, Protocol: ir.ProtocolHTTP}
	for i := range n {
		host := fmt.Sprintf("app-%04d.example.com", i)
		cluster := fmt.Sprintf("default/app-%04d/80", i)
		l.VirtualHosts = append(l.VirtualHosts, &ir.VirtualHost{Name: host, Domains: []string{host}, Routes: []ir.Route{{
			Name:     fmt.Sprintf("HTTPRoute/default/app-%04d/rule/0/match/0", i),
			Match:    ir.Match{Path: &ir.PathMatch{Type: ir.MatchPathPrefix, Value: "/"}},
			Backends: []ir.Backend{{Cluster: cluster, Weight: 1}},
		}}})
		gw.Clusters = append(gw.Clusters, withEndpoints(&ir.Cluster{Name: cluster, Protocol: ir.ClusterHTTP1},
			endpoints.Endpoint{IP: fmt.Sprintf("10.244.%d.%d", i/250, i%250+1), Port: 8080}))
	}
	gw.Listeners = []ir.Listener{l}
	return gw
}

// The per-resource versions delta xDS compares are set with the snapshot,
// as go-control-plane would compute them (the hex SHA-256 of each
// resource's serialization), except a route table's, which changes exactly
// when the table does; and a change re-versions only what it changed.
// Load assignments are not in the snapshot (eds.go): one endpoint change
// sends a proxy that load assignment alone, over state of the world and
// delta.
func TestDeltaVersionsAreSetWithTheSnapshot(t *testing.T) {
	s := New(Options{Log: logr.Discard(), RetainRemoved: -1}) // a removed cluster goes at once
	gw := largeIR(50)
	nn := k8stypes.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
	group := NodeGroup(nn)
	publishIR(s, gw)
	first, err := s.types.SnapshotCache.GetSnapshot(group)
	if err != nil {
		t.Fatal(err)
	}
	snap := first.(*cachev3.Snapshot)
	if n := len(snap.GetResources(resourcev3.EndpointType)); n != 0 {
		t.Fatalf("the snapshot holds %d load assignments; they are served apart", n)
	}
	fresh := &cachev3.Snapshot{Resources: snap.Resources}
	if err := fresh.ConstructVersionMap(); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{resourcev3.ClusterType, resourcev3.ListenerType} {
		if !maps.Equal(snap.GetVersionMap(typ), fresh.GetVersionMap(typ)) || len(snap.GetVersionMap(typ)) == 0 {
			t.Fatalf("%s: versions %v, go-control-plane computes %v", typ, snap.GetVersionMap(typ), fresh.GetVersionMap(typ))
		}
	}
	routesBefore := maps.Clone(snap.GetVersionMap(resourcev3.RouteType))
	if len(routesBefore) != 1 {
		t.Fatalf("route table versions %v", routesBefore)
	}

	// A proxy's EDS watches, state of the world and delta, naming every
	// cluster, get every load assignment first.
	names := make([]string, len(gw.Clusters))
	for i, c := range gw.Clusters {
		names[i] = c.Name
	}
	node := &core.Node{Id: "p", Cluster: group}
	sotw := stream.NewSotwSubscription(names, false)
	sotwOut := make(chan cachev3.Response, 1)
	sotwReq := &cachev3.Request{Node: node, TypeUrl: resourcev3.EndpointType, ResourceNames: names}
	if _, err := s.cache.CreateWatch(sotwReq, sotw, sotwOut); err != nil {
		t.Fatal(err)
	}
	delta := stream.NewDeltaSubscription(names, nil, nil, false)
	deltaOut := make(chan cachev3.DeltaResponse, 1)
	deltaReq := &cachev3.DeltaRequest{Node: node, TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: names}
	if _, err := s.cache.CreateDeltaWatch(deltaReq, delta, deltaOut); err != nil {
		t.Fatal(err)
	}
	sotwNames := func() []string {
		t.Helper()
		select {
		case r := <-sotwOut:
			d, err := r.GetDiscoveryResponse()
			if err != nil {
				t.Fatal(err)
			}
			published, _ := s.types.edsVersion(group)
			if d.GetVersionInfo() != published {
				// NACKs are matched with the version served.
				t.Fatalf("EDS sent at version %q, published as %q", d.GetVersionInfo(), published)
			}
			sotw.SetReturnedResources(r.GetReturnedResources())
			sotwReq = &cachev3.Request{Node: node, TypeUrl: resourcev3.EndpointType, ResourceNames: names, VersionInfo: d.GetVersionInfo()}
			var got []string
			for _, a := range d.GetResources() {
				e := &endpointv3.ClusterLoadAssignment{}
				if err := a.UnmarshalTo(e); err != nil {
					t.Fatal(err)
				}
				got = append(got, e.GetClusterName())
			}
			slices.Sort(got)
			return got
		default:
			t.Fatal("no state-of-the-world EDS response")
		}
		return nil
	}
	deltaNames := func() (got, removed []string) {
		t.Helper()
		select {
		case r := <-deltaOut:
			d, err := r.GetDeltaDiscoveryResponse()
			if err != nil {
				t.Fatal(err)
			}
			delta.SetReturnedResources(r.GetReturnedResources())
			for _, res := range d.GetResources() {
				got = append(got, res.GetName())
			}
			slices.Sort(got)
			return got, d.GetRemovedResources()
		default:
			t.Fatal("no delta EDS response")
		}
		return nil, nil
	}
	if got := sotwNames(); !slices.Equal(got, names) {
		t.Fatalf("first state-of-the-world EDS response: %v", got)
	}
	if got, _ := deltaNames(); !slices.Equal(got, names) {
		t.Fatalf("first delta EDS response: %v", got)
	}
	rewatch := func() {
		t.Helper()
		if _, err := s.cache.CreateWatch(sotwReq, sotw, sotwOut); err != nil {
			t.Fatal(err)
		}
		if _, err := s.cache.CreateDeltaWatch(deltaReq, delta, deltaOut); err != nil {
			t.Fatal(err)
		}
		select {
		case <-sotwOut:
			t.Fatal("a state-of-the-world EDS watch fired with nothing changed")
		case <-deltaOut:
			t.Fatal("a delta EDS watch fired with nothing changed")
		default:
		}
	}
	rewatch()

	// One cluster's endpoints change: only its load assignment is sent.
	next := *gw
	next.Clusters = slices.Clone(gw.Clusters)
	c3 := *next.Clusters[3] // published IR is never modified
	next.Clusters[3] = withEndpoints(&c3, endpoints.Endpoint{IP: "10.250.0.1", Port: 8080})
	publishIR(s, &next)
	if got := sotwNames(); !slices.Equal(got, []string{c3.Name}) {
		t.Fatalf("after one endpoint change, state of the world got %v", got)
	}
	if got, removed := deltaNames(); !slices.Equal(got, []string{c3.Name}) || len(removed) != 0 {
		t.Fatalf("after one endpoint change, delta got %v, removed %v", got, removed)
	}
	second, _ := s.types.SnapshotCache.GetSnapshot(group)
	if !maps.Equal(second.(*cachev3.Snapshot).GetVersionMap(resourcev3.RouteType), routesBefore) {
		t.Fatal("the route table's version changed though the table did not")
	}
	view, _ := s.Snapshot(nn)
	if e, ok := view.GetResources(resourcev3.EndpointType)[c3.Name].(*endpointv3.ClusterLoadAssignment); !ok ||
		!strings.Contains(mustDecode(t, e).(*endpointv3.ClusterLoadAssignment).String(), "10.250.0.1") {
		t.Fatalf("Snapshot does not show the changed load assignment: %v", view.GetResources(resourcev3.EndpointType)[c3.Name])
	}
	rewatch()

	// A route change re-versions the route table, and sends no load
	// assignment.
	third := next
	third.Listeners = slices.Clone(next.Listeners)
	vhs := slices.Clone(third.Listeners[0].VirtualHosts)
	vh1 := *vhs[1] // published IR is never modified
	vh1.Routes = slices.Clone(vh1.Routes)
	vh1.Routes[0].Match.Path = &ir.PathMatch{Type: ir.MatchPathPrefix, Value: "/v2"}
	vhs[1] = &vh1
	third.Listeners[0].VirtualHosts = vhs
	publishIR(s, &third)
	last, _ := s.types.SnapshotCache.GetSnapshot(group)
	if maps.Equal(last.(*cachev3.Snapshot).GetVersionMap(resourcev3.RouteType), routesBefore) {
		t.Fatal("a changed route table kept its version")
	}
	select {
	case <-sotwOut:
		t.Fatal("a route change fired the state-of-the-world EDS watch")
	case <-deltaOut:
		t.Fatal("a route change fired the delta EDS watch")
	default:
	}

	// A new lease (its cluster and load assignment), then another lease
	// gone from the middle of the lists: the cluster versions are
	// go-control-plane's own, with an entry for every resource and no
	// other; the delta EDS client is sent the new load assignment, then
	// told the gone one is removed.
	for step, g := range []*ir.Gateway{largeIR(51), func() *ir.Gateway {
		g := largeIR(51)
		g.Listeners[0].VirtualHosts = slices.Delete(g.Listeners[0].VirtualHosts, 10, 11)
		g.Clusters = slices.Delete(g.Clusters, 10, 11)
		return g
	}()} {
		publishIR(s, g)
		if errs := s.PublishErrors(); len(errs) != 0 {
			t.Fatal(errs)
		}
		got, _ := s.types.SnapshotCache.GetSnapshot(group)
		snap := got.(*cachev3.Snapshot)
		fresh := &cachev3.Snapshot{Resources: snap.Resources}
		if err := fresh.ConstructVersionMap(); err != nil {
			t.Fatal(err)
		}
		typ := resourcev3.ClusterType
		if !maps.Equal(snap.GetVersionMap(typ), fresh.GetVersionMap(typ)) || len(snap.GetVersionMap(typ)) != len(g.Clusters) {
			t.Fatalf("step %d, %s: %d versions, go-control-plane computes %d, and they differ", step, typ, len(snap.GetVersionMap(typ)), len(fresh.GetVersionMap(typ)))
		}
		sent, removed := deltaNames()
		switch step {
		case 0:
			// largeIR(51) also undoes the endpoint change of cluster 3;
			// the new cluster's load assignment goes once the proxy
			// asks for it (after its CDS update).
			if want := []string{g.Clusters[3].Name}; !slices.Equal(sent, want) || len(removed) != 0 {
				t.Fatalf("new lease: delta sent %v, removed %v; want %v", sent, removed, want)
			}
			delta.UpdateResourceSubscriptions([]string{g.Clusters[50].Name}, nil)
			if _, err := s.cache.CreateDeltaWatch(deltaReq, delta, deltaOut); err != nil {
				t.Fatal(err)
			}
			if sent, removed := deltaNames(); !slices.Equal(sent, []string{g.Clusters[50].Name}) || len(removed) != 0 {
				t.Fatalf("new lease, subscribed: delta sent %v, removed %v", sent, removed)
			}
		case 1:
			if want := []string{"default/app-0010/80"}; len(sent) != 0 || !slices.Equal(removed, want) {
				t.Fatalf("gone lease: delta sent %v, removed %v; want removed %v", sent, removed, want)
			}
		}
		if _, err := s.cache.CreateDeltaWatch(deltaReq, delta, deltaOut); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(view.GetResources(resourcev3.EndpointType)); n != 50 {
		t.Fatalf("Snapshot showed %d load assignments, want 50", n)
	}
}

// mustDecode reads a wire form back as its message.
func mustDecode(t *testing.T, m proto.Message) proto.Message {
	t.Helper()
	d, err := translate.Decode(m)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Clusters and load assignments are published as wire forms (their checked
// bytes, copied into responses); what go-control-plane sends for them reads
// back as the translated messages, and the config dump shows their content,
// not only their names.
func TestPublishedClustersReadBackAsTranslated(t *testing.T) {
	s := New(Options{Log: logr.Discard()})
	gw := largeIR(5)
	nn := k8stypes.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
	snap := publishOrDie(t, s, gw)
	want := translateOrDie(t, gw)
	check := func(typ string, name string, want proto.Message) {
		t.Helper()
		got := snap.GetResources(typ)[name]
		if got == nil || len(got.ProtoReflect().GetUnknown()) == 0 {
			t.Fatalf("%s %s is not published as a wire form", typ, name)
		}
		enc, err := cachev3.MarshalResource(got)
		if err != nil {
			t.Fatal(err)
		}
		read := want.ProtoReflect().New().Interface()
		if err := proto.Unmarshal(enc, read); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(read, want) {
			t.Fatalf("%s %s reads back as\n%v\nwant\n%v", typ, name, read, want)
		}
	}
	for _, c := range want.Clusters {
		check(resourcev3.ClusterType, c.GetName(), c)
	}
	for _, c := range gw.Clusters {
		eps, _ := endpointsOf(c)
		got, ok := snap.GetResources(resourcev3.EndpointType)[c.Name].(*endpointv3.ClusterLoadAssignment)
		if ok { // a wire form: read what it sends
			full, err := translate.Decode(got)
			if err != nil {
				t.Fatal(err)
			}
			got = full.(*endpointv3.ClusterLoadAssignment)
		}
		if want := endpoints.Assignment(c.Name, eps, false); !ok || !proto.Equal(got, want) {
			t.Fatalf("load assignment %s is\n%v\nwant\n%v", c.Name, got, want)
		}
	}
	dump, err := s.ConfigDump(nn)
	if err != nil {
		t.Fatal(err)
	}
	for _, ty := range dump.Types {
		if ty.TypeURL != resourcev3.EndpointType {
			continue
		}
		if len(ty.Resources) != 5 || !strings.Contains(string(ty.Resources[0]), "10.244.0.1") {
			t.Fatalf("the config dump's load assignments do not show their endpoints: %s", ty.Resources)
		}
		return
	}
	t.Fatal("the config dump has no load assignments")
}

// TestClusterVersionIsTheContentHash: as leases come and go (a cluster
// added or removed with its route), the published cluster version, which
// the server takes from the digests the checker keeps in list order, is the
// hash of the fresh translation's clusters computed from scratch: the
// version of a content, whatever was published before it. (Clusters are
// not retained after removal here, so that what is published is exactly
// the translation.)
func TestClusterVersionIsTheContentHash(t *testing.T) {
	base, _ := pipelineInput(40)
	// A removed cluster goes at once: the published list is the translation's.
	s := New(Options{Log: logr.Discard(), RetainRemoved: -1})
	nn := k8stypes.NamespacedName{Namespace: "default", Name: "gw"}
	routes := slices.Clone(base.HTTPRoutes)
	for step := range 30 {
		switch {
		case step%3 == 2 && len(routes) > 1: // a lease ends
			routes = slices.Delete(routes, step%len(routes), step%len(routes)+1)
		default: // a lease's route attaches again (its Service was there all along)
			routes = append(routes, base.HTTPRoutes[(step*7)%len(base.HTTPRoutes)])
			slices.SortFunc(routes, func(a, b *gatewayv1.HTTPRoute) int {
				return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
			})
			routes = slices.CompactFunc(routes, func(a, b *gatewayv1.HTTPRoute) bool { return a == b })
		}
		in := *base
		in.HTTPRoutes = routes
		gw := gatewayapi.Translate(&in).Gateways[0]
		snap := publishOrDie(t, s, gw)
		fresh := translateOrDie(t, gw)
		items := make([]types.Resource, len(fresh.Clusters))
		for i, c := range fresh.Clusters {
			items[i] = c
		}
		scratch, err := build.SnapshotOf(fresh, build.EDSClusters{}) // every version computed afresh
		if err != nil {
			t.Fatal(err)
		}
		want := scratch.Versions[resourcev3.ClusterType]
		if got := snap.GetVersion(resourcev3.ClusterType); got != want {
			t.Fatalf("step %d (%d clusters): cluster version %s, the content's %s", step, len(items), got, want)
		}
		// The snapshot's index (updated from the last one's by a walk)
		// holds exactly these clusters, each under its name.
		index := snap.GetResources(resourcev3.ClusterType)
		if len(index) != len(fresh.Clusters) {
			t.Fatalf("step %d: %d clusters indexed, %d translated", step, len(index), len(fresh.Clusters))
		}
		for _, c := range fresh.Clusters {
			r, ok := index[c.GetName()]
			if !ok {
				t.Fatalf("step %d: cluster %s not indexed", step, c.GetName())
			}
			got, err := build.DigestOf(r)
			if err != nil {
				t.Fatal(err)
			}
			if d, _ := build.DigestOf(c); got != d {
				t.Fatalf("step %d: cluster %s indexed with other content", step, c.GetName())
			}
		}
	}
	if _, err := s.Snapshot(nn); err != nil {
		t.Fatal(err)
	}
}

// A removed cluster that presents a client certificate is retained only
// while the config still has that secret: were the secret gone with it,
// Envoy would wait for it, and the check refuses such a config.
func TestRetainedClusterNeedsItsClientCertificate(t *testing.T) {
	const secret = "default/client"
	withTLS := func(secrets ...string) *ir.Gateway {
		gw := largeIR(3)
		gw.Clusters = slices.Clone(gw.Clusters)
		c := *gw.Clusters[1]
		c.TLS = &ir.UpstreamTLS{SNI: "app-0001.example.com", SystemCAs: true, ClientCertificate: secret}
		gw.Clusters[1] = &c
		for _, s := range secrets {
			gw.Secrets = append(gw.Secrets, ir.Secret{Name: s, Cert: []byte("c"), Key: []byte("k")})
		}
		return gw
	}
	without := func(gw *ir.Gateway, secrets ...string) *ir.Gateway {
		next := *gw
		next.Listeners = slices.Clone(gw.Listeners)
		next.Listeners[0].VirtualHosts = slices.Delete(slices.Clone(gw.Listeners[0].VirtualHosts), 1, 2)
		next.Clusters = slices.Delete(slices.Clone(gw.Clusters), 1, 2)
		next.Secrets = nil
		for _, s := range secrets {
			next.Secrets = append(next.Secrets, ir.Secret{Name: s, Cert: []byte("c"), Key: []byte("k")})
		}
		return &next
	}
	tlsCluster := withTLS().Clusters[1].Name
	for _, tc := range []struct {
		name     string
		keep     bool // the next config keeps the secret
		retained bool
	}{{"secret kept", true, true}, {"secret gone too", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{Log: logr.Discard(), RetainRemoved: time.Minute})
			gw := withTLS(secret)
			publishOrDie(t, s, gw)
			var next *ir.Gateway
			if tc.keep {
				next = without(gw, secret)
			} else {
				next = without(gw)
			}
			snap := publishOrDie(t, s, next)
			_, got := snap.GetResources(resourcev3.ClusterType)[tlsCluster]
			if got != tc.retained {
				t.Fatalf("cluster %s published: %v, want %v", tlsCluster, got, tc.retained)
			}
		})
	}
}
