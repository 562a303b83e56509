package server

import (
	"encoding/hex"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/internal/testwait"
	"github.com/shardgate/shardgate/xds/translate"
)

// Proxyless gRPC clients: recognised by their node's user agent, served API
// listeners for their own Gateway, by name, from real ADS streams over mTLS.

// grpcNode is a node as grpc-go sends it.
func grpcNode(id string, gw k8stypes.NamespacedName) *core.Node {
	return &core.Node{Id: id, Cluster: NodeGroup(gw), UserAgentName: "gRPC Go", UserAgentVersionType: &core.Node_UserAgentVersion{UserAgentVersion: "1.82.1"},
		ClientFeatures: []string{"envoy.lb.does_not_support_overprovisioning", "xds.config.resource-in-sotw"}}
}

// askNames sends a state-of-the-world request for the given names of
// typeURL as n, acknowledging version/nonce (empty for a first request),
// and returns the next response.
func (r *rawStream) askNames(n *core.Node, typeURL, version, nonce string, names ...string) answer {
	r.t.Helper()
	return r.recv(r.sotw.Send(&discovery.DiscoveryRequest{Node: n, TypeUrl: typeURL, ResourceNames: names,
		VersionInfo: version, ResponseNonce: nonce}))
}

// answerNames are the names of an answer's resources, sorted.
func answerNames(t *testing.T, a answer) []string {
	t.Helper()
	var out []string
	for _, res := range a.resources {
		out = append(out, cachev3.GetResourceName(res))
	}
	slices.Sort(out)
	return out
}

// apiRoute is the route table of an API listener in an answer, or fails.
func apiRoute(t *testing.T, a answer, name string) string {
	t.Helper()
	for _, res := range a.resources {
		l, ok := res.(*listenerv3.Listener)
		if !ok {
			t.Fatalf("%T in a listener answer", res)
		}
		if l.GetName() != name {
			continue
		}
		if l.GetApiListener() == nil || len(l.GetFilterChains()) > 0 {
			t.Fatalf("listener %s is not an API listener: %v", name, l)
		}
		var hcm hcmv3.HttpConnectionManager
		if err := l.GetApiListener().GetApiListener().UnmarshalTo(&hcm); err != nil {
			t.Fatal(err)
		}
		return hcm.GetRds().GetRouteConfigName()
	}
	t.Fatalf("no listener %s in %v", name, answerNames(t, a))
	return ""
}

// multiHost is the attacker's Gateway with two hosts on port 80
// (app.example.com → tenant/app/80; raw.example.com → default/web/80 and
// default/ws/80).
func multiHost(t *testing.T, e *identityEnv) {
	t.Helper()
	victim := gatewayIR(t, "https-single-server.in.yaml")
	victim.Namespace, victim.Name = victimGW.Namespace, victimGW.Name
	attacker := gatewayIR(t, "traffic-app-protocol-websockets.in.yaml")
	attacker.Namespace, attacker.Name = attackerGW.Namespace, attackerGW.Name
	publishIR(e.srv, victim, attacker)
	if errs := e.srv.PublishErrors(); len(errs) != 0 {
		t.Fatalf("publish: %v", errs)
	}
}

