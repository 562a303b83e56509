// Package tenancy owns one rule: who a Namespace belongs to.
//
// A tenant may write anything inside its own namespaces, so nothing a tenant
// writes there (a LeaseHost's spec.lease.owner, a label on a route) can say
// which owner the namespace belongs to. The Namespace object itself, which
// only the provider writes, carries that marking. Every isolation check that
// needs "the owner of this namespace" asks this package, so there is one
// reading of the marking in the whole product.
//
// The package is pure: it reads the Namespace it is given and never talks to
// Kubernetes.
package tenancy
