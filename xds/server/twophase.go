package server

import (
	"slices"
	"sort"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/xds/build"
	"github.com/shardgate/shardgate/xds/translate"
)

// Two-phase publish, for Gateways with proxyless gRPC clients.
//
// A proxyless gRPC client builds a balancer only for the clusters its route
// table references, and installs a new route table before that balancer
// exists: an RPC routed to a cluster the table has just introduced fails
// ("unknown cluster selected for RPC"). So when a new config introduces a
// cluster and such clients are connected, phase one publishes the new
// clusters and endpoints with the previous route tables, which reference the
// new clusters only through routes that never match; phase two, the real
// config, follows once every proxyless client of the Gateway has
// acknowledged phase one's route version (or after Options.PhaseTwoTimeout). Envoy
// warms clusters before using them and needs none of this: a Gateway with
// only Envoys connected is published in one step.

// phaseTwoSettle is a short pause after the acknowledgements, for the
// client's balancer update to be applied before the route table that uses
// it (the acknowledgement is sent when the resource is accepted).
const phaseTwoSettle = 5 * time.Millisecond

// Outcomes of a two-phase publish (shardgate_xds_two_phase_publishes_total).
const (
	twoPhaseAcknowledged = "acknowledged"
	twoPhaseTimeout      = "timeout"
)

type pendingPublish struct {
	rdsVersion string // phase one's RouteConfiguration version
	next       *built // phase two: the latest config
}

// streamState is what the server keeps for one open stream.
type streamState struct {
	// identity is the node group named by the stream's client
	// certificate, bound when the stream opened ("" refuses every
	// request).
	identity string
	// group is the node group the stream is served: its identity (a
	// request for any other is refused).
	group     string
	proxyless bool
	ackedRDS  string
	// subs counts the names the stream subscribes to (limits.go); only
	// the stream's own goroutine touches it.
	subs subscriptions
}

// observeRequest records a stream's group, kind of client, and the route
// version it has acknowledged.
func (s *Server) observeRequest(key streamKey, req *discovery.DiscoveryRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[key]
	if st == nil {
		return // closed meanwhile
	}
	if n := req.GetNode(); n != nil {
		st.proxyless = isProxyless(n.GetUserAgentName())
		if st.proxyless {
			s.serveProxyless(st.group)
		}
	}
	if req.GetTypeUrl() == resourcev3.RouteType && req.GetErrorDetail() == nil {
		st.ackedRDS = req.GetVersionInfo()
	}
}

// hasProxyless: call with s.mu held.
func (s *Server) hasProxyless(group string) bool {
	for _, st := range s.streams {
		if st.group == group && st.proxyless {
			return true
		}
	}
	return false
}

// acknowledged: every proxyless stream of group has route version v. Call
// with s.mu held.
func (s *Server) acknowledged(group, v string) bool {
	for _, st := range s.streams {
		if st.group == group && st.proxyless && st.ackedRDS != v {
			return false
		}
	}
	return true
}

// startTwoPhase publishes phase one of b and schedules phase two. Phase one
// is validated like any config before it is published; it reports false
// (publish b in one step) when no virtual host that exists now switches to
// an introduced cluster (a new lease's host is new: no client uses it yet),
// when there is no previous config to build phase one from, or when phase
// one does not pass. Call with s.mu held.
func (s *Server) startTwoPhase(st *gatewayState, b *built) bool {
	if len(b.Introducing) == 0 {
		return false
	}
	prev, err := s.cache.GetSnapshot(st.group)
	if err != nil {
		return false
	}
	one := &translate.Resources{Clusters: slices.Clone(b.Resources.Clusters)}
	for _, r := range sortedResources[*listenerv3.Listener](prev.GetResources(resourcev3.ListenerType)) {
		one.Listeners = append(one.Listeners, r)
	}
	for _, r := range sortedResources[*routev3.RouteConfiguration](prev.GetResources(resourcev3.RouteType)) {
		// The previous route tables; a virtual host that switches to
		// introduced clusters also references them, through routes that
		// never match. The other tables are sent as they were.
		hosts := b.Introducing[r.GetName()]
		if len(hosts) == 0 {
			one.Routes = append(one.Routes, r)
			continue
		}
		decoded, err := translate.DecodeRouteConfiguration(r)
		if err != nil {
			return false
		}
		rc := proto.Clone(decoded).(*routev3.RouteConfiguration)
		for _, vh := range rc.GetVirtualHosts() {
			for _, name := range hosts[vh.GetName()] {
				vh.Routes = append(vh.Routes, translate.RetainedRoute(name))
			}
		}
		one.Routes = append(one.Routes, rc)
	}
	// The previous listeners may still use secrets the new config dropped.
	secrets := map[string]*tlsv3.Secret{}
	for _, r := range sortedResources[*tlsv3.Secret](prev.GetResources(resourcev3.SecretType)) {
		secrets[r.GetName()] = r
	}
	for _, r := range b.Resources.Secrets {
		secrets[r.GetName()] = r
	}
	for _, r := range secrets {
		one.Secrets = append(one.Secrets, r)
	}
	sort.Slice(one.Secrets, func(i, j int) bool { return one.Secrets[i].GetName() < one.Secrets[j].GetName() })
	// The previous route tables may still use clusters the new config
	// dropped (and retention did not keep): keep those too, with their
	// load assignments (setSnapshot removes none in phase one).
	have := map[string]bool{}
	for _, c := range one.Clusters {
		have[c.GetName()] = true
	}
	for _, c := range sortedResources[*clusterv3.Cluster](prev.GetResources(resourcev3.ClusterType)) {
		if !have[c.GetName()] {
			one.Clusters = append(one.Clusters, c)
		}
	}
	sort.Slice(one.Clusters, func(i, j int) bool { return one.Clusters[i].GetName() < one.Clusters[j].GetName() })
	if err := translate.Validate(one); err != nil {
		s.log.Error(err, "phase one of a two-phase publish refused; publishing in one step", "gateway", st.group)
		return false
	}
	phaseOne, err := build.SnapshotOf(one, b.EDS)
	if err != nil {
		return false
	}
	s.setSnapshot(st, phaseOne, nil, true) // the API listeners in force
	st.pending = &pendingPublish{rdsVersion: phaseOne.Versions[resourcev3.RouteType], next: b}
	go s.finishTwoPhase(st, time.Now().Add(s.opts.PhaseTwoTimeout))
	return true
}

// finishTwoPhase publishes phase two once phase one is acknowledged, or at
// deadline.
func (s *Server) finishTwoPhase(st *gatewayState, deadline time.Time) {
	outcome := twoPhaseTimeout
	for {
		s.mu.Lock()
		p := st.pending
		acked := p != nil && s.acknowledged(st.group, p.rdsVersion)
		done := p == nil || acked || time.Now().After(deadline)
		s.mu.Unlock()
		if acked {
			outcome = twoPhaseAcknowledged
		}
		if done {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(phaseTwoSettle)
	s.mu.Lock()
	defer s.mu.Unlock()
	p := st.pending
	if p == nil || st.stopped {
		return
	}
	st.pending = nil
	twoPhasePublishes.WithLabelValues(outcome).Inc()
	s.setSnapshot(st, p.next.Config, p.next.api, false)
}

func sortedResources[T interface{ GetName() string }](m map[string]types.Resource) []T {
	out := make([]T, 0, len(m))
	for _, r := range m {
		if t, ok := r.(T); ok {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}
