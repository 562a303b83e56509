// Package controllers holds the reconcilers. Each reads objects from the
// informer cache (or the apiserver, where a cached read could be stale),
// calls the packages that own the rules, and writes their results:
//
//   - GatewayAPIReconciler translates the Gateway API snapshot on every
//     replica: internal/gatewayapi translates, leasehosts.Facts gives the
//     ownership facts (akash.Claims the ProviderHosts' claims among them),
//     internal/translatelimit says when a translation may start, the
//     status writer and the xDS publisher take the results.
//   - LeaseHostReconciler and ProviderHostReconciler admit names through
//     the one hostname engine (internal/hostnames) with the claim logic
//     they share (leasehosts.Claims, with a leasehosts.Kind for each), and
//     write the generated HTTPRoutes and the LeaseHost status
//     (internal/leasehosts) or the ProviderHost Events and Akash-shaped
//     routes (internal/akash).
//   - LeasedIPReconciler and ProviderLeasedIPReconciler write the
//     LoadBalancer Services of leased IPs (internal/addresses,
//     internal/akash), InfraReconciler the Envoy objects of each Gateway
//     (internal/infra), GatewayParametersReconciler whether a shard's
//     parameters are valid (sharding); GatewayRuntimeSource reads the
//     Envoy Services' addresses back, and AkashAPI serves the Akash
//     operators' HTTP API from the cache.
//   - CertificateReconciler (automatic HTTPS) receives each translation's
//     ownership facts and shards, and writes and deletes the cert-manager
//     Certificates (and revoked names' Secrets) that internal/autotls
//     decides, paced by its Pacer; the LeaseHost controller reports its
//     per-name state as CertificateReady.
//
// State kept here is what a controller needs between reconciles: its
// work queue hand-over, the Events already emitted, the handoff of
// names between LeaseHosts (a name that moves is served by its new holder
// before the old holder's route drops it), and the certificate
// controller's pacer and per-name states (rebuilt from the Certificates
// at start).
package controllers
