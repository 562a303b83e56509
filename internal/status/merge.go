package status

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// conditions returns desired with each condition's lastTransitionTime taken
// from the existing condition of the same type when its status is the same,
// and now otherwise.
func conditions(existing, desired []metav1.Condition, now metav1.Time) []metav1.Condition {
	if desired == nil {
		return nil
	}
	out := make([]metav1.Condition, len(desired))
	for i, d := range desired {
		d.LastTransitionTime = now
		for _, e := range existing {
			if e.Type == d.Type && e.Status == d.Status {
				d.LastTransitionTime = e.LastTransitionTime
				break
			}
		}
		out[i] = d
	}
	return out
}

// MergeParents replaces controllerName's entries in existing with desired
// (conditions' transition times preserved) and keeps every other
// controller's entry as it is, in place. An entry of ours whose parentRef is
// still desired keeps its position; entries of ours no longer desired are
// dropped; new ones are appended in desired's order. Keeping positions
// matters: another controller that appends its own entries must not see
// its entries move, or the two controllers would reorder the list in turn
// forever. It reports whether the result differs from existing.
func MergeParents(existing, desired []gatewayv1.RouteParentStatus, controllerName string, now time.Time) ([]gatewayv1.RouteParentStatus, bool) {
	return mergeEntries(existing, desired, controllerName, now, func(p *gatewayv1.RouteParentStatus) (*gatewayv1.ParentReference, *gatewayv1.GatewayController, *[]metav1.Condition) {
		return &p.ParentRef, &p.ControllerName, &p.Conditions
	})
}

// mergeEntries is MergeParents for any list of per-controller entries
// (route parents, policy ancestors); fields gives an entry's reference,
// controller name and conditions.
func mergeEntries[T any](existing, desired []T, controllerName string, now time.Time,
	fields func(*T) (*gatewayv1.ParentReference, *gatewayv1.GatewayController, *[]metav1.Condition)) ([]T, bool) {
	t := metav1.NewTime(now.Truncate(time.Second))
	ctrl := gatewayv1.GatewayController(controllerName)
	used := make([]bool, len(desired))
	out := make([]T, 0, len(existing)+len(desired))
	ours := func(d T, prev []metav1.Condition) T {
		ref, c, conds := fields(&d)
		*ref = defaultParentRef(*ref)
		*c = ctrl
		*conds = conditions(prev, *conds, t)
		return d
	}
	for _, p := range existing {
		pref, pc, pconds := fields(&p)
		if *pc != ctrl {
			out = append(out, p)
			continue
		}
		i := slices.IndexFunc(desired, func(d T) bool {
			dref, _, _ := fields(&d)
			return equality.Semantic.DeepEqual(defaultParentRef(*dref), defaultParentRef(*pref))
		})
		if i < 0 || used[i] {
			continue // no longer desired, or a duplicate of ours
		}
		used[i] = true
		out = append(out, ours(desired[i], *pconds))
	}
	for i, d := range desired {
		if !used[i] {
			out = append(out, ours(d, nil))
		}
	}
	if len(out) == 0 {
		out = nil
	}
	var before []T
	if len(existing) > 0 {
		before = existing
	}
	return out, !equality.Semantic.DeepEqual(before, out)
}

// defaultParentRef fills in what the apiserver defaults in a stored
// parentRef (the CRD's group and kind defaults), so that what we write
// compares equal to what we read back: otherwise every comparison would
// see a change, and every write would be followed by another.
func defaultParentRef(ref gatewayv1.ParentReference) gatewayv1.ParentReference {
	if ref.Group == nil {
		g := gatewayv1.Group(gatewayv1.GroupName)
		ref.Group = &g
	}
	if ref.Kind == nil {
		k := gatewayv1.Kind("Gateway")
		ref.Kind = &k
	}
	return ref
}

