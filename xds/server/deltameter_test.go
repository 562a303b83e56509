/*
Copyright The shardgate Authors.
*/

package server

import (
	"maps"
	"slices"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"

	"github.com/shardgate/shardgate/xds/build"
)

// deltaMeterWatch is one type's incremental (delta) watch of a proxy.
type deltaMeterWatch struct {
	sub    stream.Subscription
	out    chan cachev3.DeltaResponse
	names  []string
	nonce  string
	cancel func()
}

// newDeltaChangeMeter is newChangeMeter with the watches a proxy of the
// Gateway opens over its production bootstrap's ADS (DELTA_GRPC): listeners
// and clusters by wildcard, route tables, secrets and load assignments by
// name (as Envoy subscribes to what its listeners and clusters name). A
// change then costs the responses of the resources it changed, plus what
// go-control-plane does per snapshot and watch: it compares every
// subscribed resource's version with the one the proxy has.
func newDeltaChangeMeter(b *testing.B, s *Server, group string) *changeMeter {
	m := &changeMeter{b: b, s: s, group: group, deltas: map[string]*deltaMeterWatch{}}
	snap, err := s.cache.GetSnapshot(group)
	if err != nil {
		b.Fatal(err)
	}
	for _, typ := range build.TypeOrder {
		var names []string
		switch typ {
		case resourcev3.RouteType, resourcev3.SecretType:
			names = slices.Sorted(maps.Keys(snap.GetResources(typ)))
		case resourcev3.EndpointType:
			names = slices.Sorted(maps.Keys(snap.GetResources(resourcev3.ClusterType)))
		}
		m.deltas[typ] = &deltaMeterWatch{sub: stream.NewDeltaSubscription(names, nil, nil, len(names) == 0), names: names}
		m.deltaWatch(typ)
	}
	m.drain(false)
	m.published = s.gateways[group].published
	m.cpu = cpuTime(b)
	return m
}

// deltaWatch opens typ's delta watch again, acknowledging the last
// response.
func (m *changeMeter) deltaWatch(typ string) {
	w := m.deltas[typ]
	w.out = make(chan cachev3.DeltaResponse, 1)
	req := &discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: "bench", Cluster: m.group}, TypeUrl: typ, ResponseNonce: w.nonce}
	if w.nonce == "" {
		req.ResourceNamesSubscribe = w.names
	}
	cancel, err := m.s.cache.CreateDeltaWatch(req, w.sub, w.out)
	if err != nil {
		m.b.Fatal(err)
	}
	w.cancel = cancel
}

// drainDelta takes every delta response the last change triggered,
// marshals it as the server does to send it, and opens the watch again.
func (m *changeMeter) drainDelta(count bool) {
	for _, typ := range build.TypeOrder {
		w := m.deltas[typ]
		var resp cachev3.DeltaResponse
		select {
		case resp = <-w.out:
		default:
			continue
		}
		out, err := resp.GetDeltaDiscoveryResponse()
		if err != nil {
			m.b.Fatal(err)
		}
		w.sub.SetReturnedResources(resp.GetNextVersionMap())
		w.nonce = "n"
		if count {
			for _, r := range out.GetResources() {
				m.response += len(r.GetResource().GetValue())
				m.serialized += len(r.GetResource().GetValue())
			}
			// A wire form's checked bytes are copied, not serialized.
			if raw, ok := resp.(*cachev3.RawDeltaResponse); ok {
				for _, r := range raw.GetRawResources() {
					m.serialized -= len(r.Resource.ProtoReflect().GetUnknown())
				}
			}
		}
		m.deltaWatch(typ)
	}
}
