package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	discoveryv1 "k8s.io/api/discovery/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/build"
	"github.com/shardgate/shardgate/xds/endpoints"
)

// Options configure the server.
type Options struct {
	// Address to listen on, e.g. ":18000" or "127.0.0.1:0".
	Address string
	// TLS must require and verify client certificates: a stream's identity
	// is the Gateway its client certificate names, and a stream without
	// one is refused. Nil serves plaintext, where no stream has an
	// identity, so every stream is refused (only Publish and the read
	// methods are of use then).
	TLS *tls.Config
	Log logr.Logger
	// OnOutcome is called (without blocking the caller's locks) when a
	// Gateway's publish outcome changes: a refused config, a NACK, or a
	// recovery. PublishErrors gives the outcomes; the controller hands
	// them to the status writer. No translation is needed for it.
	OnOutcome func()
	// Limits bound the streams of one identity and certificate, the names
	// one stream subscribes to, and a request's size; zero fields take
	// DefaultLimits.
	Limits Limits
	// RetainRemoved is how long a cluster removed from a Gateway's config
	// stays published; zero takes DefaultRetainRemoved, and a negative
	// value retains nothing (a removed cluster goes at once).
	RetainRemoved time.Duration
	// PhaseTwoTimeout bounds the wait for proxyless clients to acknowledge
	// phase one of a two-phase publish (twophase.go); zero takes
	// DefaultPhaseTwoTimeout.
	PhaseTwoTimeout time.Duration
}

// DefaultRetainRemoved and DefaultPhaseTwoTimeout are the defaults of the
// Options fields of the same names.
const (
	DefaultRetainRemoved   = 10 * time.Second
	DefaultPhaseTwoTimeout = time.Second
)

// withDefaults returns o with its zero durations set to their defaults.
func (o Options) withDefaults() Options {
	switch {
	case o.RetainRemoved == 0:
		o.RetainRemoved = DefaultRetainRemoved
	case o.RetainRemoved < 0:
		o.RetainRemoved = 0
	}
	if o.PhaseTwoTimeout <= 0 {
		o.PhaseTwoTimeout = DefaultPhaseTwoTimeout
	}
	return o
}

// Server is the xDS server. Its zero value is not usable; call New.
type Server struct {
	opts  Options
	cache cachev3.SnapshotCache
	// types is the cache under the guard: snapshots, and the load
	// assignments apart (eds.go).
	types *typeCache
	guard *nackGuard
	log   logr.Logger
	// limits are opts.Limits with defaults; limiter counts the open
	// streams of every identity and certificate.
	limits  Limits
	limiter *streamLimiter

	// build serializes building and publishing (Publish, and the
	// re-publish when a retained cluster expires): a Gateway's memory is
	// not safe for concurrent use.
	build sync.Mutex

	mu sync.Mutex
	// gateways: everything kept per Gateway, by node group.
	gateways map[string]*gatewayState
	// streams: every open ADS stream, keyed by its kind and ID (see
	// streamKey), with the identity bound to it at open.
	streams map[streamKey]*streamState
	// proxies: per identity (node group), the open streams bound to it
	// (shardgate_xds_gateway_proxies, metrics.go); no entry at zero.
	proxies map[string]int

	// eds owns the load assignments: it holds every EndpointSlice
	// (UpdateEndpointSlice) and each Gateway's clusters (setSnapshot
	// hands them over), and feeds types' EDS caches.
	eds *endpoints.EDS

	addr    atomic.Pointer[net.Addr]
	serving atomic.Bool
}

// NodeGroup is the node.cluster of a Gateway's proxies.
func NodeGroup(gw k8stypes.NamespacedName) string { return gw.Namespace + "/" + gw.Name }

type clusterHash struct{}

func (clusterHash) ID(n *core.Node) string { return n.GetCluster() }

// New returns a server; Start serves it.
func New(opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{
		opts: opts, log: opts.Log, gateways: map[string]*gatewayState{}, streams: map[streamKey]*streamState{}, proxies: map[string]int{},
	}
	s.limits = opts.Limits.withDefaults()
	s.limiter = newStreamLimiter(s.limits, opts.Log)
	s.types = newTypeCache(cachev3.NewSnapshotCache(true, clusterHash{}, nil))
	s.eds = endpoints.New(s.types)
	s.guard = newNACKGuard(s.types)
	s.guard.onChange = s.outcomeChanged
	s.cache = s.guard
	return s
}