// A gRPC client asks for one listener of a Gateway that serves several
// hosts, then for the route table and the one cluster that host uses, as
// grpc-go does: each is answered with exactly what it named. An ADS
// snapshot cache answers only requests whose names cover every resource of
// the type, which a gRPC client's never do.
func TestProxylessClientIsServedByName(t *testing.T) {
	e := startIdentityServer(t)
	multiHost(t, e)
	envoyBefore, err := e.srv.Snapshot(attackerGW)
	if err != nil {
		t.Fatal(err)
	}
	s := openSotw(t, e.conn(t, &attackerGW))
	n := grpcNode("grpc-b", attackerGW)

	lds := s.askNames(n, resourcev3.ListenerType, "", "", "app.example.com")
	expectServed(t, "the API listener app.example.com", lds)
	if got := answerNames(t, lds); !slices.Equal(got, []string{"app.example.com"}) {
		t.Fatalf("LDS answered %v, want app.example.com alone", got)
	}
	table := apiRoute(t, lds, "app.example.com")
	if table != "http-80" {
		t.Fatalf("app.example.com uses route table %q, want http-80", table)
	}
	rds := s.askNames(n, resourcev3.RouteType, "", "", table)
	expectServed(t, "the route table", rds)
	cds := s.askNames(n, resourcev3.ClusterType, "", "", "tenant/app/80")
	expectServed(t, "one cluster of three", cds)
	if got := answerNames(t, cds); !slices.Equal(got, []string{"tenant/app/80"}) {
		t.Fatalf("CDS answered %v, want tenant/app/80 alone", got)
	}
	eds := s.askNames(n, resourcev3.EndpointType, "", "", "tenant/app/80")
	if eds.err != nil {
		t.Fatal(eds.err)
	}

	// The port-qualified name, on the same stream, and the route version
	// is the Gateway's (what two-phase publish waits for).
	lds2 := s.askNames(n, resourcev3.ListenerType, lds.version, lds.nonce, "app.example.com", "raw.example.com:80")
	if got := answerNames(t, lds2); !slices.Equal(got, []string{"app.example.com", "raw.example.com:80"}) {
		t.Fatalf("LDS answered %v", got)
	}
	if rds.version != envoyBefore.GetVersion(resourcev3.RouteType) {
		t.Fatalf("gRPC route version %q, Envoy's %q: they must be the same config", rds.version, envoyBefore.GetVersion(resourcev3.RouteType))
	}

	// Envoy, on another stream with the same certificate, still gets the
	// translated listeners.
	env := openSotw(t, e.conn(t, &attackerGW))
	got := env.ask(node("envoy-b", attackerGW), resourcev3.ListenerType)
	expectServed(t, "Envoy's listeners", got)
	for _, res := range got.resources {
		l, ok := res.(*listenerv3.Listener)
		if !ok {
			t.Fatalf("%T in a listener answer", res)
		}
		if l.GetApiListener() != nil || len(l.GetFilterChains()) == 0 {
			t.Fatalf("Envoy got %s, not a translated listener", l.GetName())
		}
	}
	if got.version != envoyBefore.GetVersion(resourcev3.ListenerType) {
		t.Fatalf("Envoy's listener version moved: %q → %q", envoyBefore.GetVersion(resourcev3.ListenerType), got.version)
	}
}

// A gRPC client holding Gateway B's certificate cannot read Gateway A's API
// listeners, by node.cluster (refused) or by A's host names (not there),
// on either kind of stream.
func TestProxylessClientCannotReadAnotherGateway(t *testing.T) {
	e := startIdentityServer(t)
	multiHost(t, e)
	cc := e.conn(t, &attackerGW)

	expectRefused(t, "gRPC node naming A's Gateway (sotw)",
		openSotw(t, cc).askNames(grpcNode("grpc-b", victimGW), resourcev3.ListenerType, "", "", "www.example.com"))
	expectRefused(t, "gRPC node naming A's Gateway (delta)",
		openDelta(t, cc).ask(grpcNode("grpc-b", victimGW), resourcev3.ListenerType))

	s := openSotw(t, cc)
	n := grpcNode("grpc-b", attackerGW)
	lds := s.askNames(n, resourcev3.ListenerType, "", "", "www.example.com", "www.example.com:443")
	if lds.err != nil {
		t.Fatal(lds.err)
	}
	if got := answerNames(t, lds); len(got) != 0 {
		t.Fatalf("B's gRPC client got listeners %v asking for A's hosts", got)
	}
	for _, typ := range []string{resourcev3.RouteType, resourcev3.SecretType} {
		a := s.askNames(n, typ, "", "", "https-443/https", "https-443/www", "tenant-a/cert")
		if a.err != nil {
			t.Fatal(a.err)
		}
		if got := leaked(a); len(got) > 0 {
			t.Fatalf("B's gRPC client got A's %v", got)
		}
	}
}

