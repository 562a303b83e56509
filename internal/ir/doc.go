/*
Copyright The shardgate Authors.
*/

// Package ir is the intermediate representation of what one Gateway must
// serve: listeners (one per port), TLS servers, virtual hosts, routes in
// precedence order, clusters (each naming the Service port it sends to, not
// its endpoints: xds/endpoints serves those from EndpointSlices), and TLS
// secrets.
//
// It owns only plain data. It must never import Envoy or protobuf types,
// talk to Kubernetes, or hold maps: every slice is sorted (or ordered by a
// documented rule) so that two IRs built from the same input are
// reflect.DeepEqual and serialise to identical YAML (apart from
// Gateway.Change, which is not serialized). Producers (internal/gatewayapi)
// decide; consumers (xds/) only translate.
//
// An IR is never modified once handed over. What changed from one IR of a
// Gateway to the next is said explicitly, by name (Gateway.Change): the
// producer numbers each IR and lists the virtual hosts and clusters a
// patch added, removed or edited, so that an incremental consumer
// (xds/build) rebuilds those alone. Nothing else is a signal: a consumer
// must not infer a change from which slices or pointers two IRs share.
package ir
