// Package v2beta2 holds Go types for the objects the Akash provider writes
// (API group akash.network, version v2beta2): ProviderHost,
// ProviderLeasedIP and Manifest, with only the fields shardgate reads. Their
// JSON names are the provider's own wire format. shardgate never writes
// these objects; the CRDs belong to the provider (crds/akash holds copies
// for tests and for clusters without the provider's own).
//
// +kubebuilder:object:generate=true
// +groupName=akash.network
package v2beta2
