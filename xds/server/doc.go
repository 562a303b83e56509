// Package server owns shardgate's xDS server: ADS (state of the world and
// delta) over go-control-plane's snapshot cache, one node group per Gateway
// (node.cluster = "<namespace>/<name>"). Load assignments are served apart,
// from a cache per node group that answers as go-control-plane's
// LinearCache does (eds.go, assignments.go): an endpoint change sends the
// load assignments that changed, not all of them. That cache is fed by
// xds/endpoints, which owns EDS: UpdateEndpointSlice hands it EndpointSlice
// changes (it pushes the changed load assignments itself, with no
// translation or snapshot), and each publish hands it the Gateway's
// clusters (with the retained ones) before the snapshot that uses them, and
// lets it remove the load assignments of the clusters that left after.
//
// It takes IR per Gateway (internal/ir) and never the Gateway API objects:
// it must not import internal/gatewayapi. Everything it keeps for a Gateway
// lives in one gatewayState (gateway.go), but the clusters' load assignments,
// which xds/endpoints builds and the EDS cache keeps, serialized (the
// serialization is what is sent; the message goes once serialized).
//
// It only serves: streams, identity, limits, the NACK guard, two-phase
// publish, outcomes and the EDS cache. What to publish is built by
// xds/build: each Gateway has a build.Builder, which translates what the
// IR's change names, keeps removed clusters for Options.RetainRemoved,
// validates, and assembles the snapshot; the server publishes the Config
// it returns as it is, with the API listeners of proxyless clients
// (proxyless.go), made and checked against that Config in buildGateway.
//
// Publish what was checked: retained clusters, the never-matching routes that
// reference them, and phase one of a two-phase publish are all part of the
// config before it is validated (every resource's ValidateAll plus
// referential checks), so the messages published are the messages checked.
// A Gateway whose new config fails keeps its last good snapshot. (Load
// assignments are validated by xds/endpoints; one that fails is not served,
// and the Gateway reports it the same way.)
//
// Publish outcomes (a refused config, a NACK, a recovery) are reported
// through Options.OnOutcome and PublishErrors, which the controller hands to
// the status writer: an outcome never costs a translation.
//
// NACK safety: go-control-plane answers a NACK (which carries the last
// accepted version) with the same rejected snapshot at once, in a tight
// loop. The nackGuard wraps the cache so that a NACKed version is never sent
// again to that node; the node waits for a new version. NACKs are counted,
// exported, and reported on the Gateway.
//
// Identity (identity.go): each stream is bound, when it opens, to the Gateway
// its own verified client certificate names (pki.GatewayURI), and may only
// ask for that Gateway's config; a stream whose certificate names no Gateway
// is refused. Per-stream state is keyed by the stream's kind and ID, because
// go-control-plane numbers state-of-the-world and delta streams separately.
// It must never key anything by the stream ID alone, nor trust node.cluster
// or node.id for anything but the stream's own Gateway.
//
// Limits (limits.go): a tenant holds its Gateway's client certificate and may
// open any stream it allows, so what one client can make the server hold is
// bounded: concurrent streams per identity and per certificate (a gRPC
// stream interceptor refuses the extra ones with ResourceExhausted before
// go-control-plane sees them), subscribed names per stream (a request that
// would pass the bound ends its stream before its names are kept), and the
// request size (gRPC's MaxRecvMsgSize). Refusals are counted by reason and
// logged at most once a minute per client and reason.
//
// Credentials (tls.go, tlsfiles.go): the server's certificate and the
// client CAs it trusts live in a holder every handshake reads, so a
// rotation applies to new connections and never drops an open one. The
// holder is loaded from the controller's own CA (renewed at two thirds of
// the certificate's life) or from the xds.tls files, which are watched
// (controller-runtime's certwatcher for the certificate and key, fsnotify
// for the CA bundle) and re-read periodically.
//
// Proxyless gRPC clients (proxyless.go): a stream whose node's
// user_agent_name starts with "gRPC" is a gRPC library, bound to its
// Gateway like an Envoy, and is served from a second snapshot per Gateway,
// in a cache of its own that answers requests by name (go-control-plane's
// ADS cache answers a request only when its names cover every resource of
// the type): the Gateway's API listeners (translate.APIListeners), built
// and checked with each config once such a client has asked, with the route
// tables, clusters and secrets of the Gateway's Envoy snapshot, which stays
// the same with or without them. Two-phase publish (twophase.go) waits for
// these clients' acknowledgements.
//
// Streams per Gateway (metrics.go): shardgate_xds_gateway_proxies counts the
// open streams bound to each Gateway the server serves, proxyless gRPC
// clients' included, from 0 when the Gateway is first published until it is
// no longer served. Only identities of served Gateways get a series, so a
// client presenting certificates of other Gateways cannot grow the number
// of series.
//
// It never writes to the apiserver: every replica serves xDS.
package server
