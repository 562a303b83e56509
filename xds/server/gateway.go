package server

import (
	"context"
	"fmt"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

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
}

// published is the config in force, and when it was set.
type published struct {
	*build.Config
	at time.Time
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
	// The config in force, which the new one is versioned and indexed
	// from.
	s.mu.Lock()
	var prev *build.Config
	if st.published != nil {
		prev = st.published.Config
	}
	s.mu.Unlock()
	// The API listeners proxyless gRPC clients read (Options.APIListeners):
	// checked with the config, and published as its listeners.
	var api []*listenerv3.Listener
	if s.opts.APIListeners != nil {
		api = s.opts.APIListeners(st.group)
	}
	b, err := st.builder.Build(gw, prev, api)
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
	// The config in force now (phase two of a two-phase publish may have
	// set it meanwhile).
	prev = nil
	if st.published != nil {
		prev = st.published.Config
	}
	if b.Unchanged(prev) {
		return
	}
	if prev != nil && len(b.Introduced) > 0 && s.hasProxyless(st.group) {
		if s.startTwoPhase(st, b) {
			return
		}
	}
	s.setSnapshot(st, b, false)
}

// setSnapshot publishes c; call with s.mu held. The load assignments are
// xds/endpoints' (its EDS feeds their own cache, eds.go): those of c's new
// and changed clusters go out before the snapshot, whose clusters use them,
// and those of the clusters that left after it, unless keepLeaving (phase
// one of a two-phase publish, which keeps the previous clusters).
func (s *Server) setSnapshot(st *gatewayState, c *build.Config, keepLeaving bool) {
	removeLeaving := s.eds.Serve(st.group, c.EDS.IR, c.EDS.Retained)
	if err := s.cache.SetSnapshot(context.Background(), st.group, c.Snapshot); err != nil {
		st.refused = fmt.Sprintf("set snapshot: %v", err)
		return
	}
	if !keepLeaving {
		removeLeaving()
	}
	st.published = &published{Config: c, at: time.Now()}
}
