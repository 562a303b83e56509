package controllers

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/addresses"
	"github.com/shardgate/shardgate/internal/tenancy"
)

func (r *LeasedIPReconciler) policy() tenancy.Policy {
	if r.Policy != nil {
		return r.Policy()
	}
	return tenancy.DefaultPolicy()
}

// namespace returns the Namespace named name, or nil when it is gone.
func (r *LeasedIPReconciler) namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	var ns corev1.Namespace
	if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, &ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get Namespace %s: %w", name, err)
	}
	return &ns, nil
}

// refusal says why lip may hold no address in ns, or nil: its namespace
// must be marked as its lease owner's. The message never names the
// namespace's owner.
func (r *LeasedIPReconciler) refusal(lip *shardgatev1alpha1.LeasedIP, ns *corev1.Namespace) *addresses.Refusal {
	p := r.policy()
	switch p.Check(ns, lip.Spec.Lease.Owner) {
	case tenancy.Mismatch:
		return &addresses.Refusal{Reason: shardgatev1alpha1.ReasonNamespaceOwnerMismatch,
			Message: fmt.Sprintf("namespace %s belongs to another owner; lease owner %q may not hold an address in it", lip.Namespace, lip.Spec.Lease.Owner)}
	case tenancy.Missing:
		return &addresses.Refusal{Reason: shardgatev1alpha1.ReasonNamespaceOwnerMissing,
			Message: fmt.Sprintf("namespace %s has no owner marking (%s, as annotation or label); no lease owner may hold an address in it", lip.Namespace, strings.Join(p.Keys, " or "))}
	}
	return nil
}

// sameOwner keeps the siblings whose namespace has the same owner as ns:
// an address is shared only within one namespace owner.
func (r *LeasedIPReconciler) sameOwner(ctx context.Context, ns *corev1.Namespace, siblings []corev1.Service) ([]corev1.Service, error) {
	p := r.policy()
	var out []corev1.Service
	owners := map[string]bool{}
	for i := range siblings {
		s := siblings[i]
		same, known := owners[s.Namespace]
		if !known {
			other, err := r.namespace(ctx, s.Namespace)
			if err != nil {
				return nil, err
			}
			same = p.SameOwner(ns, other)
			owners[s.Namespace] = same
		}
		if same {
			out = append(out, s)
		}
	}
	return out, nil
}

// namespaceLeasedIPs: a Namespace whose owner marking changes matters to
// every LeasedIP in it.
func (r *LeasedIPReconciler) namespaceLeasedIPs(ctx context.Context, o client.Object) []reconcile.Request {
	set := map[types.NamespacedName]bool{}
	r.addLeasedIPs(ctx, set, client.InNamespace(o.GetName()))
	return setRequests(set)
}
