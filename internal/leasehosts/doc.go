// Package leasehosts owns what a LeaseHost produces, as pure functions: the
// names it claims (one per selected shard, or its one explicit hostname), the
// HTTPRoute generated for the names it holds, and its status.
//
// It never talks to the apiserver and never decides ownership: the
// hostnames engine decides, this package only renders the decisions.
package leasehosts
