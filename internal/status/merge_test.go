package status

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

const (
	ours   = "shardgate.io/gateway-controller"
	theirs = "example.com/other-controller"
)

var (
	t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	t1 = t0.Add(time.Hour + 300*time.Millisecond)
)

func cond(typ string, st metav1.ConditionStatus, reason string, at time.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: reason, LastTransitionTime: metav1.NewTime(at)}
}

// parent is an entry as the apiserver stores it (parentRef defaults filled
// in).
func parent(ctrl, gw string, conds ...metav1.Condition) gatewayv1.RouteParentStatus {
	return gatewayv1.RouteParentStatus{
		ParentRef:      defaultParentRef(gatewayv1.ParentReference{Name: gatewayv1.ObjectName(gw)}),
		ControllerName: gatewayv1.GatewayController(ctrl),
		Conditions:     conds,
	}
}

// desiredParent is what the translator hands over: no controllerName, no
// transition times.
func desiredParent(gw string, conds ...metav1.Condition) gatewayv1.RouteParentStatus {
	p := parent("", gw, conds...)
	p.ParentRef = gatewayv1.ParentReference{Name: gatewayv1.ObjectName(gw)}
	for i := range p.Conditions {
		p.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	return p
}

func TestConditionsTransitionTimes(t *testing.T) {
	now := metav1.NewTime(t1.Truncate(time.Second))
	existing := []metav1.Condition{
		cond("Accepted", metav1.ConditionTrue, "Accepted", t0),
		cond("ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs", t0),
	}
	desired := []metav1.Condition{
		cond("Accepted", metav1.ConditionTrue, "Accepted", time.Time{}),                 // same status: time kept
		cond("ResolvedRefs", metav1.ConditionFalse, "BackendNotFound", time.Time{}),     // flipped: now
		cond("PartiallyInvalid", metav1.ConditionTrue, "UnsupportedValue", time.Time{}), // new: now
	}
	got := conditions(existing, desired, now)
	want := []metav1.Time{metav1.NewTime(t0), now, now}
	for i := range got {
		if !got[i].LastTransitionTime.Equal(&want[i]) {
			t.Errorf("%s: lastTransitionTime %v, want %v", got[i].Type, got[i].LastTransitionTime, want[i])
		}
	}
	if desired[0].LastTransitionTime != (metav1.Time{}) {
		t.Errorf("conditions changed its input")
	}
	if conditions(existing, nil, now) != nil {
		t.Errorf("no desired conditions must give nil")
	}
}

func TestMergeParents(t *testing.T) {
	accepted := cond("Accepted", metav1.ConditionTrue, "Accepted", t0)
	other := parent(theirs, "theirs", cond("Accepted", metav1.ConditionFalse, "NotAllowedByListeners", t0))
	cases := []struct {
		name        string
		existing    []gatewayv1.RouteParentStatus
		desired     []gatewayv1.RouteParentStatus
		want        []gatewayv1.RouteParentStatus
		wantChanged bool
	}{{
		name:        "nothing and nothing",
		wantChanged: false,
	}, {
		name:        "new entry of ours",
		existing:    nil,
		desired:     []gatewayv1.RouteParentStatus{desiredParent("a", accepted)},
		want:        []gatewayv1.RouteParentStatus{parent(ours, "a", cond("Accepted", metav1.ConditionTrue, "Accepted", t1.Truncate(time.Second)))},
		wantChanged: true,
	}, {
		name:        "same content: unchanged, transition time kept",
		existing:    []gatewayv1.RouteParentStatus{parent(ours, "a", accepted)},
		desired:     []gatewayv1.RouteParentStatus{desiredParent("a", accepted)},
		want:        []gatewayv1.RouteParentStatus{parent(ours, "a", accepted)},
		wantChanged: false,
	}, {
		name:        "other controller's entry kept verbatim, ours appended",
		existing:    []gatewayv1.RouteParentStatus{other},
		desired:     []gatewayv1.RouteParentStatus{desiredParent("a", accepted)},
		want:        []gatewayv1.RouteParentStatus{other, parent(ours, "a", cond("Accepted", metav1.ConditionTrue, "Accepted", t1.Truncate(time.Second)))},
		wantChanged: true,
	}, {
		name:        "ours before theirs stays in place (no reordering fight)",
		existing:    []gatewayv1.RouteParentStatus{parent(ours, "a", accepted), other},
		desired:     []gatewayv1.RouteParentStatus{desiredParent("a", accepted)},
		want:        []gatewayv1.RouteParentStatus{parent(ours, "a", accepted), other},
		wantChanged: false,
	}, {
		name:        "our entries keep their order when desired lists them in another",
		existing:    []gatewayv1.RouteParentStatus{parent(ours, "b", accepted), other, parent(ours, "a", accepted)},
		desired:     []gatewayv1.RouteParentStatus{desiredParent("a", accepted), desiredParent("b", accepted)},
		want:        []gatewayv1.RouteParentStatus{parent(ours, "b", accepted), other, parent(ours, "a", accepted)},
		wantChanged: false,
	}, {
		name:        "entry of ours no longer desired is removed, theirs kept",
		existing:    []gatewayv1.RouteParentStatus{parent(ours, "a", accepted), other},
		desired:     nil,
		want:        []gatewayv1.RouteParentStatus{other},
		wantChanged: true,
	}, {
		name:        "last entry removed gives nil",
		existing:    []gatewayv1.RouteParentStatus{parent(ours, "a", accepted)},
		desired:     []gatewayv1.RouteParentStatus{},
		want:        nil,
		wantChanged: true,
	}, {
		name:        "theirs for the same parentRef is not ours to change",
		existing:    []gatewayv1.RouteParentStatus{parent(theirs, "a", accepted)},
		desired:     []gatewayv1.RouteParentStatus{desiredParent("a", accepted)},
		want:        []gatewayv1.RouteParentStatus{parent(theirs, "a", accepted), parent(ours, "a", cond("Accepted", metav1.ConditionTrue, "Accepted", t1.Truncate(time.Second)))},
		wantChanged: true,
	}, {
		name:        "a duplicate entry of ours is dropped",
		existing:    []gatewayv1.RouteParentStatus{parent(ours, "a", accepted), parent(ours, "a", accepted)},
		desired:     []gatewayv1.RouteParentStatus{desiredParent("a", accepted)},
		want:        []gatewayv1.RouteParentStatus{parent(ours, "a", accepted)},
		wantChanged: true,
	}, {
		name:     "a flipped condition gets a new transition time",
		existing: []gatewayv1.RouteParentStatus{parent(ours, "a", accepted)},
		desired:  []gatewayv1.RouteParentStatus{desiredParent("a", cond("Accepted", metav1.ConditionFalse, "NoMatchingListenerHostname", time.Time{}))},
		want: []gatewayv1.RouteParentStatus{parent(ours, "a",
			cond("Accepted", metav1.ConditionFalse, "NoMatchingListenerHostname", t1.Truncate(time.Second)))},
		wantChanged: true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := MergeParents(tc.existing, tc.desired, ours, t1)
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got\n%+v\nwant\n%+v", got, tc.want)
			}
			// Merging the result again is a fixed point: no second write.
			again, changed := MergeParents(got, tc.desired, ours, t1.Add(time.Minute))
			if changed || !equality.Semantic.DeepEqual(again, got) {
				t.Errorf("merging the result again changed it: %+v", again)
			}
		})
	}
}

