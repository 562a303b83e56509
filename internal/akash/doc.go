// Package akash owns what shardgate's Akash drop-in mode produces from the
// Akash provider's objects (internal/akash/v2beta2), as pure functions: the
// lease namespace of a lease, the LeaseHost-shaped claim a ProviderHost makes
// in the hostname engine (and Claims, claims.go, which keeps each
// ProviderHost's claim by UID from one translation to the next, its only
// state), the HTTPRoute and the LoadBalancer Service written
// in the shapes Akash's own hostname and IP operators write, the route
// settings derived from a Manifest's http_options (and their retry policy
// as an annotation where the HTTPRoute CRD has no rules[].retry, retry.go),
// the validation of Akash account addresses (address.go), the JSON bodies
// of the operators' HTTP API (api.go, version.go), and which labelled
// routes and Services the API may report as shardgate's (provenance.go:
// never on labels alone).
//
// It never talks to the apiserver and never decides ownership: the hostname
// engine (internal/hostnames) decides, through the same leasehosts planning
// a LeaseHost goes through. It never writes an Akash object.
package akash
