/*
Copyright The shardgate Authors.
*/

// Package gatewayapi is the pure Gateway API translator: a snapshot of
// Kubernetes objects in (Input), the IR of every Gateway we own plus the
// complete desired status of every GatewayClass, Gateway and Route out
// (Output).
//
// It owns Gateway API semantics: GatewayClass acceptance and supported
// features, listener validation and conflicts, route attachment (parentRef
// resolution, allowedRoutes, hostname intersection), ReferenceGrant checks,
// backend resolution, rule validation, and route precedence.
//
// It must never talk to Kubernetes, import controller-runtime or client-go
// (objects come in as Object, which has client.Object's methods;
// imports_test.go checks every package it links), read the clock, start
// goroutines, or let map iteration order leak into its output.
// It must never panic on any input, however malformed: every malformed
// object gets the spec's condition instead. Translate is a function of its
// Input: the same Input gives reflect.DeepEqual Output.
//
// Status conventions: every condition carries ObservedGeneration = the
// object's metadata.generation. LastTransitionTime is left zero; the status
// writer fills it in, and keeps the previous value when a condition's
// status, reason and message did not change. Route status contains only the
// entries for parentRefs that name a Gateway of one of our GatewayClasses
// (controllerName match); a route that names none of ours is absent from the
// maps, and the writer must leave it alone.
//
// Decisions the spec leaves to the implementation, written down here:
//
//   - Listeners sharing a port must share a protocol (HTTP, HTTPS, TLS);
//     otherwise all of them are Conflicted (ProtocolConflict). TLS listeners
//     of both modes may share a port (TLSRouteModeMixed): the port is one
//     ir.ProtocolTLSMixed listener, and each TLSRoute terminates or passes
//     through according to the listener owning its SNI. Equal hostnames on
//     a port: all HostnameConflict. No winner is picked.
//   - Frontend client certificate validation (spec.tls.frontend) applies to
//     HTTPS listeners only (not TLS Terminate). caCertificateRefs may be
//     core ConfigMaps or Secrets (key ca.crt, PEM certificates); another
//     namespace needs a ReferenceGrant from the Gateway. Some invalid refs:
//     ResolvedRefs=False, served with the valid ones; none valid:
//     Accepted=False NoValidCACertificate, not served. The bundle is the IR
//     Secret "client-ca:<port>" (frontendtls.go).
//   - A listener whose certificateRefs do not all resolve is Accepted (routes
//     attach and are counted) but not Programmed, and is left out of the IR.
//   - Listener isolation: each hostname on a port is owned by the most
//     specific listener hostname covering it, and only that listener's
//     routes serve it; every listener hostname gets a virtual host, even an
//     empty one (404), so requests never fall through to a wildcard.
//   - HTTPS listeners on a port have one route table each (one per TLS
//     server); a Host that SNI would not send to that server (owned by
//     another listener of the port, or outside the listener's hostname)
//     gets a virtual host answering 421 Misdirected Request there
//     (misdirected.go). A listener whose certificates do not resolve is not
//     served and claims no Host.
//   - RegularExpression paths sort between Exact and PathPrefix (see
//     routeLess). Regexes are checked with Go's regexp, not RE2 itself,
//     and refused when their program is too large (maxRegexCost, regex.go),
//     so one route cannot make Envoy refuse the Gateway's configuration.
//   - A route hostname the CRD would refuse ("", "*", "*.*.x", over 253
//     characters, control bytes, a trailing dot) intersects with no
//     listener (validRouteHostname), so it is never served as a catch-all.
//   - An invalid rule (bad regex, unsupported value, incompatible filters)
//     is dropped: Accepted=True with PartiallyInvalid ("Dropped Rule...")
//     when other rules remain, Accepted=False with the rule's reason when
//     none do.
//   - The HTTPRoute annotations of api/v1alpha1 (Annotation*: a request
//     body limit, idempotent-only retries) apply to every rule; a value
//     that cannot be read drops every rule (UnsupportedValue naming the
//     annotation). Relevant reports their changes, which leave
//     metadata.generation alone.
//   - ExtensionRef filters cannot resolve (there are no extensions): the
//     rule answers 500 and ResolvedRefs=False InvalidKind.
//   - Unresolved backendRefs: their weight share answers 500
//     (Route.InvalidWeight); a rule with no usable backend answers 500.
//   - Service appProtocol: unset/http → HTTP/1.1, kubernetes.io/h2c → h2c,
//     kubernetes.io/ws(s) → WebSocket; anything else is UnsupportedProtocol.
//     GRPCRoute backends are always h2c.
//   - An HTTPRoute and a GRPCRoute with intersecting hostnames on one
//     listener: the older is accepted, the other gets Accepted=False
//     HostnameConflict (api/v1alpha1.ReasonRouteHostnameConflict).
//   - One SNI on a TLS port is served by one TLSRoute: the oldest.
//   - TCP listeners (tcproute.go): the hostname is ignored (two TCP
//     listeners on a port are HostnameConflict). A TCP port serves one
//     TCPRoute, the oldest attached (then by namespace/name); every
//     attached one is Accepted and counted in attachedRoutes. Its rules'
//     backends are merged, weighted; the unresolved share is refused. On
//     a shard a TCPRoute is admitted only from a namespace without an
//     owner marking (the provider's), in either routes mode: a tenant's
//     is Accepted=False PortNotOwned (api/v1alpha1.ReasonPortNotOwned).
//   - A Gateway whose class is not Accepted, whose parametersRef does not
//     resolve, or whose spec.addresses are not IPAddress is not Accepted and
//     gets no IR; its listeners and routes still get status. So is a Gateway
//     the controller refused as a shard (Input.ShardRefusals: a tenant's
//     namespace, or one outside shardNamespaces), and any Gateway in a
//     tenant's namespace (Input.TenantNamespaces: Accepted=False
//     GatewayInTenantNamespace). A class whose parametersRef points into a
//     tenant's namespace is Accepted=False InvalidParameters.
//   - Shards (Input.Ownership, computed by the controller from the hostname
//     engine and the Namespaces): a route's parent entry on a shard is
//     Accepted=False HostnameNotOwned, and serves nothing, unless every
//     hostname it would serve there is one the LeaseHost controlling that
//     generated route holds on that shard, or (routes Owned) is held by the
//     owner of the route's namespace (a wildcard: its whole domain, with no
//     blocked name or other tenant's name below it). A generated route
//     lists its LeaseHost's names on every shard (a subdomain composes one
//     per shard): on each shard, the names its LeaseHost holds only on
//     other shards are left out before anything else, so no listener of
//     the shard serves them (a listener without hostname would match them
//     all) and they never refuse the route there. Nil Ownership checks
//     nothing.
//   - Tenant limits on shards (Input.TenantLimits, tenantlimits.go): each
//     tenant (the owner of a route's namespace, or the namespace when
//     unmarked) may have at most so many routes, rules, matches and
//     regular expressions naming a shard; on a Generated shard only its
//     generated routes count. Its routes are admitted oldest first
//     (creationTimestamp, then UID), each if it fits with the older ones
//     admitted; the others get Accepted=False TenantLimitExceeded naming
//     the limit, and serve nothing. One tenant's routes never change
//     another's admission. A patch accounts the changed routes' tenants
//     again and attaches again every route whose admission that changed;
//     a namespace changing owners marks its routes.
//   - BackendTLSPolicy: a policy selects Services of its own namespace
//     (targetRefs have no namespace) and reads ConfigMaps of its own
//     namespace only. For each Service port the policy naming the port
//     wins over one naming the whole Service; among policies naming the
//     same target the older wins (creationTimestamp, then namespace/name),
//     the others are Conflicted. Only the winner's TLS applies. A policy
//     with no valid CA certificate (NoValidCACertificate), an unknown
//     wellKnownCACertificates value, an invalid hostname or subject alt
//     name, or any options (none is supported) is Accepted=False and its
//     Service ports get Cluster.TLS.Invalid: connections fail, never
//     plaintext. Some invalid caCertificateRefs among valid ones:
//     ResolvedRefs=False, Accepted=True, only the valid CAs are trusted.
//     Status has one ancestor per Gateway of ours whose IR has a cluster
//     the policy selects (at most 16), with Accepted and ResolvedRefs.
//   - Gateway spec.tls.backend.clientCertificateRef: a TLS Secret (another
//     namespace's needs a ReferenceGrant) presented to every TLS backend
//     of the Gateway; the Gateway gets a ResolvedRefs condition only when
//     it names one (False: InvalidClientCertificateRef or RefNotPermitted,
//     and nothing is presented), and stays Accepted either way.
//   - ListenerSets (listenersets.go): a ListenerSet joins the Gateway its
//     parentRef names when the Gateway's allowedListeners admits its
//     namespace (None by default); otherwise it is Accepted=False
//     NotAllowed and adds nothing. Its listeners come after the Gateway's,
//     ListenerSets oldest first then by namespace/name. Unlike the
//     Gateway's own listeners (where no winner is picked), a ListenerSet
//     listener that shares a port with an earlier listener of another
//     protocol (unsupported ones included), or its port and hostname, is
//     Conflicted and the earlier one stays; conflict messages name no
//     other listener. A ListenerSet listener must use a port of the
//     Gateway's own listeners (the Envoy Service exposes only those):
//     otherwise Accepted=False PortUnavailable. certificateRefs resolve in
//     the ListenerSet's namespace, ReferenceGrants from kind ListenerSet;
//     allowedRoutes "Same" is the ListenerSet's namespace. A route's
//     parentRef of kind ListenerSet attaches to that ListenerSet's
//     listeners only, one to the Gateway to the Gateway's own only. A
//     ListenerSet is Accepted when one of its listeners is served
//     (accepted, references resolved); the Gateway counts those in
//     attachedListenerSets (set whenever allowedListeners admits any
//     namespace). In the IR a ListenerSet listener is named
//     "<namespace>/<ListenerSet>/<listener>". A Gateway with ListenerSets
//     is never patched, always assembled in full.
//   - ListenerSets on shards: a ListenerSet listener's hostname is admitted
//     only when the owner of the ListenerSet's namespace holds it (a
//     wildcard: its domain, with no blocked name or other owner's name
//     below it), and it is not blocked; a listener without hostname never
//     is. Otherwise it is Accepted=False HostnameNotOwned and serves
//     nothing. Routes on an admitted listener still pass the route rule.
//   - Automatic HTTPS on shards (GatewayParameters spec.shard.tls,
//     autotls.go): each name a generated route holds on the shard
//     (Ownership.Generated), lists, and that is not the shard's domain or
//     under it, is served on port 443 by an internal HTTPS listener of its
//     own ("auto-tls/<host>", SNI the name) once the Secret
//     autotls.SecretName(host) in the route's namespace is a valid TLS
//     Secret whose certificate lists exactly that name (a wildcard does
//     not count). These listeners take part in route attachment, listener
//     isolation, misdirected requests and the IR, but never in the
//     Gateway's status, take only routes a listener of the Gateway
//     allows (kind and namespace), and get no spec.tls.frontend client
//     validation. They join an HTTPS listener on 443, or make the
//     port; a listener of another protocol on 443 means none is made, and
//     a name an HTTPS listener on 443 has as its hostname is left to it.
//     Two generated routes holding one name: the first by route key wins.
//     With redirectHTTP, each such name's virtual host on the HTTP ports
//     keeps its routes under /.well-known/acme-challenge/ and redirects
//     everything else (301) to https. An HTTPRoute of the shape of an
//     ACME HTTP-01 solver route (hostnames, every match an Exact or
//     PathPrefix path under /.well-known/acme-challenge/, no filters) is
//     admitted on a shard, in either routes mode, when every hostname is
//     held on it by a generated route of its own namespace. A Secret of
//     that name changing marks every Gateway with spec.shard.tls; a
//     change of a route's Generated entry marks the solver-shaped routes
//     of its namespace; a patch that would add or remove a per-name
//     listener assembles the Gateway in full instead.
//
// Translate is made of pure functions: compileRoute turns one route into
// IR templates given the Services and ReferenceGrants it names (one
// descriptor per route kind, routekinds.go, holds all that differs
// between kinds; HTTPRoute and GRPCRoute rules share one compiler, as do
// TLSRoute and TCPRoute rules), and
// assembleGateway turns one Gateway and the compilations of its routes into
// its IR and status (patchGateway applies route changes to an assembly).
// The incremental Translator is a layer over them, fed by a Store: the
// event handlers put objects into the Store, which marks at insert time
// exactly the routes and Gateways a change affects (reverse indexes from
// Services, ReferenceGrants, Secrets, Namespaces, Gateways and
// ListenerSets; a ListenerSet, or a Secret, grant or Namespace one reads,
// marks the Gateway it names; a BackendTLSPolicy, or a ConfigMap one
// names, marks the clusters of the Services it selects and its
// resolution), and the
// Translator redoes only those. Its memory is keyed by route and Gateway
// names and invalidated by the Store's marks, never by object identity.
//
// Every IR it hands over carries an ir.Change: a number of its own, and for
// a patch the number of the Gateway's IR before it with the virtual hosts
// and clusters the patch added, removed or edited (patchIR). That is how
// the xDS side learns what changed; the IR's slices and pointers say
// nothing. An IR handed over again unchanged keeps its number.
package gatewayapi
