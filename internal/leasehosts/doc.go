// Package leasehosts owns what a LeaseHost produces, as pure functions: the
// names it claims (one per selected shard, or its one explicit hostname), the
// HTTPRoute generated for the names it holds, and its status (with each
// tls shard's CertificateReady, from the certificate controller's state); the
// namespace-owner rule (PlanIn, NamespaceOwnerRefusal), its claims in the
// hostname engine (Claimants), and the translator's ownership facts
// (Ownership), which run the engine over every LeaseHost.
//
// Two types keep state between changes, in memory and keyed by UID and
// name. Tracker keeps the ownership facts up to date at the cost of what
// changed, and Facts, over it, makes the facts each translation reads:
// numbered, with the delta from the last (the routes by name, the owners),
// the names kept through a handover and the LeaseHosts seen deleted.
//
// It never talks to the apiserver and never decides ownership itself: the
// hostnames engine decides, this package feeds it and renders the decisions.
package leasehosts
