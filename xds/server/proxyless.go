package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/translate"
)

// Proxyless gRPC clients.
//
// A gRPC library with an xDS bootstrap (grpc-go, grpc-java, gRPC C-core)
// reads a Gateway's config as Envoy does, with the Gateway's client
// certificate and node.cluster "<namespace>/<name>", but it reads only API
// listeners (translate.APIListeners: one per hostname of the Gateway's HTTP
// and HTTPS route tables), and asks for listeners, route tables and
// clusters by name. It is recognised by its node's user_agent_name, which
// every gRPC implementation sets to "gRPC <language>" ("gRPC Go", "gRPC
// Java", "gRPC C-core", ...); Envoy sends "envoy".
//
// Such a client is served from a snapshot of its own per Gateway, in a cache
// of its own (typeCache.proxyless): its listeners are the API listeners,
// and its route tables, clusters and secrets are the very resources of the
// Gateway's Envoy snapshot (the load assignments come from the Gateway's
// one EDS cache, as Envoy's do). That cache is not an ADS cache: go-control-
// plane's ADS snapshot cache answers a request that names resources only
// when the names cover every resource of the type in the snapshot, and a
// gRPC client names only the listener it dials, the route tables that
// listener uses and the clusters of the one virtual host it matched.
//
// Identity is unchanged: the cache is keyed by node.cluster, which the
// stream callbacks have checked against the stream's client certificate, so
// a gRPC client gets its own Gateway's API listeners and nothing else, and a
// node claiming to be gRPC gets its own Gateway's API listeners instead of
// its Envoy listeners.
//
// API listeners cost nothing until a proxyless client of the Gateway sends
// a request: from then on, while the Gateway is served, every build of the
// Gateway makes them (from the IR, reusing the messages of the last build
// whose name and HttpConnectionManager are unchanged), validates the new
// ones (translate.ValidateAPIListener) and checks that every route table
// they name is in the config, and publishes them with the config they were
// checked against. Envoy's snapshot is the same with or without them.

// proxylessListenersKey is the API listeners' version in a config's
// versions (built.versions, published.versions).
const proxylessListenersKey = "proxyless " + resourcev3.ListenerType

// proxylessState is what a gatewayState keeps for proxyless clients.
type proxylessState struct {
	// serve (s.mu): a proxyless client of the Gateway has sent a
	// request, so each build makes the API listeners.
	serve bool
	// memo (the build lock): the API listeners of the last build, by name.
	memo map[string]apiListener
	// published (s.mu): the API listeners in force.
	published *apiListeners
}

type apiListener struct {
	listener *listenerv3.Listener
	digest   translate.Digest
}

// apiListeners are the checked API listeners of one config, sorted by name.
type apiListeners struct {
	list    []*listenerv3.Listener
	digests []translate.Digest
	version string
	// resources and versionMap index list for the snapshot, made once.
	resources  *cachev3.Resources
	versionMap map[string]string
}

// isProxyless reports whether a node is a gRPC library rather than a proxy:
// gRPC sets user_agent_name to "gRPC Go", "gRPC Java", "gRPC C-core", ....
func isProxyless(userAgent string) bool {
	return strings.HasPrefix(strings.ToLower(userAgent), "grpc")
}

// buildAPIListeners makes gw's API listeners when the Gateway serves
// proxyless clients (nil when it does not), checked against res, the
// config they will be published with: every route table they name must be
// in res. Call with s.build held.
func (s *Server) buildAPIListeners(st *gatewayState, gw *ir.Gateway, res *translate.Resources) (*apiListeners, error) {
	s.mu.Lock()
	serve, prev := st.api.serve, st.api.published
	s.mu.Unlock()
	if !serve {
		return nil, nil
	}
	routes := make(map[string]bool, len(res.Routes))
	for _, r := range res.Routes {
		routes[r.GetName()] = true
	}
	next := map[string]apiListener{}
	for _, g := range translate.APIListenerRoutes(gw) {
		if !routes[g.RouteConfig] {
			return nil, fmt.Errorf("API listeners: route configuration %q not found", g.RouteConfig)
		}
		for _, name := range g.Names {
			if old, ok := st.api.memo[name]; ok && sameAny(old.listener.GetApiListener().GetApiListener(), g.HCM) {
				next[name] = old
				continue
			}
			l := translate.APIListener(name, g.HCM)
			if err := translate.ValidateAPIListener(l, routes); err != nil {
				return nil, fmt.Errorf("API listeners: %w", err)
			}
			d, err := translate.DigestOf(l)
			if err != nil {
				return nil, fmt.Errorf("API listener %s: %w", name, err)
			}
			next[name] = apiListener{listener: l, digest: d}
		}
	}
	st.api.memo = next
	out := &apiListeners{}
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(next)) {
		e := next[name]
		out.list = append(out.list, e.listener)
		out.digests = append(out.digests, e.digest)
		h.Write(e.digest[:])
	}
	out.version = "api-" + hex.EncodeToString(h.Sum(nil))[:16]
	if prev != nil && prev.version == out.version {
		return prev, nil // the same listeners: keep their index
	}
	return out, nil
}

