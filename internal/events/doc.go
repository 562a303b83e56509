// Package events owns which Kubernetes Events shardgate emits: the decisions
// a user must act on (a refused name on any shard, a missing backend, a
// LeasedIP waiting for or refused an address), derived purely from an
// object's previous and next status.
//
// An Event is derived from a condition's transition, never from a
// reconcile, so re-reconciling an unchanged object emits nothing. The
// package never talks to the apiserver; the controllers emit what it
// returns.
package events
