package server

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/build"
)

// gatewayState is everything the server keeps for one Gateway (node group).
//
// builder and last belong to the build lock (Server.build); published,
// refused and pending are read by the streams' callbacks too, and are
// guarded by Server.mu.
type gatewayState struct {
	group string
	// builder builds the Gateway's config, publish after publish, at the
	// cost of what changed (xds/build): memory, checks, retention and
	// snapshot assembly are its.
	builder *build.Builder
	// last is the IR last published, built again when a retained cluster
	// expires.
	last *ir.Gateway

	published *published      // the snapshot in force
	refused   string          // why the latest config was refused ("" if it was not)
	pending   *pendingPublish // phase two of a two-phase publish (twophase.go)
	stopped   bool            // the Gateway is no longer served
	api       proxylessState  // API listeners for proxyless clients (proxyless.go)
	// eds is the cluster set last handed to xds/endpoints (served says
	// one was); while edsLeaving, the load assignments of the clusters
	// that left it are still served.
	eds        build.EDSClusters
	edsServed  bool
	edsLeaving bool
}

// built is a config ready to publish: the Builder's, with the API listeners
// checked against it (nil: none served); versions are the Config's, with
// the API listeners' (proxylessListenersKey).
type built struct {
	*build.Config
	api      *apiListeners
	versions map[string]string
}

// published is the config in force, and when it was set; its versions
// have the API listeners in force.
type published struct {
	*build.Config
	versions map[string]string
	at       time.Time
}

// stop ends the state's timers; call with Server.mu held.
func (st *gatewayState) stop() {
	st.stopped = true
	st.pending = nil
	st.builder.Stop()
}

// publishGateway builds gw and sets its snapshot, or records why it cannot.
// Call with s.build held.
func (s *Server) publishGateway(st *gatewayState, gw *ir.Gateway) {
	st.last = gw
	b, err := s.buildGateway(st, gw)
	s.publishBuilt(st, b, err)
}

// buildGateway has the Builder build gw, from the config in force, and
// makes the API listeners proxyless clients read (proxyless.go), checked
// against it. Call with s.build held.
func (s *Server) buildGateway(st *gatewayState, gw *ir.Gateway) (*built, error) {
	s.mu.Lock()
	var prev *build.Config
	if st.published != nil {
		prev = st.published.Config
	}
	s.mu.Unlock()
	c, err := st.builder.Build(gw, prev)
	if err != nil {
		return nil, err
	}
	api, err := s.buildAPIListeners(st, gw, c.Resources)
	if err != nil {
		st.builder.Refused()
		return nil, err
	}
	b := &built{Config: c, api: api, versions: c.Versions}
	if api != nil {
		b.versions = maps.Clone(c.Versions)
		b.versions[proxylessListenersKey] = api.version
	}
	return b, nil
}

// publishBuilt publishes what buildGateway returned, or records why it
// cannot. Call with s.build held.
func (s *Server) publishBuilt(st *gatewayState, b *built, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.stopped {
		return
	}
	if err != nil {
		publishErrors.Inc()
		st.refused = err.Error()
		s.log.Error(err, "config refused; the last good config stays", "gateway", st.group)
		return
	}
	st.refused = ""
	if st.pending != nil {
		// Phase two is waiting for proxyless clients to acknowledge phase
		// one; it will publish this newer config instead.
		st.pending.next = b
		return
	}
	prev := st.published
	if prev != nil && b.Unchanged(prev.Config) && b.versions[proxylessListenersKey] == prev.versions[proxylessListenersKey] {
		return
	}
	if prev != nil && len(b.Introduced) > 0 && s.hasProxyless(st.group) {
		if s.startTwoPhase(st, b) {
			return
		}
	}
	s.setSnapshot(st, b.Config, b.api, false)
}

// setSnapshot publishes c; call with s.mu held. The load assignments are
// xds/endpoints' (its EDS feeds their own cache, eds.go): those of c's new
// and changed clusters go out before the snapshot, whose clusters use them,
// and those of the clusters that left after it, unless keepLeaving (phase
// one of a two-phase publish, which keeps the previous clusters). The
// proxyless snapshot (proxyless.go), with api, follows Envoy's; with no api
// (phase one), the API listeners in force that name its route tables.
func (s *Server) setSnapshot(st *gatewayState, c *build.Config, api *apiListeners, keepLeaving bool) {
	// A config that needs the very load assignments served (by the
	// Builder's number) is not walked again: xds/endpoints keeps them
	// current.
	removeLeaving := func() {}
	if !st.edsServed || st.edsLeaving || !st.eds.SameNumber(c.EDS) {
		removeLeaving = s.eds.Serve(st.group, c.EDS.IR, c.EDS.Retained)
	}
	st.eds, st.edsServed, st.edsLeaving = c.EDS, true, true
	if err := s.cache.SetSnapshot(context.Background(), st.group, c.Snapshot); err != nil {
		st.refused = fmt.Sprintf("set snapshot: %v", err)
		return
	}
	versions := maps.Clone(c.Versions)
	s.setProxyless(st, c.Snapshot, versions, api)
	if !keepLeaving {
		removeLeaving()
		st.edsLeaving = false
	}
	st.published = &published{Config: c, versions: versions, at: time.Now()}
}
