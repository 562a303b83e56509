// Package sharding decides which shards serve a LeaseHost and under which
// host: shard discovery from Gateways and GatewayParameters, selection of
// LeaseHosts by label and namespace selectors, per-shard host composition
// (spec.subdomain + "." + the shard's domain, the OpenShift Route
// spec.subdomain model), and whether a Gateway has a listener able to carry
// a shard's domain.
//
// It owns the rules about shards (which Gateways are shards, what they
// select, the hosts they serve and their per-shard status); hostname
// ownership (who may hold a host) belongs to internal/hostnames, and the
// LeaseHost controller combines the two.
//
// The package is pure: it never talks to the apiserver, holds no state and
// imports no client or controller-runtime code. Every function takes the
// objects it needs and returns the same answer for the same input, whatever
// the order of the input slices, so controllers can call it from any
// reconcile and tests need no cluster.
package sharding