// A node that claims to be gRPC, asking for everything, gets its own
// Gateway's API listeners, route tables, clusters and secrets, nothing of
// another Gateway's, and Envoy's snapshot of either Gateway is untouched.
func TestNodeClaimingGRPCGetsOnlyItsOwnGateway(t *testing.T) {
	e := startIdentityServer(t)
	multiHost(t, e)
	victimBefore, _ := e.srv.Snapshot(victimGW)
	attackerBefore, _ := e.srv.Snapshot(attackerGW)
	n := grpcNode("envoy-in-disguise", attackerGW)
	n.UserAgentName = "gRPC Go (really Envoy)"
	want := map[string][]string{
		resourcev3.ListenerType: {"app.example.com", "app.example.com:80", "raw.example.com", "raw.example.com:80"},
		resourcev3.RouteType:    {"http-80"},
		resourcev3.ClusterType:  {"default/web/80", "default/ws/80", "tenant/app/80"},
	}
	for _, delta := range []bool{false, true} {
		cc := e.conn(t, &attackerGW)
		for _, typ := range []string{resourcev3.ListenerType, resourcev3.RouteType, resourcev3.ClusterType, resourcev3.SecretType} {
			s := openSotw(t, cc)
			if delta {
				if typ == resourcev3.SecretType {
					continue // nothing to send, so no delta response
				}
				s = openDelta(t, cc)
			}
			a := s.ask(n, typ)
			if a.err != nil {
				t.Fatalf("%s (delta %t): %v", typ, delta, a.err)
			}
			if got := leaked(a); typ == resourcev3.SecretType && len(got) > 0 {
				t.Fatalf("delta %t: got secrets %v", delta, got)
			}
			if got := answerNames(t, a); typ != resourcev3.SecretType && !slices.Equal(got, want[typ]) {
				t.Fatalf("%s (delta %t): got %v, want %v", typ, delta, got, want[typ])
			}
			if typ == resourcev3.ListenerType {
				for _, name := range want[typ] {
					apiRoute(t, a, name)
				}
			}
		}
	}
	for gw, before := range map[k8stypes.NamespacedName]cachev3.ResourceSnapshot{victimGW: victimBefore, attackerGW: attackerBefore} {
		after, _ := e.srv.Snapshot(gw)
		for _, typ := range []string{resourcev3.ListenerType, resourcev3.RouteType, resourcev3.ClusterType, resourcev3.SecretType} {
			if before.GetVersion(typ) != after.GetVersion(typ) || !sameResources(before.GetResources(typ), after.GetResources(typ)) {
				t.Fatalf("%s: Envoy's %s changed", gw, typ)
			}
		}
	}
	if _, err := e.srv.ProxylessSnapshot(victimGW); err == nil {
		t.Fatal("A's Gateway has a proxyless snapshot, though no gRPC client of A's asked")
	}
}

// sameDecoded is sameResources for published forms (wire route tables).
func sameDecoded(t *testing.T, a, b map[string]types.Resource) bool {
	t.Helper()
	if len(a) != len(b) {
		return false
	}
	for name, r := range a {
		o, ok := b[name]
		if !ok || !proto.Equal(mustDecode(t, r), mustDecode(t, o)) {
			return false
		}
	}
	return true
}

func sameResources(a, b map[string]types.Resource) bool {
	if len(a) != len(b) {
		return false
	}
	for name, r := range a {
		if !proto.Equal(r, b[name]) {
			return false
		}
	}
	return true
}