// sameAny: a and b pack the same message, byte for byte.
func sameAny(a, b *anypb.Any) bool {
	return a == b || a.GetTypeUrl() == b.GetTypeUrl() && bytes.Equal(a.GetValue(), b.GetValue())
}

// index makes the snapshot's index of the API listeners (once).
func (a *apiListeners) index() {
	if a.resources != nil {
		return
	}
	items := make([]types.Resource, len(a.list))
	a.versionMap = make(map[string]string, len(a.list))
	for i, l := range a.list {
		items[i] = l
		a.versionMap[l.GetName()] = hex.EncodeToString(a.digests[i][:])
	}
	r := cachev3.NewResources(a.version, items)
	a.resources = &r
}

// routeTables is the route tables that snap holds.
func routeTables(snap *cachev3.Snapshot) map[string]bool {
	out := map[string]bool{}
	for name := range snap.Resources[cachev3.GetResponseType(resourcev3.RouteType)].Items {
		out[name] = true
	}
	return out
}

// keepValid returns the API listeners of a that name a route table of
// tables (a itself when all of them do).
func (a *apiListeners) keepValid(tables map[string]bool) *apiListeners {
	out := &apiListeners{}
	h := sha256.New()
	table := map[*anypb.Any]string{} // the listeners of a route table share its HCM
	for i, l := range a.list {
		hcm := l.GetApiListener().GetApiListener()
		rc, ok := table[hcm]
		if !ok {
			rc = apiRouteTable(hcm)
			table[hcm] = rc
		}
		if !tables[rc] {
			continue
		}
		out.list = append(out.list, l)
		out.digests = append(out.digests, a.digests[i])
		h.Write(a.digests[i][:])
	}
	if len(out.list) == len(a.list) {
		return a
	}
	out.version = "api-" + hex.EncodeToString(h.Sum(nil))[:16]
	return out
}

// apiRouteTable is the route table an API listener's HttpConnectionManager
// names ("" if it cannot be read).
func apiRouteTable(hcm *anypb.Any) string {
	var m hcmv3.HttpConnectionManager
	if hcm.UnmarshalTo(&m) != nil {
		return ""
	}
	return m.GetRds().GetRouteConfigName()
}

// setProxyless publishes the proxyless snapshot of a config whose Envoy
// snapshot is snap: snap's route tables, clusters and secrets with api's
// listeners, or, for a config built without them (phase one of a two-phase
// publish), the API listeners in force that name a route table of snap.
// It records their version in versions. Call with s.mu held, after snap is
// set.
func (s *Server) setProxyless(st *gatewayState, snap *cachev3.Snapshot, versions map[string]string, api *apiListeners) {
	if !st.api.serve {
		return
	}
	if api == nil {
		if st.api.published == nil {
			return
		}
		api = st.api.published.keepValid(routeTables(snap))
	}
	api.index()
	ps := &cachev3.Snapshot{Resources: snap.Resources}
	ps.Resources[cachev3.GetResponseType(resourcev3.ListenerType)] = *api.resources
	if snap.VersionMap != nil {
		ps.VersionMap = maps.Clone(snap.VersionMap)
		ps.VersionMap[resourcev3.ListenerType] = api.versionMap
	}
	if err := s.types.proxyless.SetSnapshot(context.Background(), st.group, ps); err != nil {
		s.log.Error(err, "proxyless snapshot not set", "gateway", st.group)
		return
	}
	st.api.published = api
	versions[proxylessListenersKey] = api.version
}

// serveProxyless starts building API listeners for group, whose proxyless
// client has just sent a request: its Gateway's config is built again now
// (if it was built before). Call with s.mu held.
func (s *Server) serveProxyless(group string) {
	st := s.gateways[group]
	if st == nil || st.api.serve || st.stopped {
		return // not served yet (state() sets serve), or already serving
	}
	st.api.serve = true
	go s.publishProxyless(st)
}

// publishProxyless builds a Gateway's last IR again, now with its API
// listeners.
func (s *Server) publishProxyless(st *gatewayState) {
	s.build.Lock()
	defer s.build.Unlock()
	s.mu.Lock()
	stopped := st.stopped
	s.mu.Unlock()
	if stopped || st.filled == nil {
		return // the first build makes them
	}
	before := s.PublishErrors()
	b, err := s.buildGateway(st, st.filled)
	s.publishBuilt(st, b, err)
	s.reportIfChanged(before)
}

// nackInForce reports whether a NACK of version of typeURL is of the config
// in force, whose versions are versions: the API listeners have their own.
func nackInForce(versions map[string]string, typeURL, version string) bool {
	return versions[typeURL] == version || typeURL == resourcev3.ListenerType && versions[proxylessListenersKey] == version
}
