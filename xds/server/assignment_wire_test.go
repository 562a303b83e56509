package server

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/shardgate/shardgate/xds/translate"
)

func testAssignment(name string, ips ...string) *endpointv3.ClusterLoadAssignment {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: name}
	if len(ips) == 0 {
		return cla
	}
	l := &endpointv3.LocalityLbEndpoints{Locality: &corev3.Locality{}, LoadBalancingWeight: wrapperspb.UInt32(1)}
	for _, ip := range ips {
		l.LbEndpoints = append(l.LbEndpoints, &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Address: ip, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8080}}}},
		}}})
	}
	cla.Endpoints = []*endpointv3.LocalityLbEndpoints{l}
	return cla
}

// A load assignment set in the EDS cache is kept as its serialization
// alone: the message does not stay. What is sent, what delta clients are
// versioned by, and the message readers get (the config dump, a two-phase
// publish) are those of the message set; another content is another
// version.
func TestAssignmentKeepsOnlyItsSerialization(t *testing.T) {
	for _, msg := range []*endpointv3.ClusterLoadAssignment{
		testAssignment("ns/svc:http", "10.0.0.1", "10.0.0.2"),
		testAssignment("ns/empty:http"),
		testAssignment("", "10.0.0.3"), // no name: no wire form, decoded
	} {
		want, err := cachev3.MarshalResource(msg)
		if err != nil {
			t.Fatal(err)
		}
		r := newAssignment(msg, "v1")
		if r.msg != nil {
			t.Errorf("%q: the assignment keeps its message beside its serialization", msg.GetClusterName())
		}
		b, hash, err := r.wire()
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != string(want) || hash != cachev3.HashResource(want) {
			t.Errorf("%q: serialization or hash differ from the message's", msg.GetClusterName())
		}
		view := r.message()
		if got, err := cachev3.MarshalResource(view); err != nil || string(got) != string(want) {
			t.Errorf("%q: the message view serializes to other bytes (%v)", msg.GetClusterName(), err)
		}
		decoded, err := translate.Decode(view)
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(decoded, msg) {
			t.Errorf("%q: the message view decodes to %v, want %v", msg.GetClusterName(), decoded, msg)
		}
		// The view shares the kept bytes but cannot write into them.
		view.ProtoReflect().SetUnknown(append(view.ProtoReflect().GetUnknown(), 0x2a, 0))
		if again, _, _ := r.wire(); string(again) != string(want) {
			t.Errorf("%q: changing the view changed the kept serialization", msg.GetClusterName())
		}
	}
	a, b := newAssignment(testAssignment("ns/svc:http", "10.0.0.1"), "v1"), newAssignment(testAssignment("ns/svc:http", "10.0.0.2"), "v1")
	_, ha, _ := a.wire()
	_, hb, _ := b.wire()
	if ha == hb {
		t.Error("two contents have the same delta version")
	}
}

// A load assignment that cannot be serialized keeps its message for
// readers, and every response with it fails and says why.
func TestAssignmentUnserializable(t *testing.T) {
	msg := testAssignment("ns/svc:http", "10.0.0.\xff")
	r := newAssignment(msg, "v1")
	if _, _, err := r.wire(); err == nil {
		t.Fatal("an invalid UTF-8 address serialized")
	}
	if r.message() != msg {
		t.Error("an unserializable assignment does not keep its message for readers")
	}
}
