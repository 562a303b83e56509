package controllers

import (
	"slices"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/sharding"
)

// Tenancy is the config's tenancy settings (requireNamespaceOwner,
// namespaceOwnerAnnotation, akash.enabled, shardNamespaces), shared by the
// controllers that need them and swapped whole on a config reload. The zero
// value is the safe default: shardgate.io/owner, required; shards in any
// namespace without an owner marking.
type Tenancy struct {
	v atomic.Pointer[tenancySettings]
}

type tenancySettings struct {
	policy          tenancy.Policy
	shardNamespaces []string
}

// Set replaces the settings and reports whether they changed.
func (t *Tenancy) Set(p tenancy.Policy, shardNamespaces []string) bool {
	next := &tenancySettings{policy: tenancy.Policy{Keys: slices.Clone(p.Keys), RequireOwner: p.RequireOwner},
		shardNamespaces: slices.Clone(shardNamespaces)}
	old := t.v.Swap(next)
	return old == nil || !slices.Equal(old.policy.Keys, next.policy.Keys) ||
		old.policy.RequireOwner != next.policy.RequireOwner || !slices.Equal(old.shardNamespaces, next.shardNamespaces)
}

// Policy is how a Namespace's owner marking is read.
func (t *Tenancy) Policy() tenancy.Policy {
	if t == nil {
		return tenancy.DefaultPolicy()
	}
	if s := t.v.Load(); s != nil {
		return s.policy
	}
	return tenancy.DefaultPolicy()
}

// Placement says which of namespaces may hold shards.
func (t *Tenancy) Placement(namespaces []*corev1.Namespace) sharding.Placement {
	p := sharding.Placement{Policy: t.Policy(), Namespaces: make(map[string]*corev1.Namespace, len(namespaces))}
	for _, ns := range namespaces {
		if ns != nil {
			p.Namespaces[ns.Name] = ns
		}
	}
	if t != nil {
		if s := t.v.Load(); s != nil {
			p.Allowed = s.shardNamespaces
		}
	}
	return p
}
