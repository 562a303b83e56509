package events

import (
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// Event is one Kubernetes Event to emit about an object.
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type string
	// Reason is the condition reason that caused it (CamelCase, from
	// api/v1alpha1).
	Reason string
	// Action is what shardgate did: Reserve, Route, Admit, Allocate or
	// Publish.
	Action string
	// Message is for the user; it never names another owner.
	Message string
	// Subject is what the Event is about within the object: the shard's
	// name for Admit, "" otherwise. Events with one Action and Subject
	// replace each other (see Memory).
	Subject string
}

// Event actions.
const (
	ActionReserve  = "Reserve"
	ActionRoute    = "Route"
	ActionAdmit    = "Admit"
	ActionAllocate = "Allocate"
	ActionPublish  = "Publish"
)

// transitioned reports whether next differs from prev in status or reason
// (a message-only change is not a new decision).
func transitioned(prev, next *metav1.Condition) bool {
	if next == nil {
		return false
	}
	return prev == nil || prev.Status != next.Status || prev.Reason != next.Reason
}

// LeaseHost returns the Events for a LeaseHost whose status goes from prev
// to next:
//   - Reserved changed: the ownership decision (a refusal is a Warning,
//     except TransferredAway, which the owner asked for);
//   - Ready became False for a reason Reserved does not already carry (a
//     missing backend Service, a route name conflict, no shard, a shard
//     or every shard not admitting): a Warning; Ready becoming True is
//     Normal;
//   - while the name is reserved, a shard newly refusing it (a conflict on
//     that shard only, or its Gateway not accepting the route): a Warning
//     naming the shard. A shard still waiting (Pending) is not an Event.
func LeaseHost(prev, next *shardgatev1alpha1.LeaseHostStatus) []Event {
	var out []Event
	oldR := meta.FindStatusCondition(prev.Conditions, shardgatev1alpha1.ConditionReserved)
	newR := meta.FindStatusCondition(next.Conditions, shardgatev1alpha1.ConditionReserved)
	if transitioned(oldR, newR) {
		t := corev1.EventTypeNormal
		if newR.Status == metav1.ConditionFalse && newR.Reason != shardgatev1alpha1.ReasonTransferredAway {
			t = corev1.EventTypeWarning
		}
		out = append(out, Event{Type: t, Reason: newR.Reason, Action: ActionReserve, Message: newR.Message})
	}
	reservedTrue := newR != nil && newR.Status == metav1.ConditionTrue

	oldReady := meta.FindStatusCondition(prev.Conditions, shardgatev1alpha1.ConditionReady)
	newReady := meta.FindStatusCondition(next.Conditions, shardgatev1alpha1.ConditionReady)
	if reservedTrue && transitioned(oldReady, newReady) {
		switch {
		case newReady.Status == metav1.ConditionTrue:
			out = append(out, Event{Type: corev1.EventTypeNormal, Reason: newReady.Reason, Action: ActionRoute, Message: newReady.Message})
		case newReady.Reason != shardgatev1alpha1.ReasonPending:
			out = append(out, Event{Type: corev1.EventTypeWarning, Reason: newReady.Reason, Action: ActionRoute, Message: newReady.Message})
		}
	}

	if !reservedTrue {
		return out // the Reserved Event already says why no shard has it
	}
	oldShards := map[string]*metav1.Condition{}
	for i := range prev.Shards {
		oldShards[prev.Shards[i].Name] = meta.FindStatusCondition(prev.Shards[i].Conditions, shardgatev1alpha1.ConditionAdmitted)
	}
	for i := range next.Shards {
		sh := &next.Shards[i]
		c := meta.FindStatusCondition(sh.Conditions, shardgatev1alpha1.ConditionAdmitted)
		if c == nil || c.Status != metav1.ConditionFalse || !transitioned(oldShards[sh.Name], c) {
			continue
		}
		out = append(out, Event{
			Type: corev1.EventTypeWarning, Reason: c.Reason, Action: ActionAdmit, Subject: sh.Name,
			Message: fmt.Sprintf("shard %s (Gateway %s) refused %s: %s", sh.Name, sh.Gateway, sh.Host, c.Message),
		})
	}
	return out
}

// LeasedIP returns the Events for a LeasedIP whose status goes from prev to
// next: every change of the Allocated decision. Waiting for an address
// (Pending) and getting one are Normal; every other refusal (an exhausted
// or missing pool, a missing workload Service, a conflict) is a Warning.
func LeasedIP(prev, next *shardgatev1alpha1.LeasedIPStatus) []Event {
	oldC := meta.FindStatusCondition(prev.Conditions, shardgatev1alpha1.ConditionAllocated)
	newC := meta.FindStatusCondition(next.Conditions, shardgatev1alpha1.ConditionAllocated)
	if !transitioned(oldC, newC) {
		return nil
	}
	t := corev1.EventTypeNormal
	if newC.Status != metav1.ConditionTrue && newC.Reason != shardgatev1alpha1.ReasonPending {
		t = corev1.EventTypeWarning
	}
	return []Event{{Type: t, Reason: newC.Reason, Action: ActionAllocate, Message: newC.Message}}
}

// Gateway returns the Events for Gateways whose xDS publish problem (as in
// xds/server's PublishErrors: a refused config or a NACK) goes from prev to
// next, keyed by Gateway "namespace/name". refusedPrefix marks a refused
// config; any other message is a NACK. A problem that clears is Normal;
// a new or different one is a Warning. An unchanged one emits nothing.
func Gateway(prev, next map[string]string, refusedPrefix string) map[string]Event {
	out := map[string]Event{}
	for gw, msg := range next {
		if prev[gw] == msg {
			continue
		}
		reason := shardgatev1alpha1.ReasonConfigNACKed
		if strings.HasPrefix(msg, refusedPrefix) {
			reason = shardgatev1alpha1.ReasonConfigRefused
		}
		out[gw] = Event{Type: corev1.EventTypeWarning, Reason: reason, Action: ActionPublish, Message: msg}
	}
	for gw := range prev {
		if _, still := next[gw]; !still {
			out[gw] = Event{Type: corev1.EventTypeNormal, Reason: shardgatev1alpha1.ReasonConfigPublished, Action: ActionPublish,
				Message: "the config is published and no proxy rejects it"}
		}
	}
	return out
}

// Memory remembers the last Event emitted per object, Action and Subject,
// so that a reconcile that starts from a stale cached copy of the object
// (its status not yet showing the previous write) does not emit the same
// Event a second time. It is safe for concurrent use.
type Memory struct {
	mu   sync.Mutex
	last map[string]string
}

// First reports whether ev is not the Event last emitted for the object
// with this uid, Action and Subject, and records it.
func (m *Memory) First(uid string, ev Event) bool {
	key := uid + "\x00" + ev.Action + "\x00" + ev.Subject
	val := ev.Type + "\x00" + ev.Reason + "\x00" + ev.Message
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[string]string{}
	}
	if m.last[key] == val {
		return false
	}
	m.last[key] = val
	return true
}

// Forget drops what is remembered of the object with this uid (it was
// deleted).
func (m *Memory) Forget(uid string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	prefix := uid + "\x00"
	for k := range m.last {
		if strings.HasPrefix(k, prefix) {
			delete(m.last, k)
		}
	}
}