func (s *Server) outcomeChanged() {
	if s.opts.OnOutcome != nil {
		go s.opts.OnOutcome()
	}
}

// Publish takes the IR of every Gateway to serve (a Gateway absent from
// gateways is no longer served), and for each translates, validates and
// sets its snapshot. It implements controllers.Publisher.
func (s *Server) Publish(gateways []*ir.Gateway) {
	s.build.Lock()
	defer s.build.Unlock()
	before := s.PublishErrors()
	live := make(map[string]bool, len(gateways))
	for _, gw := range gateways {
		if gw == nil {
			continue
		}
		group := NodeGroup(k8stypes.NamespacedName{Namespace: gw.Namespace, Name: gw.Name})
		live[group] = true
		s.publishGateway(s.state(group), gw)
	}
	s.mu.Lock()
	for group, st := range s.gateways {
		if !live[group] {
			st.stop()
			delete(s.gateways, group) // a pending phase two must not revive it
			s.eds.Forget(group)
			s.cache.ClearSnapshot(group)
			forgetGatewayProxies(group)
		}
	}
	s.mu.Unlock()
	s.reportIfChanged(before)
}

// UpdateEndpointSlice records an EndpointSlice change (old nil: a new
// slice; obj nil: a deleted one). When it changes the endpoints of a
// Service that some Gateway's clusters send to, xds/endpoints hands that
// Gateway's EDS cache the load assignments that changed, and nothing else
// is built: no Gateway API or cluster translation, no snapshot. The
// controller calls it from the EndpointSlice event handler.
func (s *Server) UpdateEndpointSlice(old, obj *discoveryv1.EndpointSlice) {
	if errChanged := s.eds.Update(old, obj); len(errChanged) > 0 {
		s.outcomeChanged()
	}
}

// reportIfChanged calls OnOutcome when the publish outcomes differ from
// before.
func (s *Server) reportIfChanged(before map[k8stypes.NamespacedName]string) {
	if !maps.Equal(before, s.PublishErrors()) {
		s.outcomeChanged()
	}
}

// republish builds a Gateway's last IR again, when a retained cluster has
// expired or its proxyless client starts asking for API listeners: no
// translation of the Gateway API objects is needed for it. Before the
// Gateway's first build, or once it is stopped, it does nothing (the first
// build makes all).
func (s *Server) republish(st *gatewayState) {
	s.build.Lock()
	defer s.build.Unlock()
	s.mu.Lock()
	stopped := st.stopped
	s.mu.Unlock()
	if stopped || st.last == nil {
		return
	}
	before := s.PublishErrors()
	s.publishGateway(st, st.last)
	s.reportIfChanged(before)
}

// state returns group's state, creating it.
func (s *Server) state(group string) *gatewayState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.gateways[group]
	if st == nil {
		st = &gatewayState{group: group}
		st.builder = build.NewBuilder(build.Options{RetainRemoved: s.opts.RetainRemoved, OnExpire: func() { s.republish(st) }})
		st.api.serve = s.hasProxyless(group) // a proxyless client came first
		s.gateways[group] = st
		s.exportGatewayProxies(group)
	}
	return st
}

// PublishErrors returns, per Gateway, why its current config is not in
// force: refused before publishing, or NACKed by a proxy at the version now
// published. The status writer reports it as the Gateway's Programmed
// condition.
func (s *Server) PublishErrors() map[k8stypes.NamespacedName]string {
	out := map[k8stypes.NamespacedName]string{}
	s.mu.Lock()
	current := map[string]map[string]string{}
	for group, st := range s.gateways {
		refused := st.refused
		if refused == "" {
			if err := s.eds.Err(group); err != "" {
				refused = "validate: " + err
			}
		}
		if refused != "" {
			if nn, ok := parseGroup(group); ok {
				out[nn] = RefusedPrefix + refused
			}
		}
		if st.published != nil {
			current[group] = st.published.versions
		}
	}
	s.mu.Unlock()
	nacks := s.guard.NACKs()
	sort.Slice(nacks, func(i, j int) bool { return nacks[i].NodeID < nacks[j].NodeID })
	for _, n := range nacks {
		versions := current[n.NodeCluster]
		if n.TypeURL == resourcev3.EndpointType {
			v, _ := s.types.edsVersion(n.NodeCluster)
			versions = map[string]string{resourcev3.EndpointType: v}
		}
		if !versionInForce(versions, n.TypeURL, n.Version) {
			continue // superseded
		}
		nn, ok := parseGroup(n.NodeCluster)
		if !ok {
			continue
		}
		if _, already := out[nn]; !already {
			out[nn] = fmt.Sprintf("proxy %s rejected %s version %s: %s", n.NodeID, shortType(n.TypeURL), n.Version, n.Message)
		}
	}
	return out
}

