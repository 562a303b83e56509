// Package addresses owns what shardgate asks of MetalLB, as pure functions.
//
// For LeasedIPs: the sharing key, the LoadBalancer Service's
// name, the Service itself, the reading of MetalLB's answer (the Service's
// status, its Events and the IPAddressPool status) into the LeasedIP's
// status, and per-pool usage. For Gateways (gateway.go): the
// Envoy Service's address annotations and the Gateway's addresses and
// Programmed reason.
//
// It never talks to the apiserver; the controllers read and write, this
// package decides.
package addresses
