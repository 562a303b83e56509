/*
Copyright The shardgate Authors.
*/

package status

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// MergeAncestors is MergeParents for a policy's status.ancestors: it
// replaces controllerName's entries in existing with desired (transition
// times preserved), keeps every other controller's entry as it is and where
// it is, drops entries of ours no longer desired and appends new ones in
// desired's order. It reports whether the result differs from existing.
func MergeAncestors(existing, desired []gatewayv1.PolicyAncestorStatus, controllerName string, now time.Time) ([]gatewayv1.PolicyAncestorStatus, bool) {
	return mergeEntries(existing, desired, controllerName, now, func(a *gatewayv1.PolicyAncestorStatus) (*gatewayv1.ParentReference, *gatewayv1.GatewayController, *[]metav1.Condition) {
		return &a.AncestorRef, &a.ControllerName, &a.Conditions
	})
}

// policyObject is a BackendTLSPolicy to write and its merge: our ancestor
// entries are brought to the desired ones, which may be none (a policy that
// no longer applies to a Gateway of ours loses our entries). Call with
// w.mu held.
func (w *Writer) policyObject(k Key) (*gatewayv1.BackendTLSPolicy, func(time.Time) bool) {
	desired := w.policies[k.NamespacedName]
	p := &gatewayv1.BackendTLSPolicy{}
	return p, func(now time.Time) (changed bool) {
		p.Status.Ancestors, changed = MergeAncestors(p.Status.Ancestors, desired, w.controllerName, now)
		if p.Status.Ancestors == nil {
			p.Status.Ancestors = []gatewayv1.PolicyAncestorStatus{}
		}
		return changed
	}
}

// policyDiffers reports whether a policy's ancestors of ours differ from
// the desired ones. Call with w.mu held.
func (w *Writer) policyDiffers(k Key, p *gatewayv1.BackendTLSPolicy, now time.Time) bool {
	if w.behind(k, p.ResourceVersion) {
		return false
	}
	_, changed := MergeAncestors(p.Status.Ancestors, w.policies[k.NamespacedName], w.controllerName, now)
	return changed
}
