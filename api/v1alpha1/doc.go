/*
Copyright The shardgate Authors.
*/

// Package v1alpha1 holds the shardgate.io/v1alpha1 API: LeaseHost,
// LeasedIP and GatewayParameters.
//
// The Go types are the source of truth. The CRD YAML in crds/ and
// zz_generated.deepcopy.go are generated from the markers here by
// controller-gen, so validation (OpenAPI and CEL) and printer columns live on
// the types and nowhere else. This package holds no logic: it must never
// import the controller, the hostname engine or any other part of shardgate,
// because clients and tools import it too.
//
// +kubebuilder:object:generate=true
// +groupName=shardgate.io
package v1alpha1