// Envoy's snapshot is the same, version for version and message for
// message, whether or not proxyless clients are served: two servers take
// the same configs, one with a gRPC client, and their Envoy snapshots are
// compared after each.
func TestEnvoySnapshotIsTheSameWithProxylessClients(t *testing.T) {
	plain := New(Options{Log: logr.Discard()})
	served := New(Options{Log: logr.Discard()})
	gw := func(file string) *ir.Gateway {
		g := gatewayIR(t, file)
		g.Namespace, g.Name = "ns", "gw"
		return g
	}
	nn := k8stypes.NamespacedName{Namespace: "ns", Name: "gw"}
	publishIR(plain, gw("traffic-app-protocol-websockets.in.yaml"))
	publishIR(served, gw("traffic-app-protocol-websockets.in.yaml"))
	served.mu.Lock()
	served.streams[sotwStream(1)] = &streamState{identity: NodeGroup(nn), group: NodeGroup(nn)}
	served.mu.Unlock()
	served.observeRequest(sotwStream(1), &discovery.DiscoveryRequest{Node: grpcNode("g", nn), TypeUrl: resourcev3.ListenerType})
	eventually(t, func() error {
		_, err := served.ProxylessSnapshot(nn)
		return err
	})
	for _, file := range []string{"http-single-route.in.yaml", "https-same-hostname-two-listeners-ports.in.yaml", "multiple-hostnames-wildcard.in.yaml"} {
		publishIR(plain, gw(file))
		publishIR(served, gw(file))
		waitSettled(t, served, NodeGroup(nn))
		a, _ := plain.Snapshot(nn)
		b, _ := served.Snapshot(nn)
		for _, typ := range []string{resourcev3.ListenerType, resourcev3.RouteType, resourcev3.ClusterType, resourcev3.SecretType, resourcev3.EndpointType} {
			// A route table's version counts its generations (which
			// history, not content, decides), and the load
			// assignments' versions are the cache's: their content is
			// compared.
			if a.GetVersion(typ) != b.GetVersion(typ) && typ != resourcev3.EndpointType && typ != resourcev3.RouteType {
				t.Fatalf("%s: Envoy's %s version %q with gRPC clients, %q without", file, typ, b.GetVersion(typ), a.GetVersion(typ))
			}
			if !sameDecoded(t, a.GetResources(typ), b.GetResources(typ)) {
				t.Fatalf("%s: Envoy's %s differ with gRPC clients", file, typ)
			}
		}
		// The proxyless snapshot: the same route tables and clusters,
		// the API listeners of this config.
		p, err := served.ProxylessSnapshot(nn)
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range []string{resourcev3.RouteType, resourcev3.ClusterType, resourcev3.SecretType} {
			if p.GetVersion(typ) != b.GetVersion(typ) {
				t.Fatalf("%s: proxyless %s version %q, Envoy's %q", file, typ, p.GetVersion(typ), b.GetVersion(typ))
			}
		}
		var gotNames []string
		for name := range p.GetResources(resourcev3.ListenerType) {
			gotNames = append(gotNames, name)
		}
		slices.Sort(gotNames)
		var wantNames []string
		for _, l := range translate.APIListeners(gw(file)) {
			wantNames = append(wantNames, l.GetName())
		}
		if !slices.Equal(gotNames, wantNames) {
			t.Fatalf("%s: proxyless listeners %v, want %v", file, gotNames, wantNames)
		}
		// The delta versions (updated from the last index) name the same
		// listeners, each with its content's digest.
		vm := p.(*cachev3.Snapshot).VersionMap[resourcev3.ListenerType]
		if len(vm) != len(wantNames) {
			t.Fatalf("%s: delta versions for %d listeners, want %d", file, len(vm), len(wantNames))
		}
		for name, r := range p.GetResources(resourcev3.ListenerType) {
			d, err := translate.DigestOf(r)
			if err != nil {
				t.Fatal(err)
			}
			if vm[name] != hex.EncodeToString(d[:]) {
				t.Fatalf("%s: listener %s has delta version %q, want its digest", file, name, vm[name])
			}
		}
	}
}

// waitSettled waits until no two-phase publish of group is pending.
func waitSettled(t *testing.T, s *Server, group string) {
	t.Helper()
	eventually(t, func() error {
		if isPending(s, group) {
			return fmt.Errorf("%s: phase two pending", group)
		}
		return nil
	})
}

// A gRPC client's NACK of its API listeners is reported on its Gateway, as
// an Envoy's NACK of its listeners is: the API listeners have a version of
// their own, which is in force.
func TestProxylessNACKIsReported(t *testing.T) {
	e := startIdentityServer(t)
	multiHost(t, e)
	s := openSotw(t, e.conn(t, &attackerGW))
	lds := s.askNames(grpcNode("grpc-b", attackerGW), resourcev3.ListenerType, "", "", "app.example.com")
	expectServed(t, "the API listener", lds)
	if err := s.sotw.Send(&discovery.DiscoveryRequest{TypeUrl: resourcev3.ListenerType, ResourceNames: []string{"app.example.com"},
		ResponseNonce: lds.nonce, ErrorDetail: status.New(codes.InvalidArgument, "grpc rejects this").Proto()}); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if msg := e.srv.PublishErrors()[attackerGW]; !strings.Contains(msg, "grpc-b rejected Listener version "+lds.version) {
			return fmt.Errorf("publish errors %v", e.srv.PublishErrors())
		}
		return nil
	})
}

