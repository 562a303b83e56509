package server

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/proto"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/translate"
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
	// OnStatusChange is called (without blocking the caller's locks) when a
	// Gateway's publish status changes: a refused config, a NACK, or a
	// recovery. The controller re-translates so the Gateway reports it.
	OnStatusChange func()
	// APIListeners, when set, gives per node group the API listeners that
	// proxyless gRPC clients of the group read (grpc-go's xDS client reads
	// nothing else); the controller leaves it nil. They are validated with
	// the group's translated config, and published as the group's
	// listeners: go-control-plane's ADS cache answers a request that names
	// listeners only when the names cover every listener of the snapshot,
	// and a gRPC client names only its own. Everything else published —
	// routes, clusters, endpoints, secrets — is the translation's own.
	APIListeners func(group string) []*listenerv3.Listener
}

// Server is the xDS server. Its zero value is not usable; call New.
type Server struct {
	opts  Options
	cache cachev3.SnapshotCache
	guard *nackGuard
	log   logr.Logger

	mu        sync.Mutex
	published map[string]*published // node group → last good snapshot
	refused   map[string]string     // node group → why its latest config was refused
	// live and retired clusters per node group: a cluster that leaves a
	// Gateway's config is kept, with its endpoints, for RetainRemoved, so
	// that no proxy sees a route still pointing at a deleted cluster
	// (clusters reach proxies before the routes that stop using them).
	live map[string]map[string]keptCluster
	// liveList is the live cluster messages of the last publish, in order.
	liveList map[string][]*clusterv3.Cluster
	retired  map[string]map[string]keptCluster
	// pending: node groups whose new config waits for proxyless clients to
	// acknowledge phase one of a two-phase publish (twophase.go).
	pending map[string]*pendingPublish
	// streams: every open ADS stream, keyed by its kind and ID (see
	// streamKey), with the identity bound to it at open.
	streams map[streamKey]*streamState
	// checkers remember, per node group, what passed validation, so an
	// unchanged resource is not validated again.
	checkers map[string]*translate.Checker
	memos    map[string]*translate.Memo

	addr    atomic.Pointer[net.Addr]
	serving atomic.Bool
}

// RetainRemoved is how long a removed cluster stays published.
var RetainRemoved = 10 * time.Second

type keptCluster struct {
	cluster   *clusterv3.Cluster
	endpoints *endpointv3.ClusterLoadAssignment
	until     time.Time
}

type published struct {
	versions map[string]string // type URL → version
	snap     *cachev3.Snapshot
	lists    map[string][]types.Resource // type URL → the resources, in order
	at       time.Time
}

// typeOrder is the order resources are listed in a snapshot; with ordered
// ADS, clusters and endpoints reach a proxy before the listeners and routes
// that use them.
var typeOrder = []string{resourcev3.ClusterType, resourcev3.EndpointType, resourcev3.SecretType, resourcev3.ListenerType, resourcev3.RouteType}

// NodeGroup is the node.cluster of a Gateway's proxies.
func NodeGroup(gw k8stypes.NamespacedName) string { return gw.Namespace + "/" + gw.Name }

type clusterHash struct{}

func (clusterHash) ID(n *core.Node) string { return n.GetCluster() }

// New returns a server; Start serves it.
func New(opts Options) *Server {
	s := &Server{opts: opts, log: opts.Log, published: map[string]*published{}, refused: map[string]string{},
		live: map[string]map[string]keptCluster{}, retired: map[string]map[string]keptCluster{}, liveList: map[string][]*clusterv3.Cluster{},
		pending: map[string]*pendingPublish{}, streams: map[streamKey]*streamState{},
		checkers: map[string]*translate.Checker{}, memos: map[string]*translate.Memo{}}
	s.guard = newNACKGuard(cachev3.NewSnapshotCache(true, clusterHash{}, nil))
	s.guard.onChange = s.statusChanged
	s.cache = s.guard
	return s
}

func (s *Server) statusChanged() {
	if s.opts.OnStatusChange != nil {
		go s.opts.OnStatusChange()
	}
}

