package events

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/shardgate/shardgate/api/v1alpha1"
)

func cond(t, s, reason string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(s), Reason: reason, Message: t + " " + reason}
}

func lhStatus(reserved, ready metav1.Condition, shards ...v1.ShardStatus) *v1.LeaseHostStatus {
	return &v1.LeaseHostStatus{Conditions: []metav1.Condition{reserved, ready}, Shards: shards}
}

func shard(name, status, reason string) v1.ShardStatus {
	return v1.ShardStatus{Name: name, Gateway: "infra/" + name, Host: "web." + name + ".test",
		Conditions: []metav1.Condition{cond(v1.ConditionAdmitted, status, reason)}}
}

// summary renders events as "Type/Reason/Action" for comparison.
func summary(evs []Event) []string {
	out := []string{}
	for _, e := range evs {
		out = append(out, e.Type+"/"+e.Reason+"/"+e.Action)
	}
	return out
}

func TestLeaseHostEvents(t *testing.T) {
	const W, N = corev1.EventTypeWarning, corev1.EventTypeNormal
	reservedOK := cond(v1.ConditionReserved, "True", v1.ReasonReserved)
	partial := cond(v1.ConditionReserved, "True", v1.ReasonPartiallyReserved)
	readyOK := cond(v1.ConditionReady, "True", v1.ReasonAdmitted)
	pending := cond(v1.ConditionReady, "False", v1.ReasonPending)
	empty := &v1.LeaseHostStatus{}
	cases := []struct {
		name       string
		prev, next *v1.LeaseHostStatus
		want       []string
	}{
		{"first reservation, admitted", empty,
			lhStatus(reservedOK, readyOK, shard("a", "True", v1.ReasonAdmitted)),
			[]string{N + "/Reserved/Reserve", N + "/Admitted/Route"}},
		{"unchanged status emits nothing",
			lhStatus(reservedOK, readyOK, shard("a", "True", v1.ReasonAdmitted)),
			lhStatus(reservedOK, readyOK, shard("a", "True", v1.ReasonAdmitted)),
			[]string{}},
		{"refused everywhere: one Warning, not one per shard", empty,
			lhStatus(cond(v1.ConditionReserved, "False", v1.ReasonHostnameInUse), cond(v1.ConditionReady, "False", v1.ReasonHostnameInUse),
				shard("a", "False", v1.ReasonHostnameInUse), shard("b", "False", v1.ReasonHostnameInUse)),
			[]string{W + "/HostnameInUse/Reserve"}},
		{"takeover moves the name away: Normal",
			lhStatus(reservedOK, readyOK),
			lhStatus(cond(v1.ConditionReserved, "False", v1.ReasonTransferredAway), cond(v1.ConditionReady, "False", v1.ReasonTransferredAway)),
			[]string{N + "/TransferredAway/Reserve"}},
		{"refused on one shard only",
			lhStatus(reservedOK, readyOK, shard("a", "True", v1.ReasonAdmitted), shard("b", "Unknown", v1.ReasonPending)),
			lhStatus(partial, readyOK, shard("a", "True", v1.ReasonAdmitted), shard("b", "False", v1.ReasonHostnameInUse)),
			[]string{N + "/PartiallyReserved/Reserve", W + "/HostnameInUse/Admit"}},
		{"a shard's Gateway stops accepting the route",
			lhStatus(reservedOK, readyOK, shard("a", "True", v1.ReasonAdmitted)),
			lhStatus(reservedOK, cond(v1.ConditionReady, "False", v1.ReasonNotAdmitted), shard("a", "False", "NotAllowedByListeners")),
			[]string{W + "/NotAdmitted/Route", W + "/NotAllowedByListeners/Admit"}},
		{"missing backend Service", empty,
			lhStatus(reservedOK, cond(v1.ConditionReady, "False", v1.ReasonBackendNotFound)),
			[]string{N + "/Reserved/Reserve", W + "/BackendNotFound/Route"}},
		{"waiting for the Gateway is not an Event",
			lhStatus(reservedOK, readyOK, shard("a", "True", v1.ReasonAdmitted)),
			lhStatus(reservedOK, pending, shard("a", "Unknown", v1.ReasonPending)),
			[]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := summary(LeaseHost(tc.prev, tc.next))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("events = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLeaseHostShardEventNamesTheShard(t *testing.T) {
	prev := lhStatus(cond(v1.ConditionReserved, "True", v1.ReasonReserved), cond(v1.ConditionReady, "True", v1.ReasonAdmitted), shard("b", "Unknown", v1.ReasonPending))
	next := lhStatus(cond(v1.ConditionReserved, "True", v1.ReasonPartiallyReserved), cond(v1.ConditionReady, "True", v1.ReasonAdmitted), shard("b", "False", v1.ReasonBlocked))
	evs := LeaseHost(prev, next)
	if len(evs) != 2 || evs[1].Message != "shard b (Gateway infra/b) refused web.b.test: Admitted Blocked" {
		t.Fatalf("events = %+v", evs)
	}
}

func TestLeasedIPEvents(t *testing.T) {
	const W, N = corev1.EventTypeWarning, corev1.EventTypeNormal
	st := func(s, reason string) *v1.LeasedIPStatus {
		return &v1.LeasedIPStatus{Conditions: []metav1.Condition{cond(v1.ConditionAllocated, s, reason)}}
	}
	cases := []struct {
		name       string
		prev, next *v1.LeasedIPStatus
		want       []string
	}{
		{"pending", &v1.LeasedIPStatus{}, st("False", v1.ReasonPending), []string{N + "/Pending/Allocate"}},
		{"pending again emits nothing", st("False", v1.ReasonPending), st("False", v1.ReasonPending), []string{}},
		{"pool exhausted", st("False", v1.ReasonPending), st("False", v1.ReasonPoolExhausted), []string{W + "/PoolExhausted/Allocate"}},
		{"pool missing", &v1.LeasedIPStatus{}, st("False", v1.ReasonPoolNotFound), []string{W + "/PoolNotFound/Allocate"}},
		{"workload Service missing", &v1.LeasedIPStatus{}, st("False", v1.ReasonSelectorNotFound), []string{W + "/SelectorNotFound/Allocate"}},
		{"allocated", st("False", v1.ReasonPoolExhausted), st("True", v1.ReasonAllocated), []string{N + "/Allocated/Allocate"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := summary(LeasedIP(tc.prev, tc.next))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("events = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGatewayEvents(t *testing.T) {
	const prefix = "config not published: "
	prev := map[string]string{"infra/a": prefix + "route r has no cluster", "infra/b": "proxy p rejected Listener version 3: bad"}
	next := map[string]string{"infra/a": prefix + "route r has no cluster", "infra/c": "proxy q rejected Cluster version 7: bad"}
	got := map[string]string{}
	for gw, ev := range Gateway(prev, next, prefix) {
		got[gw] = ev.Type + "/" + ev.Reason
	}
	want := map[string]string{
		"infra/b": corev1.EventTypeNormal + "/" + v1.ReasonConfigPublished,
		"infra/c": corev1.EventTypeWarning + "/" + v1.ReasonConfigNACKed,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	if evs := Gateway(nil, map[string]string{"infra/a": prefix + "x"}, prefix); evs["infra/a"].Reason != v1.ReasonConfigRefused {
		t.Errorf("refused config: %+v", evs)
	}
}

func TestMemoryDropsARepeatFromAStaleRead(t *testing.T) {
	var m Memory
	allocated := Event{Type: corev1.EventTypeNormal, Reason: v1.ReasonAllocated, Action: ActionAllocate, Message: "MetalLB assigned 192.0.2.1"}
	exhausted := Event{Type: corev1.EventTypeWarning, Reason: v1.ReasonPoolExhausted, Action: ActionAllocate, Message: "no addresses"}
	steps := []struct {
		uid  string
		ev   Event
		want bool
	}{
		{"a", exhausted, true},
		{"a", allocated, true},
		{"a", allocated, false}, // the same transition computed again from a stale copy
		{"b", allocated, true},  // another object
		{"a", exhausted, true},  // a real change back
		{"a", allocated, true},
		{"a", Event{Type: corev1.EventTypeWarning, Reason: "HostnameInUse", Action: ActionAdmit, Subject: "shard-a"}, true},
		{"a", Event{Type: corev1.EventTypeWarning, Reason: "HostnameInUse", Action: ActionAdmit, Subject: "shard-b"}, true},
	}
	for i, s := range steps {
		if got := m.First(s.uid, s.ev); got != s.want {
			t.Errorf("step %d: First = %v, want %v", i, got, s.want)
		}
	}
	m.Forget("a")
	if !m.First("a", allocated) {
		t.Error("after Forget, the object's Events are new again")
	}
}
