/*
Copyright The shardgate Authors.
*/

// Package translate turns one Gateway's IR (internal/ir) into Envoy v3
// resources: listeners, route configurations, clusters and secrets. Cluster
// load assignments are not its business: xds/endpoints builds them from
// EndpointSlices, for the clusters (and Service ports) the IR names.
// Translate is a pure function: the same IR always yields the same protos,
// sorted by name within each type, with names derived from the IR objects
// only.
//
// It owns the mapping of IR semantics to Envoy configuration and the checks a
// resource set must pass before it is published (Validate, CheckReferences,
// and the per-resource helpers they are made of). It must never talk to
// Kubernetes or to an xDS server, hold state between calls, or decide
// policy: the IR producer (internal/gatewayapi) decides, this package only
// translates. Nothing in it outlives a call: a Scope is the lookups into one
// IR for the units of one translation, and is dropped with it.
//
// Translate is the composition of per-unit functions, which an incremental
// caller (xds/build, which remembers, validates and versions what it built)
// calls for the units that changed only:
//
//   - Scope.Listener: one IR listener (a port), and RouteTables, the route
//     configurations its filter chains reference; for an HTTPS listener,
//     Scope.HTTPSChain (one TLS server's filter chain) and
//     Scope.HTTPSListener (the listener made of its chains);
//   - Scope.VirtualHost: one virtual host of a route table, and
//     RouteConfigurationShell, a table without its hosts
//     (Scope.RouteConfiguration is a whole table);
//   - Cluster: one IR cluster (its load assignment is xds/endpoints');
//   - Secret: one IR secret.
//
// decode.go reads wire forms (a resource whose checked serialization is
// kept in its unknown fields, as xds/build publishes them) back as ordinary
// messages; Validate decodes them before it checks.
//
// Naming scheme (all names come from the IR, never from pointers):
//
//   - Listener: the IR listener name, "<protocol>-<port>" (e.g. "http-80").
//   - RouteConfiguration: for an HTTP listener, the listener name ("http-80");
//     for an HTTPS listener, one per filter chain (per Gateway listener),
//     "<listener>/<gateway listener name>" (e.g. "https-443/web"). One route
//     table per chain keeps a TLS server's routes from answering requests whose
//     Host differs from the SNI they arrived on (the IR gives such Hosts
//     virtual hosts answering 421), and keeps equal hostnames of two Gateway
//     listeners from colliding in one table.
//   - VirtualHost: the IR virtual host name (its hostname, "*" for any).
//   - Route: the IR route name ("<kind>/<ns>/<name>/rule/<i>/match/<j>").
//   - Cluster: the IR cluster name ("<namespace>/<service>/<port>"), which
//     xds/endpoints gives its ClusterLoadAssignment too.
//   - Secret: the IR secret name ("<namespace>/<name>").
//   - API listener (what proxyless gRPC clients read instead of Envoy's
//     listeners; APIListeners, apilistener.go): for each exact hostname H
//     of the route tables of HTTP listeners and HTTPS TLS servers, "H" (the
//     lowest plain HTTP port serving H, else the first TLS server serving
//     it) and "H:<port>"; none for wildcard hosts and "*". Its
//     api_listener is the HttpConnectionManager of that table's listener.
//   - Filter chain: "<gateway listener name>" (HTTPS; a name a shard serves
//     by automatic HTTPS is the IR TLS server "auto-tls/<host>", its table
//     "https-443/auto-tls/<host>") or the IR TLS route name
//     (TLS passthrough/terminate), or the IR TCP route name (TCP: one
//     chain without a match, a tcp_proxy to the route's weighted clusters;
//     a TCP port without a route has no listener, so connections are
//     refused).
//
// Unresolved backends are routed to InvalidBackendCluster, a name that is
// never published as a cluster: Envoy answers such requests with the route's
// cluster_not_found_response_code (500), and refuses such TCP connections.
// A route with no usable backend at all is a direct 500 response.
//
// Decisions, written down here:
//
//   - A PathPrefix other than "/" becomes two adjacent Envoy routes, path
//     "/foo" and prefix "/foo/", rather than path_separated_prefix, which
//     gRPC's xDS client refuses (it NACKs the whole route table).
//   - Route tables set ignore_port_in_host_matching, so "host:8080" selects
//     the virtual host "host" with no ":*" domain variants, and the Host
//     header sent upstream is left alone.
//   - Every HTTP connection manager installs the CORS filter (optional, so
//     gRPC skips it) before the router; per-route CORS policies are wrapped
//     in an optional FilterConfig for the same reason. A route gaining CORS
//     therefore never changes (and drains) a listener.
//   - Every HTTP connection manager also installs the buffer filter,
//     disabled and optional; a route with MaxRequestBodyBytes enables it with
//     its limit (an optional FilterConfig holding a BufferPerRoute), so only
//     such routes buffer request bodies, and a limit appearing never changes
//     a listener either.
//   - Every retry policy retries connect-failure, refused-stream and reset;
//     reset includes an attempt reaching per_try_timeout (the rule's
//     BackendRequest). A retried rule with a BackendRequest but no Request
//     timeout gets the retry budget as its route timeout: every attempt's
//     per-try timeout plus Envoy's longest backoff before each retry, so
//     Envoy's default 15 s cannot cut the retries short and a stalled
//     response is still bounded.
//   - Retry.IdempotentOnly is retriable_request_headers: a :method other
//     than POST, PATCH or LOCK. Envoy then retries none of those requests,
//     not even after a connection failure.
//   - A redirect port equal to the default port of the resulting scheme is
//     left out of the Location. Without a redirect hostname Envoy keeps the
//     request's Host, so a request that carried a non-default port in Host
//     keeps it in that case.
//   - GRPCRoute rules get no 15 s route timeout: the client's grpc-timeout
//     bounds the call.
//   - A port with nothing to serve (HTTPS without TLS servers, TLS without
//     routes) gets no listener: Envoy refuses a listener without chains.
//   - Route.SessionPersistence is not translated yet.
//   - A cluster with TLS (a BackendTLSPolicy) gets an UpstreamTlsContext:
//     the SNI, the CA bundle inline (or the image's system bundle,
//     SystemCABundle), match_typed_subject_alt_names (the subject alt
//     names, else the SNI as an exact DNS name; a wildcard certificate
//     matches as Envoy matches DNS SANs), ALPN h2 for H2C clusters, and the
//     Gateway's backend client certificate by SDS. A cluster whose policy
//     cannot be honoured (TLS.Invalid) has no transport socket (and
//     xds/endpoints gives it an empty load assignment): requests get 503,
//     never plaintext.
package translate
