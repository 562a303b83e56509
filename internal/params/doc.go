/*
Copyright The shardgate Authors.
*/

// Package params resolves Gateway API parametersRef: it says which
// GatewayParameters apply to a Gateway, and why a reference does not
// resolve, in one set of messages for every reader (the translator's
// GatewayClass and Gateway conditions, shard discovery, provisioning).
//
// A Gateway's own spec.infrastructure.parametersRef (group shardgate.io,
// kind GatewayParameters, in the Gateway's namespace) applies when set;
// otherwise its class's spec.parametersRef, which must carry a namespace.
// A Gateway's own reference replaces the class default entirely; one that
// does not resolve is an error, never a fallback to the class default.
//
// It is pure: lookups go through the caller's get function.
package params