// MergeGateway returns desired with transition times carried over from
// existing, and whether it differs from existing.
func MergeGateway(existing, desired gatewayv1.GatewayStatus, now time.Time) (gatewayv1.GatewayStatus, bool) {
	t := metav1.NewTime(now.Truncate(time.Second))
	out := *desired.DeepCopy()
	out.Conditions = conditions(existing.Conditions, desired.Conditions, t)
	// The apiserver's defaults, so that what we write compares equal to
	// what we read back.
	for i := range out.Addresses {
		if out.Addresses[i].Type == nil {
			ip := gatewayv1.IPAddressType
			out.Addresses[i].Type = &ip
		}
	}
	mergeListeners(existing.Listeners, out.Listeners, t, func(l *gatewayv1.ListenerStatus) (gatewayv1.SectionName, []gatewayv1.RouteGroupKind, *[]metav1.Condition) {
		return l.Name, l.SupportedKinds, &l.Conditions
	})
	return out, !equality.Semantic.DeepEqual(normGateway(existing), normGateway(out))
}

// mergeListeners fills in the apiserver's default group of each listener's
// supported kinds (so that what we write compares equal to what we read
// back) and carries each listener's transition times over from the
// listener of the same name in existing. parts gives a listener's name,
// supported kinds and conditions: a Gateway's and a ListenerSet's
// listeners are of different types.
func mergeListeners[L any](existing, out []L, t metav1.Time, parts func(*L) (gatewayv1.SectionName, []gatewayv1.RouteGroupKind, *[]metav1.Condition)) {
	for i := range out {
		name, kinds, conds := parts(&out[i])
		for j := range kinds {
			if kinds[j].Group == nil {
				g := gatewayv1.Group(gatewayv1.GroupName)
				kinds[j].Group = &g
			}
		}
		var prev []metav1.Condition
		for k := range existing {
			if n, _, c := parts(&existing[k]); n == name {
				prev = *c
				break
			}
		}
		*conds = conditions(prev, *conds, t)
	}
}

func normGateway(s gatewayv1.GatewayStatus) gatewayv1.GatewayStatus {
	if len(s.Addresses) == 0 {
		s.Addresses = nil
	}
	if len(s.Listeners) == 0 {
		s.Listeners = nil
	}
	for i := range s.Listeners {
		if len(s.Listeners[i].SupportedKinds) == 0 {
			s.Listeners[i].SupportedKinds = nil
		}
	}
	return s
}

// MergeListenerSet returns desired with transition times carried over, and
// whether it differs from existing.
func MergeListenerSet(existing, desired gatewayv1.ListenerSetStatus, now time.Time) (gatewayv1.ListenerSetStatus, bool) {
	t := metav1.NewTime(now.Truncate(time.Second))
	out := *desired.DeepCopy()
	out.Conditions = conditions(existing.Conditions, desired.Conditions, t)
	mergeListeners(existing.Listeners, out.Listeners, t, func(l *gatewayv1.ListenerEntryStatus) (gatewayv1.SectionName, []gatewayv1.RouteGroupKind, *[]metav1.Condition) {
		return l.Name, l.SupportedKinds, &l.Conditions
	})
	return out, !equality.Semantic.DeepEqual(normListenerSet(existing), normListenerSet(out))
}

func normListenerSet(s gatewayv1.ListenerSetStatus) gatewayv1.ListenerSetStatus {
	if len(s.Conditions) == 0 {
		s.Conditions = nil
	}
	if len(s.Listeners) == 0 {
		s.Listeners = nil
	}
	for i := range s.Listeners {
		if len(s.Listeners[i].SupportedKinds) == 0 {
			s.Listeners[i].SupportedKinds = nil
		}
	}
	return s
}

// MergeGatewayClass returns desired with transition times carried over.
func MergeGatewayClass(existing, desired gatewayv1.GatewayClassStatus, now time.Time) (gatewayv1.GatewayClassStatus, bool) {
	t := metav1.NewTime(now.Truncate(time.Second))
	out := *desired.DeepCopy()
	out.Conditions = conditions(existing.Conditions, desired.Conditions, t)
	a, b := existing, out
	if len(a.SupportedFeatures) == 0 {
		a.SupportedFeatures = nil
	}
	if len(b.SupportedFeatures) == 0 {
		b.SupportedFeatures = nil
	}
	return out, !equality.Semantic.DeepEqual(a, b) || !slices.Equal(a.SupportedFeatures, b.SupportedFeatures)
}