// Publish translates every Gateway's IR to Envoy resources, validates them
// and sets the snapshots. It implements controllers.Publisher.
func (s *Server) Publish(_ *gatewayapi.Input, out *gatewayapi.Output) {
	before := s.PublishErrors()
	live := map[string]bool{}
	for _, gw := range out.Gateways {
		group := NodeGroup(k8stypes.NamespacedName{Namespace: gw.Namespace, Name: gw.Name})
		live[group] = true
		s.publishGateway(group, gw)
	}
	s.mu.Lock()
	for group := range s.published {
		if !live[group] {
			delete(s.published, group)
			s.cache.ClearSnapshot(group)
		}
	}
	for group := range s.refused {
		if !live[group] {
			delete(s.refused, group)
		}
	}
	for group := range s.live {
		if !live[group] {
			delete(s.live, group)
			delete(s.liveList, group)
			delete(s.retired, group)
			delete(s.pending, group) // a pending phase two must not revive it
		}
	}
	for group := range s.checkers {
		if !live[group] {
			delete(s.checkers, group)
		}
	}
	for group := range s.memos {
		if !live[group] {
			delete(s.memos, group)
		}
	}
	s.mu.Unlock()
	// A refusal, a NACK of what is now published, or a recovery from
	// either changes what the Gateway must report. (The translation this
	// triggers publishes the same versions, so it does not loop.)
	if !equalErrors(before, s.PublishErrors()) {
		s.statusChanged()
	}
}

func equalErrors(a, b map[k8stypes.NamespacedName]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// publishGateway sets one Gateway's snapshot, or records why it cannot.
func (s *Server) publishGateway(group string, gw *ir.Gateway) {
	b, err := s.build(group, gw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		publishErrors.Inc()
		s.refused[group] = err.Error()
		s.log.Error(err, "config refused; the last good config stays", "gateway", group)
		return
	}
	delete(s.refused, group)
	if p := s.pending[group]; p != nil {
		// Phase two is waiting for proxyless clients to acknowledge phase
		// one; it will publish this newer config instead.
		p.next = b
		return
	}
	prev := s.published[group]
	if prev != nil && equalVersions(prev.versions, b.versions) {
		return
	}
	if prev != nil && len(b.introduced) > 0 && s.hasProxyless(group) {
		if s.startTwoPhase(group, b) {
			return
		}
	}
	s.setSnapshot(group, b.snap, b.versions, b.lists)
}

// setSnapshot publishes; call with s.mu held.
func (s *Server) setSnapshot(group string, snap *cachev3.Snapshot, versions map[string]string, lists map[string][]types.Resource) {
	if err := s.cache.SetSnapshot(context.Background(), group, snap); err != nil {
		s.refused[group] = err.Error()
		return
	}
	s.published[group] = &published{versions: versions, snap: snap, lists: lists, at: time.Now()}
}

// keepReferenced adds to every virtual host one route per retained cluster
// that can never match (":method" both present and absent). Proxyless gRPC
// clients build a balancer only for clusters their route table references;
// without the reference, each flip of a route between two backends would
// tear one down and build it again, and RPCs picked in between fail. No
// request can reach a retained cluster through these routes.
func keepReferenced(res *translate.Resources, names []string) {
	if len(names) == 0 {
		return
	}
	for i, rc := range res.Routes {
		// The messages may be shared with earlier translations (see
		// translate.Memo): change copies.
		rc = proto.Clone(rc).(*routev3.RouteConfiguration)
		res.Routes[i] = rc
		for _, vh := range rc.GetVirtualHosts() {
			for _, name := range names {
				vh.Routes = append(vh.Routes, &routev3.Route{
					Name: "shardgate-retained/" + name,
					Match: &routev3.RouteMatch{
						PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"},
						Headers: []*routev3.HeaderMatcher{
							{Name: ":method", HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}},
							{Name: ":method", HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: false}},
						},
					},
					Action: &routev3.Route_Route{Route: &routev3.RouteAction{
						ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: name},
					}},
				})
			}
		}
	}
}