// The proxyless snapshot follows a two-phase publish: phase one has the
// API listeners in force with phase one's route tables, and phase two the
// new config's.
func TestProxylessSnapshotFollowsTwoPhase(t *testing.T) {
	s := New(Options{Log: logr.Discard(), PhaseTwoTimeout: 5 * time.Second})
	one := gatewayIR(t, "http-single-route.in.yaml")
	two := gatewayIR(t, "weighted-two-backends.in.yaml")
	two.Namespace, two.Name = one.Namespace, one.Name
	one.Listeners[0].VirtualHosts[0].Name = "app.test" // an API listener
	two.Listeners[0].VirtualHosts[0].Name = "app.test"
	nn := k8stypes.NamespacedName{Namespace: one.Namespace, Name: one.Name}
	group := NodeGroup(nn)
	s.mu.Lock()
	s.streams[sotwStream(1)] = &streamState{identity: group, group: group}
	s.mu.Unlock()
	s.observeRequest(sotwStream(1), &discovery.DiscoveryRequest{Node: grpcNode("g", nn), TypeUrl: resourcev3.RouteType})
	publishIR(s, one)
	first, err := s.ProxylessSnapshot(nn)
	if err != nil {
		t.Fatal(err)
	}
	s.observeRequest(sotwStream(1), &discovery.DiscoveryRequest{TypeUrl: resourcev3.RouteType, VersionInfo: first.GetVersion(resourcev3.RouteType)})
	publishIR(s, two)
	if !isPending(s, group) {
		t.Fatal("no two-phase publish with a gRPC client connected")
	}
	mid, _ := s.ProxylessSnapshot(nn)
	envoyMid, _ := s.Snapshot(nn)
	if mid.GetVersion(resourcev3.RouteType) != envoyMid.GetVersion(resourcev3.RouteType) || mid.GetVersion(resourcev3.ClusterType) != envoyMid.GetVersion(resourcev3.ClusterType) {
		t.Fatal("phase one's proxyless snapshot is not phase one's config")
	}
	if _, ok := mid.GetResources(resourcev3.ListenerType)["app.test"]; !ok {
		t.Fatalf("phase one lacks the API listener app.test: %v", mid.GetResources(resourcev3.ListenerType))
	}
	acked := twoPhaseCount(twoPhaseAcknowledged)
	s.observeRequest(sotwStream(1), &discovery.DiscoveryRequest{TypeUrl: resourcev3.RouteType, VersionInfo: mid.GetVersion(resourcev3.RouteType)})
	waitSettled(t, s, group)
	if got := twoPhaseCount(twoPhaseAcknowledged); got < acked+1 {
		t.Fatalf("acknowledged two-phase publishes %v, want %v", got, acked+1)
	}
	final, _ := s.ProxylessSnapshot(nn)
	envoyFinal, _ := s.Snapshot(nn)
	if final.GetVersion(resourcev3.RouteType) == mid.GetVersion(resourcev3.RouteType) || final.GetVersion(resourcev3.RouteType) != envoyFinal.GetVersion(resourcev3.RouteType) {
		t.Fatal("phase two did not reach the proxyless snapshot")
	}
}

// twoPhaseCount reads shardgate_xds_two_phase_publishes_total{outcome}.
func twoPhaseCount(outcome string) float64 {
	var m dto.Metric
	_ = twoPhasePublishes.WithLabelValues(outcome).Write(&m)
	return m.GetCounter().GetValue()
}

// BenchmarkPipelineOneRouteChangeProxyless is BenchmarkPipelineOneRouteChange
// with a proxyless gRPC client of the Gateway connected: each change also
// makes the Gateway's 20k API listeners (10k hosts, each as "<host>" and
// "<host>:80"), reusing the unchanged ones, and sets its proxyless
// snapshot. (The meter's watches are an Envoy's.)
func BenchmarkPipelineOneRouteChangeProxyless(b *testing.B) {
	pipelineOneRouteChange(b, connectProxyless)
}

// connectProxyless connects a proxyless client to the pipeline's Gateway
// (its stream as the server keeps it, and its first request) and waits for
// its 20k API listeners, then for the garbage of making them to be
// collected.
func connectProxyless(b *testing.B, s *Server) {
	b.Helper()
	nn := k8stypes.NamespacedName{Namespace: "default", Name: "gw"}
	s.mu.Lock()
	s.streams[sotwStream(1<<40)] = &streamState{identity: NodeGroup(nn), group: NodeGroup(nn)}
	s.mu.Unlock()
	s.observeRequest(sotwStream(1<<40), &discovery.DiscoveryRequest{Node: grpcNode("g", nn), TypeUrl: resourcev3.ListenerType})
	testwait.For(b, "a proxyless snapshot of 20k API listeners", func() bool {
		p, err := s.ProxylessSnapshot(nn)
		return err == nil && len(p.GetResources(resourcev3.ListenerType)) == 20_000
	})
	runtime.GC()
}

// BenchmarkPipelineTenantFlowProxyless is BenchmarkPipelineTenantFlow with
// a proxyless gRPC client of the Gateway connected: each new lease's host
// also adds two API listeners to the Gateway's 20k.
func BenchmarkPipelineTenantFlowProxyless(b *testing.B) { pipelineTenantFlow(b, connectProxyless) }
