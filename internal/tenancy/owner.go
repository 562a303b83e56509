package tenancy

import (
	corev1 "k8s.io/api/core/v1"
)

// OwnerKey is shardgate's own owner marking, read as an annotation or a
// label on a Namespace.
const OwnerKey = "shardgate.io/owner"

// AkashOwnerLabel is the label the Akash provider puts on each lease
// namespace. With Akash mode on it counts as an owner marking too.
const AkashOwnerLabel = "akash.network/lease.id.owner"

// Policy says how a Namespace's owner marking is read and what a namespace
// without one means.
type Policy struct {
	// Keys are the annotation or label keys that mark a namespace's owner,
	// tried in order; the first present wins. Empty means {OwnerKey}.
	Keys []string
	// RequireOwner: a namespace without any marking belongs to nobody, so
	// nothing in it may claim a tenant name. False is for single-tenant
	// clusters only: an unmarked namespace is then trusted to say its own
	// owner.
	RequireOwner bool
}

// DefaultPolicy is the safe default: shardgate.io/owner, required.
func DefaultPolicy() Policy { return Policy{Keys: []string{OwnerKey}, RequireOwner: true} }

// keys returns the keys to try, defaulting to OwnerKey.
func (p Policy) keys() []string {
	if len(p.Keys) == 0 {
		return []string{OwnerKey}
	}
	return p.Keys
}

// NamespaceOwner returns the owner marked on ns, and the key that marked it.
// An annotation wins over a label of the same key. found is false when ns is
// nil or carries none of the keys. A marking with an empty value is found,
// and names an owner nobody has.
func (p Policy) NamespaceOwner(ns *corev1.Namespace) (owner, key string, found bool) {
	if ns == nil {
		return "", "", false
	}
	for _, k := range p.keys() {
		if v, ok := ns.Annotations[k]; ok {
			return v, k, true
		}
		if v, ok := ns.Labels[k]; ok {
			return v, k, true
		}
	}
	return "", "", false
}

// Verdict is the outcome of checking a claimed owner against a namespace.
type Verdict int

const (
	// Allowed: the namespace is marked with the claimed owner, or is
	// unmarked and the policy does not require a marking.
	Allowed Verdict = iota
	// Mismatch: the namespace is marked with another owner.
	Mismatch
	// Missing: the namespace carries no marking and the policy requires one.
	Missing
)

// Check says whether something in ns that claims to belong to owner may act
// for that owner. An empty marking matches nobody, an empty claimed owner
// included.
func (p Policy) Check(ns *corev1.Namespace, owner string) Verdict {
	marked, _, found := p.NamespaceOwner(ns)
	switch {
	case !found && p.RequireOwner:
		return Missing
	case !found:
		return Allowed
	case marked == "" || marked != owner:
		return Mismatch
	}
	return Allowed
}

// SameOwner says whether two namespaces provably belong to one owner: both
// are marked, with the same non-empty owner. Unmarked namespaces are never
// the same owner as anything, whatever the policy, because nothing the
// provider wrote says so.
func (p Policy) SameOwner(a, b *corev1.Namespace) bool {
	oa, _, fa := p.NamespaceOwner(a)
	ob, _, fb := p.NamespaceOwner(b)
	return fa && fb && oa != "" && oa == ob
}

// TenantNamespace says whether ns belongs to a tenant, and why: it carries
// an owner marking (whatever owner it names, an empty one included), or it
// is nil (not known yet, so it cannot be shown to be the provider's). name
// is the namespace's name, for the message. Objects in a tenant namespace
// never get provider resources: no Gateway provisioning, no address pool,
// no addresses, no image or replica count, no xDS client certificate. The
// answer does not depend on RequireOwner: an unmarked namespace is the
// provider's either way.
func (p Policy) TenantNamespace(name string, ns *corev1.Namespace) (why string, tenant bool) {
	if ns == nil {
		return "namespace " + name + " is not known yet, so it cannot be shown to be a provider namespace", true
	}
	if _, key, marked := p.NamespaceOwner(ns); marked {
		return "namespace " + name + " carries an owner marking (" + key + "), so it belongs to a tenant", true
	}
	return "", false
}