// Two controllers each merging their own entries into the same list reach a
// fixed point: neither sees a change after both have written once.
func TestMergeParentsTwoControllersConverge(t *testing.T) {
	a := []gatewayv1.RouteParentStatus{desiredParent("gw-a", cond("Accepted", metav1.ConditionTrue, "Accepted", time.Time{}))}
	b := []gatewayv1.RouteParentStatus{desiredParent("gw-b", cond("Accepted", metav1.ConditionTrue, "Accepted", time.Time{}))}
	var list []gatewayv1.RouteParentStatus
	writes := 0
	for round := range 5 {
		var changedA, changedB bool
		list, changedA = MergeParents(list, a, ours, t1.Add(time.Duration(round)*time.Second))
		list, changedB = MergeParents(list, b, theirs, t1.Add(time.Duration(round)*time.Second))
		if changedA {
			writes++
		}
		if changedB {
			writes++
		}
	}
	if writes != 2 {
		t.Errorf("%d writes over 5 rounds, want 2 (one each)", writes)
	}
	if len(list) != 2 {
		t.Errorf("list has %d entries, want 2: %+v", len(list), list)
	}
}

func TestMergeGateway(t *testing.T) {
	existing := gatewayv1.GatewayStatus{
		Conditions: []metav1.Condition{cond("Accepted", metav1.ConditionTrue, "Accepted", t0)},
		Listeners: []gatewayv1.ListenerStatus{{
			Name: "http", AttachedRoutes: 3,
			Conditions: []metav1.Condition{cond("Programmed", metav1.ConditionTrue, "Programmed", t0)},
		}},
	}
	desired := gatewayv1.GatewayStatus{
		Conditions: []metav1.Condition{cond("Accepted", metav1.ConditionTrue, "Accepted", time.Time{})},
		Listeners: []gatewayv1.ListenerStatus{{
			Name: "http", AttachedRoutes: 3, SupportedKinds: []gatewayv1.RouteGroupKind{},
			Conditions: []metav1.Condition{cond("Programmed", metav1.ConditionTrue, "Programmed", time.Time{})},
		}},
	}
	got, changed := MergeGateway(existing, desired, t1)
	if changed {
		t.Errorf("same content reported as changed: %+v", got)
	}
	if !got.Conditions[0].LastTransitionTime.Equal(&existing.Conditions[0].LastTransitionTime) ||
		!got.Listeners[0].Conditions[0].LastTransitionTime.Equal(&existing.Listeners[0].Conditions[0].LastTransitionTime) {
		t.Errorf("transition times not carried over: %+v", got)
	}
	desired.Listeners[0].AttachedRoutes = 4
	got, changed = MergeGateway(existing, desired, t1)
	if !changed || got.Listeners[0].AttachedRoutes != 4 {
		t.Errorf("attachedRoutes change: changed=%v, got %+v", changed, got)
	}
	if desired.Listeners[0].Conditions[0].LastTransitionTime != (metav1.Time{}) {
		t.Errorf("MergeGateway changed its input")
	}
	desired.Listeners = append(desired.Listeners, gatewayv1.ListenerStatus{
		Name: "https", Conditions: []metav1.Condition{cond("Programmed", metav1.ConditionFalse, "Invalid", time.Time{})},
	})
	got, changed = MergeGateway(existing, desired, t1)
	want := metav1.NewTime(t1.Truncate(time.Second))
	if !changed || !got.Listeners[1].Conditions[0].LastTransitionTime.Equal(&want) {
		t.Errorf("new listener: changed=%v, got %+v", changed, got.Listeners)
	}
}

