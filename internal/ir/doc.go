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
// reflect.DeepEqual and serialise to identical YAML. Producers
// (internal/gatewayapi) decide; consumers (xds/) only translate.
package ir
