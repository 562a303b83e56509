/*
Copyright The shardgate Authors.
*/

// Package endpoints owns EDS: it turns EndpointSlices into the
// ClusterLoadAssignments each Gateway's proxies are served, in two hops
// (slices to a table of ready endpoints per Service port, then load
// assignments), with no Gateway API or cluster translation in between.
//
// A Table holds every EndpointSlice, fed straight by the EndpointSlice
// event handler. An EDS holds, per Gateway (xDS node group), the clusters
// it serves and what each one's load assignment is made of (Cluster: the
// Service port it sends to, and whether it must have no endpoint because
// its BackendTLSPolicy cannot be honoured), with the endpoints each one's
// current load assignment lists, and an index of those clusters by
// Service. It hands load assignments to a Sink (the xDS server's EDS
// cache), which holds them (EDS does not keep a copy):
//
//   - Serve, when a Gateway's config is published: the load assignments of
//     the new or changed clusters go to the sink at once, before the caller
//     publishes the clusters that use them; the returned function, called
//     after, removes those of the clusters that left.
//   - Update, on an EndpointSlice change: only the load assignments that
//     change, of the Gateways whose clusters send to that Service, go to
//     the sink.
//
// Every load assignment passes go-control-plane's ValidateAll before it is
// handed over. One that does not (an endpoint address Envoy would refuse)
// is not: the cluster keeps its last good load assignment (an empty one if
// it never had one), and Err reports why, until a valid one replaces it or
// the cluster leaves.
//
// Load assignments (Assignment) list the ready endpoints (and those of
// unknown readiness) of the cluster's Service port, sorted, in one locality
// with an empty identity and weight 1; a cluster with none gets an empty
// load assignment, so that Envoy finishes warming it and answers 503.
//
// It holds state (the table, the clusters served and the endpoints of
// their load assignments) and is safe for concurrent use. It imports internal/ir for
// the cluster and Service port types only, and never the Gateway API
// translation or the xDS server.
package endpoints
