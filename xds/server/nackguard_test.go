package server

import (
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// A node's records live as long as one of its streams: a proxy that
// reconnects (new stream first, old one closed after) keeps them; the last
// close drops them, NACKs included.
func TestNACKGuardForgetsANodeWithItsLastStream(t *testing.T) {
	g := newNACKGuard(nil)
	changed := make(chan struct{}, 1)
	g.onChange = func() { changed <- struct{}{} }
	node := &core.Node{Id: "envoy-1", Cluster: "ns/gw"}
	g.attach(sotwStream(1), node)
	g.recordResponse(node, resourcev3.RouteType, "n1", "v1")
	g.nacks[sentKey{refOf(node), resourcev3.RouteType}] = NACK{NodeID: node.Id, Version: "v1"}
	g.attach(sotwStream(2), node) // the reconnect
	// A delta stream with the same ID as the first serves nothing here.
	g.forget(deltaStream(1))
	if streams, sent, nacks := g.size(); streams != 2 || sent != 1 || nacks != 1 {
		t.Fatalf("after a delta stream with the same ID closed: streams %d, sent %d, nacks %d; want 2, 1, 1", streams, sent, nacks)
	}
	g.forget(sotwStream(1))
	if streams, sent, nacks := g.size(); streams != 1 || sent != 1 || nacks != 1 {
		t.Fatalf("after the old stream closed: streams %d, sent %d, nacks %d; want 1, 1, 1", streams, sent, nacks)
	}
	g.forget(sotwStream(2))
	if streams, sent, nacks := g.size(); streams != 0 || sent != 0 || nacks != 0 {
		t.Fatalf("after the last stream closed: streams %d, sent %d, nacks %d; want 0", streams, sent, nacks)
	}
	select {
	case <-changed: // the Gateway stops reporting the NACK
	case <-time.After(time.Second):
		t.Fatal("dropping a NACK did not trigger a status change")
	}
	g.forget(sotwStream(3)) // a stream that never sent a request
}
