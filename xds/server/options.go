package server

import (
	"github.com/envoyproxy/go-control-plane/pkg/server/config"
	"github.com/envoyproxy/go-control-plane/pkg/server/sotw/v3"
)

// sotwOrdered makes state-of-the-world ADS answer in request order, which
// Envoy issues as clusters, endpoints, listeners, routes. go-control-plane
// v0.14 has no such option for delta; delta clients (Envoy included)
// request in the same order, and the snapshot is consistent as a whole.
func sotwOrdered() config.XDSOption { return sotw.WithOrderedADS() }
