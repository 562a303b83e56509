// Package autotlse2e holds the end-to-end tests of automatic HTTPS
// (GatewayParameters spec.shard.tls) and nothing else: the shardgate
// manager, cert-manager's controller and Pebble (Let's Encrypt's ACME test
// server) all run against one real kube-apiserver (internal/testenv), and
// the tests read what the shard's proxies are served through an
// independent xDS client with the shard's own client certificate
// (internal/xdstest), as an Envoy of the shard would.
//
// They are a package of their own so that the cost of the cert-manager
// harness (Pebble, cert-manager's controller, an ACME account, one real
// issuance per certificate) is paid once, for every case, and by nobody
// else: the controllers suite starts its own harness per Describe and does
// not need cert-manager.
//
// What is not real, and why: no Envoy runs, so nothing can answer an
// HTTP-01 challenge to Pebble; Pebble is started with
// PEBBLE_VA_ALWAYS_VALID (it marks every challenge valid without a
// validation request) and the ClusterIssuer's solver sets
// waitInsteadOfSelfCheck, so cert-manager skips its own reachability
// check. The tests assert instead that the solver's route is what the
// shard serves for the challenge path while it exists. envtest runs no
// garbage collector, so objects cert-manager leaves to it (the solver
// HTTPRoute, owned by its Challenge) stay. shardgate's backoff after a
// failed issuance is seconds here (certificates.backoff), not the
// production hour, so that a failure the local Pebble returns once is
// retried within a spec's wait. A spec that fails writes what
// cert-manager's objects say and the end of its log and Pebble's.
package autotlse2e
