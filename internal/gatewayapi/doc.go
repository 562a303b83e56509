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
// It must never talk to Kubernetes, import controller-runtime, read the
// clock, start goroutines, or let map iteration order leak into its output.
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
//   - Listeners sharing a port must share a protocol (HTTP, HTTPS, TLS
//     Terminate, TLS Passthrough); otherwise all of them are Conflicted
//     (ProtocolConflict). Equal hostnames on a port: all HostnameConflict.
//     No winner is picked.
//   - A listener whose certificateRefs do not all resolve is Accepted (routes
//     attach and are counted) but not Programmed, and is left out of the IR.
//   - Listener isolation: each hostname on a port is owned by the most
//     specific listener hostname covering it, and only that listener's
//     routes serve it; every listener hostname gets a virtual host, even an
//     empty one (404), so requests never fall through to a wildcard.
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
//   - A Gateway whose class is not Accepted, whose parametersRef does not
//     resolve, or whose spec.addresses are not IPAddress is not Accepted and
//     gets no IR; its listeners and routes still get status. So is a Gateway
//     the controller refused as a shard (Input.ShardRefusals: a tenant's
//     namespace, or one outside shardNamespaces).
//   - Shards (Input.Ownership, computed by the controller from the hostname
//     engine and the Namespaces): a route's parent entry on a shard is
//     Accepted=False HostnameNotOwned, and serves nothing, unless every
//     hostname it would serve there is one the LeaseHost controlling that
//     generated route holds on that shard, or (routes Owned) is held by the
//     owner of the route's namespace (a wildcard: its whole domain, with no
//     blocked name or other tenant's name below it). Nil Ownership checks
//     nothing.
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
//
// Translate is made of pure functions: compileRoute turns one route into
// IR templates given the Services and ReferenceGrants it names, and
// assembleGateway turns one Gateway and the compilations of its routes into
// its IR and status (patchGateway applies route changes to an assembly).
// The incremental Translator is a layer over them, fed by a Store: the
// event handlers put objects into the Store, which marks at insert time
// exactly the routes and Gateways a change affects (reverse indexes from
// Services, ReferenceGrants, Secrets, Namespaces, Gateways and
// ListenerSets; a ListenerSet, or a Secret, grant or Namespace one reads,
// marks the Gateway it names), and the
// Translator redoes only those. Its memory is keyed by route and Gateway
// names and invalidated by the Store's marks, never by object identity.
package gatewayapi
