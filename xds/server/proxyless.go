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
	// hcm, digest and last belong to the build lock: the
	// HttpConnectionManager of each route table the last API listeners
	// made name; translate.APIListenerDigest of the IR they were made
	// from, and what was made.
	hcm    map[string]*anypb.Any
	digest translate.Digest
	last   *apiListeners
	// published (s.mu): the API listeners in force.
	published *apiListeners
}

// apiListeners are the checked API listeners of one config, sorted by name.
type apiListeners struct {
	list    []*listenerv3.Listener
	digests []translate.Digest
	version string
	tables  []string // the route tables they name
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
//
// An IR whose API listeners are made of the same things as the last one's
// (translate.APIListenerDigest: the tables, ports and host names) keeps the
// last ones, so a route change costs a hash of the host names. Otherwise
// the listeners whose name and HttpConnectionManager are unchanged are
// reused, and only new ones are made, validated and hashed.
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
	digest := translate.APIListenerDigest(gw)
	if st.api.last != nil && st.api.digest == digest {
		for _, rc := range st.api.last.tables {
			if !routes[rc] {
				return nil, fmt.Errorf("API listeners: route configuration %q not found", rc)
			}
		}
		return st.api.last, nil
	}
	groups := translate.APIListenerRoutes(gw)
	n := 0
	for _, g := range groups {
		n += len(g.Names)
	}
	type wanted struct {
		name string
		hcm  *anypb.Any
	}
	ws := make([]wanted, 0, n)
	out := &apiListeners{}
	hcms := make(map[string]*anypb.Any, len(groups))
	for _, g := range groups {
		if !routes[g.RouteConfig] {
			return nil, fmt.Errorf("API listeners: route configuration %q not found", g.RouteConfig)
		}
		out.tables = append(out.tables, g.RouteConfig)
		// The listeners of a table share its HttpConnectionManager: the
		// last one, when its bytes are the same, so that an unchanged
		// listener is found by a pointer comparison.
		hcm := g.HCM
		if old := st.api.hcm[g.RouteConfig]; old != nil && sameAny(old, hcm) {
			hcm = old
		}
		hcms[g.RouteConfig] = hcm
		for _, name := range g.Names {
			ws = append(ws, wanted{name, hcm})
		}
	}
	if len(groups) > 1 {
		slices.SortFunc(ws, func(a, b wanted) int { return strings.Compare(a.name, b.name) })
	}
	slices.Sort(out.tables)
	// A walk of the last listeners made and these, both sorted by name:
	// an unchanged listener is the last one's message, with its digest.
	var old []*listenerv3.Listener
	var oldDigests []translate.Digest
	if st.api.last != nil {
		old, oldDigests = st.api.last.list, st.api.last.digests
	}
	out.list = make([]*listenerv3.Listener, 0, len(ws))
	out.digests = make([]translate.Digest, 0, len(ws))
	i := 0
	for _, w := range ws {
		for i < len(old) && old[i].GetName() < w.name {
			i++
		}
		if i < len(old) && old[i].GetName() == w.name && old[i].GetApiListener().GetApiListener() == w.hcm {
			out.list, out.digests = append(out.list, old[i]), append(out.digests, oldDigests[i])
			i++
			continue
		}
		l := translate.APIListener(w.name, w.hcm)
		if err := translate.ValidateAPIListener(l, routes); err != nil {
			return nil, fmt.Errorf("API listeners: %w", err)
		}
		d, err := translate.DigestOf(l)
		if err != nil {
			return nil, fmt.Errorf("API listener %s: %w", w.name, err)
		}
		out.list, out.digests = append(out.list, l), append(out.digests, d)
	}
	st.api.hcm = hcms
	h := sha256.New()
	for i := range out.digests {
		h.Write(out.digests[i][:])
	}
	out.version = "api-" + hex.EncodeToString(h.Sum(nil))[:16]
	if prev != nil && prev.version == out.version {
		out = prev // the same listeners: keep their index
	}
	st.api.digest, st.api.last = digest, out
	return out, nil
}

// sameAny: a and b pack the same message, byte for byte.
func sameAny(a, b *anypb.Any) bool {
	return a == b || a.GetTypeUrl() == b.GetTypeUrl() && bytes.Equal(a.GetValue(), b.GetValue())
}

// index makes the snapshot's index of the API listeners (once): from
// prev's, when prev has one, changing only the entries of listeners that
// are not prev's very messages (both lists are sorted by name).
func (a *apiListeners) index(prev *apiListeners) {
	if a.resources != nil {
		return
	}
	var items map[string]types.ResourceWithTTL
	if prev != nil && prev.resources != nil {
		items, a.versionMap = maps.Clone(prev.resources.Items), maps.Clone(prev.versionMap)
		i, j := 0, 0
		for i < len(prev.list) || j < len(a.list) {
			switch {
			case i < len(prev.list) && j < len(a.list) && prev.list[i] == a.list[j]:
				i++
				j++
			case j == len(a.list) || i < len(prev.list) && prev.list[i].GetName() < a.list[j].GetName():
				delete(items, prev.list[i].GetName())
				delete(a.versionMap, prev.list[i].GetName())
				i++
			default:
				if i < len(prev.list) && prev.list[i].GetName() == a.list[j].GetName() {
					i++
				}
				items[a.list[j].GetName()] = types.ResourceWithTTL{Resource: a.list[j]}
				a.versionMap[a.list[j].GetName()] = hex.EncodeToString(a.digests[j][:])
				j++
			}
		}
	} else {
		items = make(map[string]types.ResourceWithTTL, len(a.list))
		a.versionMap = make(map[string]string, len(a.list))
		for i, l := range a.list {
			items[l.GetName()] = types.ResourceWithTTL{Resource: l}
			a.versionMap[l.GetName()] = hex.EncodeToString(a.digests[i][:])
		}
	}
	a.resources = &cachev3.Resources{Version: a.version, Items: items}
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
		if !slices.Contains(out.tables, rc) {
			out.tables = append(out.tables, rc)
		}
		out.list = append(out.list, l)
		out.digests = append(out.digests, a.digests[i])
		h.Write(a.digests[i][:])
	}
	if len(out.list) == len(a.list) {
		return a
	}
	slices.Sort(out.tables)
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
	api.index(st.api.published)
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
	go s.republish(st) // now with its API listeners
}

// versionInForce reports whether version of typeURL is of the config in
// force, whose versions are versions: the API listeners have their own.
// (A NACK of another version was superseded.)
func versionInForce(versions map[string]string, typeURL, version string) bool {
	return versions[typeURL] == version || typeURL == resourcev3.ListenerType && versions[proxylessListenersKey] == version
}
