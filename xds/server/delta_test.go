package server

import (
	"testing"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/endpoints"
)

// A delta client, over a real stream, gets the route table as Translate
// builds it, and after one cluster's endpoints change, that cluster's load
// assignment alone.
func TestDeltaClientGetsWireTablesAndOnlyWhatChanged(t *testing.T) {
	// The Gateway's earlier cluster is not kept.
	env := startIdentityServer(t, func(o *Options) { o.RetainRemoved = -1 })
	victim := gatewayIR(t, "https-single-server.in.yaml")
	victim.Namespace, victim.Name = victimGW.Namespace, victimGW.Name
	gw := gatewayIR(t, "weighted-two-backends.in.yaml")
	gw.Namespace, gw.Name = attackerGW.Namespace, attackerGW.Name
	publishIR(env.srv, victim, gw)
	if errs := env.srv.PublishErrors(); len(errs) != 0 {
		t.Fatal(errs)
	}
	st := openDelta(t, env.conn(t, &attackerGW))
	n := node("delta-1", attackerGW)

	routes := st.ask(n, resourcev3.RouteType)
	if routes.err != nil || len(routes.resources) != 1 {
		t.Fatalf("route tables: %d, %v", len(routes.resources), routes.err)
	}
	got, ok := routes.resources[0].(*routev3.RouteConfiguration)
	if !ok {
		t.Fatalf("route table: got a %T", routes.resources[0])
	}
	if want := translateOrDie(t, gw).Routes[0]; !proto.Equal(got, want) {
		t.Fatalf("route table as received:\n%v\nwant\n%v", got, want)
	}

	eps := st.ask(n, resourcev3.EndpointType)
	if eps.err != nil || len(eps.resources) != 2 {
		t.Fatalf("load assignments: %d, %v", len(eps.resources), eps.err)
	}
	// Acknowledge, then change one cluster's endpoints.
	if err := st.delta.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResponseNonce: eps.nonce}); err != nil {
		t.Fatal(err)
	}
	next := *gw
	next.Clusters = append([]*ir.Cluster(nil), gw.Clusters...)
	c1 := *next.Clusters[1] // published IR is never modified
	next.Clusters[1] = withEndpoints(&c1, endpoints.Endpoint{IP: "10.0.0.9", Port: 8080})
	publishIR(env.srv, victim, &next)
	pushed := st.recv(nil)
	if pushed.err != nil {
		t.Fatal(pushed.err)
	}
	if len(pushed.resources) != 1 {
		t.Fatalf("after one cluster's endpoints changed, %d load assignments were sent, want 1", len(pushed.resources))
	}
	cla, ok := pushed.resources[0].(*endpointv3.ClusterLoadAssignment)
	if !ok {
		t.Fatalf("load assignment: got a %T", pushed.resources[0])
	}
	if cla.GetClusterName() != next.Clusters[1].Name {
		t.Fatalf("sent %s, want %s", cla.GetClusterName(), next.Clusters[1].Name)
	}
}