// NACKs returns every recorded rejection.
func (s *Server) NACKs() []NACK { return s.guard.NACKs() }

// Resends is how many responses repeated a version their proxy had NACKed.
func (s *Server) Resends() int { return s.guard.Resends() }

// Snapshot returns the published snapshot of a Gateway, for debugging.
func (s *Server) Snapshot(gw k8stypes.NamespacedName) (cachev3.ResourceSnapshot, error) {
	return s.cache.GetSnapshot(NodeGroup(gw))
}

// ProxylessSnapshot returns the snapshot a Gateway's proxyless gRPC clients
// read (its API listeners with the config of Snapshot), for debugging; a
// Gateway has one once such a client has asked for its config.
func (s *Server) ProxylessSnapshot(gw k8stypes.NamespacedName) (cachev3.ResourceSnapshot, error) {
	return s.types.proxylessSnapshot(NodeGroup(gw))
}

func parseGroup(group string) (k8stypes.NamespacedName, bool) {
	ns, name, ok := strings.Cut(group, "/")
	return k8stypes.NamespacedName{Namespace: ns, Name: name}, ok && ns != "" && name != ""
}

func shortType(typeURL string) string {
	return typeURL[strings.LastIndex(typeURL, ".")+1:]
}

// Addr is the listening address once Start has bound it.
func (s *Server) Addr() net.Addr {
	if a := s.addr.Load(); a != nil {
		return *a
	}
	return nil
}

// Serving reports whether the gRPC server is accepting connections.
func (s *Server) Serving() bool { return s.serving.Load() }

// NeedLeaderElection: every replica serves xDS.
func (s *Server) NeedLeaderElection() bool { return false }

// Start listens and serves until ctx ends, then stops gracefully (with a
// bound, so that a stuck stream cannot hold shutdown).
func (s *Server) Start(ctx context.Context) error {
	lis, err := net.Listen("tcp", s.opts.Address)
	if err != nil {
		return fmt.Errorf("xds: listen %s: %w", s.opts.Address, err)
	}
	addr := lis.Addr()
	s.addr.Store(&addr)
	gopts := []grpc.ServerOption{
		grpc.MaxConcurrentStreams(100000),
		grpc.MaxRecvMsgSize(s.limits.MaxRequestBytes),
		grpc.StreamInterceptor(s.streamInterceptor),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 5 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
	}
	if s.opts.TLS != nil {
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(s.opts.TLS)))
	}
	g := grpc.NewServer(gopts...)
	xds := serverv3.NewServer(ctx, s.cache, &callbacks{s: s}, sotwOrdered())
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(g, xds)
	errc := make(chan error, 1)
	go func() { errc <- g.Serve(lis) }()
	s.serving.Store(true)
	s.log.Info("xDS server listening", "address", addr.String(), "tls", s.opts.TLS != nil,
		"streamsPerIdentity", s.limits.StreamsPerIdentity, "streamsPerCertificate", s.limits.StreamsPerCertificate,
		"resourceNamesPerStream", s.limits.ResourceNamesPerStream, "maxRequestBytes", s.limits.MaxRequestBytes)
	select {
	case err := <-errc:
		s.serving.Store(false)
		return fmt.Errorf("xds: serve: %w", err)
	case <-ctx.Done():
	}
	s.serving.Store(false)
	stopped := make(chan struct{})
	go func() { g.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		g.Stop()
	}
	return nil
}

func (s *Server) responded(group, typeURL, version string) {
	pushesTotal.WithLabelValues(typeURL).Inc()
	s.mu.Lock()
	var p *published
	if st := s.gateways[group]; st != nil {
		p = st.published
	}
	s.mu.Unlock()
	if typeURL == resourcev3.EndpointType {
		// Load assignments change on their own (xds/endpoints).
		if v, at := s.types.edsVersion(group); p != nil && v == version {
			pushLatency.Observe(time.Since(at).Seconds())
		}
		return
	}
	if p != nil && versionInForce(p.versions, typeURL, version) {
		pushLatency.Observe(time.Since(p.at).Seconds())
	}
}
