// Package server owns shardgate's xDS server: ADS (state of the world and
// delta) over go-control-plane's snapshot cache, one node group per Gateway
// (node.cluster = "<namespace>/<name>").
//
// Before anything is published it passes translate.Validate (every
// resource's ValidateAll plus referential checks); a Gateway whose new
// config fails keeps its last good snapshot and reports the error.
//
// NACK safety: go-control-plane answers a NACK (which carries the last
// accepted version) with the same rejected snapshot at once, in a tight
// loop. The nackGuard wraps the cache so that a NACKed version is never sent
// again to that node; the node waits for a new version. NACKs are counted,
// exported, and reported on the Gateway.
//
// With TLS, a client certificate naming a Gateway (pki.GatewayURI) may only
// ask for that Gateway's config.
//
// It never writes to the apiserver: every replica serves xDS.
package server