func TestMergeGatewayClass(t *testing.T) {
	existing := gatewayv1.GatewayClassStatus{
		Conditions:        []metav1.Condition{cond("Accepted", metav1.ConditionTrue, "Accepted", t0)},
		SupportedFeatures: []gatewayv1.SupportedFeature{{Name: "HTTPRoute"}},
	}
	desired := gatewayv1.GatewayClassStatus{
		Conditions:        []metav1.Condition{cond("Accepted", metav1.ConditionTrue, "Accepted", time.Time{})},
		SupportedFeatures: []gatewayv1.SupportedFeature{{Name: "HTTPRoute"}},
	}
	if got, changed := MergeGatewayClass(existing, desired, t1); changed || !got.Conditions[0].LastTransitionTime.Equal(&existing.Conditions[0].LastTransitionTime) {
		t.Errorf("same content: changed=%v, got %+v", changed, got)
	}
	desired.SupportedFeatures = append(desired.SupportedFeatures, gatewayv1.SupportedFeature{Name: "GRPCRoute"})
	if _, changed := MergeGatewayClass(existing, desired, t1); !changed {
		t.Errorf("a new supported feature must be a change")
	}
	if _, changed := MergeGatewayClass(gatewayv1.GatewayClassStatus{}, gatewayv1.GatewayClassStatus{SupportedFeatures: []gatewayv1.SupportedFeature{}}, t1); changed {
		t.Errorf("nil and empty supported features must be equal")
	}
}

func TestMergeListenerSet(t *testing.T) {
	cond := func(typ, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason, Message: reason, ObservedGeneration: 1}
	}
	desired := gatewayv1.ListenerSetStatus{
		Conditions: []metav1.Condition{cond("Accepted", "Accepted"), cond("Programmed", "Programmed")},
		Listeners: []gatewayv1.ListenerEntryStatus{{Name: "http", AttachedRoutes: 1,
			SupportedKinds: []gatewayv1.RouteGroupKind{{Kind: "HTTPRoute"}},
			Conditions:     []metav1.Condition{cond("Accepted", "Accepted")}}},
	}
	first, changed := MergeListenerSet(gatewayv1.ListenerSetStatus{}, desired, t0)
	if !changed {
		t.Fatal("an empty status must change")
	}
	if first.Listeners[0].SupportedKinds[0].Group == nil || *first.Listeners[0].SupportedKinds[0].Group != gatewayv1.GroupName {
		t.Fatal("supportedKinds must carry the apiserver's default group")
	}
	if first.Conditions[0].LastTransitionTime.Time != t0.Truncate(time.Second) {
		t.Fatalf("transition time %v", first.Conditions[0].LastTransitionTime)
	}
	// The same desired status later: nothing changes, times are kept.
	again, changed := MergeListenerSet(first, desired, t1)
	if changed || !equality.Semantic.DeepEqual(again, first) {
		t.Fatalf("an unchanged desired status changed the status: %+v", again)
	}
	// One listener's attached routes change: a change, and the listener's
	// unchanged condition keeps its time.
	desired.Listeners[0].AttachedRoutes = 2
	next, changed := MergeListenerSet(first, desired, t1)
	if !changed {
		t.Fatal("attachedRoutes changed but the merge says nothing changed")
	}
	if next.Listeners[0].Conditions[0].LastTransitionTime != first.Listeners[0].Conditions[0].LastTransitionTime {
		t.Fatal("an unchanged listener condition lost its transition time")
	}
}
