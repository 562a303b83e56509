package addresses

import (
	"fmt"
	"strconv"
	"strings"

	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// MetalLB's controller Event reasons on Services (metallb v0.15
// controller/service.go).
const (
	// EventAllocationFailed: no address could be assigned. The message is
	// `Failed to allocate IP for "<ns>/<name>": <error>`.
	EventAllocationFailed = "AllocationFailed"
	// EventLoadBalancerFailed: the requested addresses are invalid.
	EventLoadBalancerFailed = "LoadBalancerFailed"
	// EventIPAllocated: an address was assigned.
	EventIPAllocated = "IPAllocated"
	// EventClearAssignment: an assigned address is no longer allowed and was
	// dropped; MetalLB tries again.
	EventClearAssignment = "ClearAssignment"
)

// allocationEvents are the reasons LatestAllocationEvent considers.
var allocationEvents = map[string]bool{
	EventAllocationFailed: true, EventLoadBalancerFailed: true, EventIPAllocated: true, EventClearAssignment: true,
}

// IsAllocationEvent reports whether ev is one of MetalLB's allocation
// Events about a Service.
func IsAllocationEvent(ev *corev1.Event) bool {
	return ev.InvolvedObject.Kind == "Service" && allocationEvents[ev.Reason]
}

// LatestAllocationEvent returns the newest of MetalLB's allocation Events
// about the Service with uid, or nil. Events of an earlier Service with the
// same name do not count. Newest is by last timestamp (seconds), then by
// resourceVersion, so an Event that repeats (count+1) moves to the front.
func LatestAllocationEvent(events []corev1.Event, uid string) *corev1.Event {
	var latest *corev1.Event
	for i := range events {
		ev := &events[i]
		if string(ev.InvolvedObject.UID) != uid || !IsAllocationEvent(ev) {
			continue
		}
		if latest == nil || newer(ev, latest) {
			latest = ev
		}
	}
	return latest
}

func eventTime(ev *corev1.Event) metav1.Time {
	t := ev.LastTimestamp
	if ev.Series != nil && ev.Series.LastObservedTime.After(t.Time) {
		t = metav1.NewTime(ev.Series.LastObservedTime.Time)
	}
	if t.IsZero() && !ev.EventTime.IsZero() {
		t = metav1.NewTime(ev.EventTime.Time)
	}
	if t.IsZero() {
		t = ev.FirstTimestamp
	}
	return t
}

func newer(a, b *corev1.Event) bool {
	ta, tb := eventTime(a), eventTime(b)
	if !ta.Equal(&tb) {
		return ta.After(tb.Time)
	}
	ra, _ := strconv.ParseUint(a.ResourceVersion, 10, 64)
	rb, _ := strconv.ParseUint(b.ResourceVersion, 10, 64)
	return ra > rb
}

// ClassifyEvent maps a MetalLB allocation Event to an Allocated reason:
//   - AllocationFailed with "no available IPs", "no suitable pool", or the
//     `["<nil>"] is not allowed in config` that an exhausted
//     metallb.io/address-pool gives: PoolExhausted;
//   - AllocationFailed with `unknown pool`: PoolNotFound;
//   - AllocationFailed or LoadBalancerFailed because the address cannot be
//     shared (a port already in use on it, a different sharing key, a
//     pool that does not hold it, an address no pool holds):
//     AddressConflict;
//   - anything else (IPAllocated, ClearAssignment, another failure):
//     Pending, since MetalLB is still converging.
//
// The message quotes MetalLB.
func ClassifyEvent(ev *corev1.Event) (reason, message string) {
	msg := ev.Message
	quoted := "MetalLB: " + msg
	if ev.Reason != EventAllocationFailed && ev.Reason != EventLoadBalancerFailed {
		return shardgatev1alpha1.ReasonPending, "waiting for MetalLB to assign an address; last " + ev.Reason + ": " + msg
	}
	switch {
	case strings.Contains(msg, "no available IPs"), strings.Contains(msg, "no suitable pool"),
		strings.Contains(msg, `"<nil>"`):
		return shardgatev1alpha1.ReasonPoolExhausted, quoted
	case strings.Contains(msg, "unknown pool"):
		return shardgatev1alpha1.ReasonPoolNotFound, quoted
	case strings.Contains(msg, "already in use"), strings.Contains(msg, "sharing key"),
		strings.Contains(msg, "does not allow sharing"), strings.Contains(msg, "not compatible"),
		strings.Contains(msg, "not allowed in config"), ev.Reason == EventLoadBalancerFailed:
		return shardgatev1alpha1.ReasonAddressConflict, quoted
	default:
		return shardgatev1alpha1.ReasonPending, quoted
	}
}

// Observed is what the controller read for one LeasedIP.
type Observed struct {
	// Target is the Service spec.service names; nil when it does not exist.
	Target *corev1.Service
	// Service is the Service named LeasedIPServiceName, whoever controls it;
	// nil when there is none.
	Service *corev1.Service
	// PoolMissing: spec.pool names an IPAddressPool that does not exist.
	PoolMissing bool
	// Pool is spec.pool's IPAddressPool, when set and found.
	Pool *metallbv1beta1.IPAddressPool
	// Event is LatestAllocationEvent for Service.
	Event *corev1.Event
	// Refused, when set, says why the LeasedIP may hold no address at all
	// (its namespace belongs to another owner, or to none); the controller
	// has deleted its Service.
	Refused *Refusal
}

// Refusal is an Allocated=False reason and message that no Service can fix.
type Refusal struct{ Reason, Message string }

// StatusFor computes lip's status from what was observed. The Allocated
// condition, first match wins:
//
//   - False/<Refused.Reason>: the LeasedIP may hold no address (see
//     Observed.Refused); it reports no Service and no IP;
//   - False/ServiceConflict: a Service with the name exists and another
//     object controls it; it is left alone;
//   - False/SelectorNotFound: spec.service does not exist (no Service is
//     created; an existing one is kept, with its address);
//   - False/PoolNotFound: spec.pool names no IPAddressPool;
//   - True/Allocated: the Service has an address;
//   - MetalLB's latest allocation Event, see ClassifyEvent;
//   - False/PoolExhausted: spec.pool's status.availableIPv4 (availableIPv6
//     for an IPv6 Service) is 0, once MetalLB has reported the pool's
//     status and unless the Service asks to share a sibling's address;
//   - the previous PoolExhausted or AddressConflict of the same generation
//     and Service, kept: a Pending without evidence (MetalLB's Event not yet
//     in the cache, pool counters MetalLB is rewriting) does not replace
//     what MetalLB already said, so the condition does not flap; an address,
//     a newer Event or a spec change replaces it;
//   - False/Pending otherwise.
//
// Conditions keep their last transition time while their status is
// unchanged.
func StatusFor(lip *shardgatev1alpha1.LeasedIP, obs Observed) shardgatev1alpha1.LeasedIPStatus {
	st := shardgatev1alpha1.LeasedIPStatus{
		ObservedGeneration: lip.Generation,
		SharingKey:         LeasedIPSharingKey(lip),
		Conditions:         lip.Status.DeepCopy().Conditions,
	}
	name := LeasedIPServiceName(lip)
	own := obs.Service
	if own != nil && !ControlledBy(own, string(lip.UID)) {
		own = nil
	}
	if obs.Refused != nil {
		c := metav1.Condition{Type: shardgatev1alpha1.ConditionAllocated, Status: metav1.ConditionFalse, ObservedGeneration: lip.Generation,
			Reason: obs.Refused.Reason, Message: obs.Refused.Message}
		meta.SetStatusCondition(&st.Conditions, c)
		return st
	}
	if own != nil {
		st.Service = own.Name
		st.IP = IngressIP(own)
	}
	c := metav1.Condition{Type: shardgatev1alpha1.ConditionAllocated, Status: metav1.ConditionFalse, ObservedGeneration: lip.Generation}
	switch {
	case obs.Service != nil && own == nil:
		c.Reason = shardgatev1alpha1.ReasonServiceConflict
		c.Message = fmt.Sprintf("Service %s exists and is not controlled by this LeasedIP; it is left alone", name)
	case obs.Target == nil:
		c.Reason = shardgatev1alpha1.ReasonSelectorNotFound
		c.Message = fmt.Sprintf("Service %s (spec.service) not found in namespace %s", lip.Spec.Service, lip.Namespace)
		if own == nil {
			c.Message += "; no LoadBalancer Service is created until it exists"
		}
	case obs.PoolMissing:
		c.Reason = shardgatev1alpha1.ReasonPoolNotFound
		c.Message = fmt.Sprintf("IPAddressPool %s (spec.pool) does not exist", lip.Spec.Pool)
	case st.IP != "":
		c.Status = metav1.ConditionTrue
		c.Reason = shardgatev1alpha1.ReasonAllocated
		c.Message = fmt.Sprintf("MetalLB assigned %s", st.IP)
	case obs.Event != nil && own != nil:
		c.Reason, c.Message = ClassifyEvent(obs.Event)
	case own != nil && poolExhausted(obs.Pool, own):
		c.Reason = shardgatev1alpha1.ReasonPoolExhausted
		c.Message = fmt.Sprintf("IPAddressPool %s has no available addresses", obs.Pool.Name)
	case own != nil && keepsDiagnosis(lip, own.Name):
		return st
	default:
		c.Reason = shardgatev1alpha1.ReasonPending
		c.Message = "waiting for MetalLB to assign an address"
	}
	meta.SetStatusCondition(&st.Conditions, c)
	return st
}

// keepsDiagnosis reports whether lip's Allocated condition is a MetalLB
// diagnosis (PoolExhausted or AddressConflict) of its current generation,
// about the Service named service.
func keepsDiagnosis(lip *shardgatev1alpha1.LeasedIP, service string) bool {
	prev := meta.FindStatusCondition(lip.Status.Conditions, shardgatev1alpha1.ConditionAllocated)
	if prev == nil || prev.Status != metav1.ConditionFalse || prev.ObservedGeneration != lip.Generation ||
		lip.Status.Service != service {
		return false
	}
	return prev.Reason == shardgatev1alpha1.ReasonPoolExhausted || prev.Reason == shardgatev1alpha1.ReasonAddressConflict
}

func poolExhausted(pool *metallbv1beta1.IPAddressPool, svc *corev1.Service) bool {
	if pool == nil || svc.Annotations[AnnotationLoadBalancerIPs] != "" {
		return false
	}
	s := pool.Status
	if len(svc.Spec.IPFamilies) > 0 && svc.Spec.IPFamilies[0] == corev1.IPv6Protocol {
		return s.AvailableIPv6 == 0 && s.AssignedIPv6 > 0
	}
	// 0 assigned and 0 available: MetalLB has not reported the pool yet.
	return s.AvailableIPv4 == 0 && s.AssignedIPv4 > 0
}