// retain adds to res the clusters (and endpoints) that recently left this
// Gateway's config, and schedules a re-translation for when the first of
// them expires so it is dropped then.
func (s *Server) retain(group string, res *translate.Resources) (introduced []string) {
	s.mu.Lock()
	if len(s.retired[group]) == 0 && slices.Equal(s.liveList[group], res.Clusters) && s.live[group] != nil {
		// The very same cluster messages as last time (translate.Memo
		// shares unchanged ones): nothing was removed or introduced.
		s.mu.Unlock()
		return nil
	}
	s.liveList[group] = slices.Clone(res.Clusters)
	s.mu.Unlock()
	now := time.Now()
	current := map[string]keptCluster{}
	cla := map[string]*endpointv3.ClusterLoadAssignment{}
	for _, e := range res.Endpoints {
		cla[e.GetClusterName()] = e
	}
	for _, c := range res.Clusters {
		current[c.GetName()] = keptCluster{cluster: c, endpoints: cla[c.GetName()]}
	}
	s.mu.Lock()
	retired := s.retired[group]
	if retired == nil {
		retired = map[string]keptCluster{}
	}
	for name, k := range s.live[group] {
		if _, still := current[name]; !still {
			if _, already := retired[name]; !already {
				k.until = now.Add(RetainRemoved)
				retired[name] = k
			}
		}
	}
	var next time.Time
	for name, k := range retired {
		if _, back := current[name]; back || !now.Before(k.until) {
			delete(retired, name)
			continue
		}
		res.Clusters = append(res.Clusters, k.cluster)
		if k.endpoints != nil {
			res.Endpoints = append(res.Endpoints, k.endpoints)
		}
		if next.IsZero() || k.until.Before(next) {
			next = k.until
		}
	}
	if prev, ok := s.live[group]; ok {
		for name := range current {
			if _, known := prev[name]; !known {
				if _, kept := retired[name]; !kept {
					introduced = append(introduced, name)
				}
			}
		}
	}
	s.retired[group] = retired
	s.live[group] = current
	s.mu.Unlock()
	sort.Strings(introduced)
	kept := retiredNames(retired)
	keepReferenced(res, kept)
	sort.Slice(res.Clusters, func(i, j int) bool { return res.Clusters[i].GetName() < res.Clusters[j].GetName() })
	sort.Slice(res.Endpoints, func(i, j int) bool { return res.Endpoints[i].GetClusterName() < res.Endpoints[j].GetClusterName() })
	if !next.IsZero() {
		time.AfterFunc(time.Until(next)+10*time.Millisecond, s.statusChanged)
	}
	return introduced
}

