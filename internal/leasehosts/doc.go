// Package leasehosts owns what a LeaseHost produces, as pure functions: the
// names it claims (one per selected shard, or its one explicit hostname), the
// HTTPRoute generated for the names it holds, and its status; the
// namespace-owner rule (PlanIn, NamespaceOwnerRefusal), its claims in the
// hostname engine (Claimants), and the translator's ownership facts
// (Ownership), which run the engine over every LeaseHost.
//
// It never talks to the apiserver and never decides ownership itself: the
// hostnames engine decides, this package feeds it and renders the decisions.
package leasehosts
