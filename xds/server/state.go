package server

// State counts what the server holds for connected clients; every count
// returns to its earlier value when the clients that raised it disconnect.
// Leak tests read it.
type State struct {
	// Streams: open ADS streams the server tracks (identity, two-phase
	// publish), state of the world and delta.
	Streams int
	// Identities: streams bound to the Gateway of their certificate.
	Identities int
	// ProxyIdentities: Gateways with open streams counted for
	// shardgate_xds_gateway_proxies.
	ProxyIdentities int
	// GuardStreams: streams the NACK guard maps to a node.
	GuardStreams int
	// SentRecords: (node, type) pairs whose recent responses are kept.
	SentRecords int
	// NACKRecords: (node, type) pairs with a recorded NACK.
	NACKRecords int
	// Pending: Gateways waiting for phase two of a two-phase publish.
	Pending int
	// Watches: open watches in the snapshot cache and the load
	// assignment caches (state of the world and delta), over every node
	// group.
	Watches int
	// LimitSlots: identities and client certificates holding stream
	// slots (limits.go).
	LimitSlots int
}

// State returns the current counts.
func (s *Server) State() State {
	var st State
	s.mu.Lock()
	st.Streams = len(s.streams)
	st.ProxyIdentities = len(s.proxies)
	for _, g := range s.gateways {
		if g.pending != nil {
			st.Pending++
		}
	}
	for _, ss := range s.streams {
		if ss.identity != "" {
			st.Identities++
		}
	}
	s.mu.Unlock()
	st.GuardStreams, st.SentRecords, st.NACKRecords = s.guard.size()
	for _, group := range s.cache.GetStatusKeys() {
		if info := s.cache.GetStatusInfo(group); info != nil {
			st.Watches += info.GetNumWatches() + info.GetNumDeltaWatches()
		}
	}
	st.Watches += s.types.watches()
	st.LimitSlots = s.limiter.size()
	return st
}