func retiredNames(retired map[string]keptCluster) []string {
	names := make([]string, 0, len(retired))
	for name := range retired {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// memo returns the group's translation memory.
func (s *Server) memo(group string) *translate.Memo {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.memos[group]
	if m == nil {
		m = &translate.Memo{}
		s.memos[group] = m
	}
	return m
}

// checker returns the group's validation memory.
func (s *Server) checker(group string) *translate.Checker {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.checkers[group]
	if c == nil {
		c = &translate.Checker{}
		s.checkers[group] = c
	}
	return c
}

// build translates and validates a Gateway's config and gives each type a
// version that is a hash of its content, so a type whose resources did not
// change keeps its version and is not sent again.
func (s *Server) build(group string, gw *ir.Gateway) (*built, error) {
	res, err := s.memo(group).Translate(gw)
	if err != nil {
		return nil, fmt.Errorf("translate: %w", err)
	}
	var api []*listenerv3.Listener
	if s.opts.APIListeners != nil {
		api = s.opts.APIListeners(group)
	}
	checked := res
	if len(api) > 0 {
		// The translated listeners are checked too; the published
		// ones (the API listeners) are a part of what was checked.
		c := *res
		c.Listeners = append(slices.Clone(res.Listeners), api...)
		checked = &c
	}
	checker := s.checker(group)
	if err := checker.Check(checked); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	if len(api) > 0 {
		c := *res
		c.Listeners = api
		res = &c
	}
	// Retention may replace route configurations (with copies): those
	// have no digest yet and are hashed afresh.
	introduced := s.retain(group, res)
	s.mu.Lock()
	prev := s.published[group]
	s.mu.Unlock()
	snap, versions, lists, err := snapshotOf(res, checker.Digest, prev)
	if err != nil {
		return nil, err
	}
	return &built{snap: snap, versions: versions, lists: lists, res: res, introduced: introduced}, nil
}

// built is a validated config, ready to publish.
type built struct {
	snap       *cachev3.Snapshot
	versions   map[string]string
	lists      map[string][]types.Resource
	res        *translate.Resources
	introduced []string // clusters new to the Gateway's config
}

// snapshotOf turns resources into a snapshot whose per-type versions are
// content hashes.
//
// A type whose version equals prev's keeps prev's resource set (the same
// content), sparing the index go-control-plane builds of it.
//
// A type whose resources are the very same messages, in the same order, as
// prev's keeps its version without hashing them again.
func snapshotOf(res *translate.Resources, digests func(proto.Message) (translate.Digest, bool), prev *published) (*cachev3.Snapshot, map[string]string, map[string][]types.Resource, error) {
	byType := map[string][]types.Resource{}
	for _, l := range res.Listeners {
		byType[resourcev3.ListenerType] = append(byType[resourcev3.ListenerType], l)
	}
	for _, r := range res.Routes {
		byType[resourcev3.RouteType] = append(byType[resourcev3.RouteType], r)
	}
	for _, c := range res.Clusters {
		byType[resourcev3.ClusterType] = append(byType[resourcev3.ClusterType], c)
	}
	for _, e := range res.Endpoints {
		byType[resourcev3.EndpointType] = append(byType[resourcev3.EndpointType], e)
	}
	for _, sec := range res.Secrets {
		byType[resourcev3.SecretType] = append(byType[resourcev3.SecretType], sec)
	}
	snap := &cachev3.Snapshot{}
	versions := map[string]string{}
	for _, typ := range typeOrder {
		i := cachev3.GetResponseType(typ)
		if prev != nil && prev.snap != nil && prev.lists != nil && slices.Equal(prev.lists[typ], byType[typ]) {
			versions[typ] = prev.versions[typ]
			snap.Resources[i] = prev.snap.Resources[i]
			continue
		}
		v, err := contentVersion(byType[typ], digests)
		if err != nil {
			return nil, nil, nil, err
		}
		versions[typ] = v
		if prev != nil && prev.snap != nil && prev.snap.Resources[i].Version == v {
			snap.Resources[i] = prev.snap.Resources[i]
			continue
		}
		snap.Resources[i] = cachev3.NewResources(v, byType[typ])
	}
	// No snap.Consistent(): translate.Validate's referential checks (run
	// above) are a superset of it, and Consistent misses the route
	// references of API listeners, so it refuses configs for proxyless
	// gRPC clients. Retained clusters keep their endpoints with them.
	return snap, versions, byType, nil
}

// contentVersion hashes the digests of items, taken from digests (may be
// nil) where the checker computed them.
func contentVersion(items []types.Resource, digests func(proto.Message) (translate.Digest, bool)) (string, error) {
	h := sha256.New()
	for _, r := range items {
		var d translate.Digest
		ok := false
		if digests != nil {
			d, ok = digests(r)
		}
		if !ok {
			var err error
			if d, err = translate.DigestOf(r); err != nil {
				return "", fmt.Errorf("hash resource: %w", err)
			}
		}
		h.Write(d[:])
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func equalVersions(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// PublishErrors returns, per Gateway, why its current config is not in
// force: refused before publishing, or NACKed by a proxy at the version now
// published. It is the PublishError of gatewayapi.GatewayRuntime.
func (s *Server) PublishErrors() map[k8stypes.NamespacedName]string {
	out := map[k8stypes.NamespacedName]string{}
	s.mu.Lock()
	for group, msg := range s.refused {
		if nn, ok := parseGroup(group); ok {
			out[nn] = RefusedPrefix + msg
		}
	}
	current := map[string]map[string]string{}
	for group, p := range s.published {
		current[group] = p.versions
	}
	s.mu.Unlock()
	nacks := s.guard.NACKs()
	sort.Slice(nacks, func(i, j int) bool { return nacks[i].NodeID < nacks[j].NodeID })
	for _, n := range nacks {
		if current[n.NodeCluster][n.TypeURL] != n.Version {
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
	s.log.Info("xDS server listening", "address", addr.String(), "tls", s.opts.TLS != nil)
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
	p := s.published[group]
	s.mu.Unlock()
	if p != nil && p.versions[typeURL] == version {
		pushLatency.Observe(time.Since(p.at).Seconds())
	}
}
