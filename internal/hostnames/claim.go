package hostnames

import (
	"fmt"
	"time"
)

// LeaseKey is the claim key: the deployment that holds a name. Leases that
// differ only in oseq are the same deployment and so the same key; oseq is
// deliberately not part of it.
type LeaseKey struct {
	Owner string
	DSeq  uint64
	GSeq  uint32
}

// String is for logs and tests only. It names the owner, so it must never be
// put into a message shown to another tenant.
func (k LeaseKey) String() string {
	return fmt.Sprintf("%s/%d/%d", k.Owner, k.DSeq, k.GSeq)
}

// ClaimID identifies a claimant: one LeaseHost object.
type ClaimID struct {
	// UID is the object's metadata.uid.
	UID string
	// Created is the object's metadata.creationTimestamp.
	Created time.Time
}

// Claimant is one LeaseHost asking for one name.
type Claimant struct {
	ClaimID
	// Key is the claim key the LeaseHost's lease belongs to.
	Key LeaseKey
	// Host is the requested hostname as written in the spec; the engine
	// normalises it (Normalise).
	Host string
	// Takeover is spec.takeover: move the name from another deployment of
	// the same owner to this one.
	Takeover bool
	// Holding is the status hint used to rebuild state after a restart: true
	// when the object's status says Reserved=True for exactly this Host
	// (the controller must not set it when the spec's host has changed
	// since). Only Restore, the cold start, reads it: there hint carriers
	// take precedence over older claimants, so a holder keeps its name
	// across restarts. Upsert ignores it: while the engine runs, its own
	// record of who holds a name is the authority, and a status (which a
	// tenant may be able to write) never moves a name from a live holder.
	Holding bool
	// Object is the object the claim belongs to (the LeaseHost's UID): a
	// LeaseHost claims one name per shard, each a claimant of its own.
	// ClaimsOf and ReleaseObject answer for an object as a whole. Empty
	// means UID.
	Object string
}

// Older reports whether a is older than b: the earlier creationTimestamp, then
// the smaller UID. It is the one comparator that settles every tie in this
// package, as RouteLessThan does in the OpenShift router.
func Older(a, b Claimant) bool {
	if !a.Created.Equal(b.Created) {
		return a.Created.Before(b.Created)
	}
	return a.UID < b.UID
}

// State groups reasons for metrics.
type State string

const (
	StateReserved State = "reserved"
	StateWithheld State = "withheld" // Withheld and TransferredAway
	StateRefused  State = "refused"  // Blocked, HostnameInUse, InvalidHostname
)

// Decision is the engine's answer for one claimant: the LeaseHost's Reserved
// condition.
type Decision struct {
	// Host is the normalised name; empty when the request was invalid.
	Host     string
	Reserved bool
	Reason   Reason
	// Message is for the claimant's own status. It never names another
	// tenant: no owner, UID or namespace of anyone else. For the same owner
	// it names the holding deployment by dseq and gseq.
	Message string
}

// State returns the metrics bucket of d.
func (d Decision) State() State {
	switch d.Reason {
	case ReasonReserved:
		return StateReserved
	case ReasonWithheld, ReasonTransferredAway:
		return StateWithheld
	default:
		return StateRefused
	}
}

// Change is a claimant whose decision changed as a consequence of another
// call, so that the controller can requeue it and update its status.
type Change struct {
	UID string
	Old Decision
	New Decision
}

func reservedDecision(host string) Decision {
	return Decision{Host: host, Reserved: true, Reason: ReasonReserved,
		Message: fmt.Sprintf("hostname %q is reserved for this lease", host)}
}

func blockedDecision(host, entry, reservedWhy string) Decision {
	msg := fmt.Sprintf("hostname %q is blocked by the provider's block list entry %q", host, entry)
	if reservedWhy != "" {
		msg = fmt.Sprintf("hostname %q is reserved for the provider's shard: %s", host, reservedWhy)
	}
	if lookalike(host, entry) {
		msg += " (it is a look-alike of a blocked name)"
	}
	return Decision{Host: host, Reason: ReasonBlocked, Message: msg}
}

func inUseDecision(host string) Decision {
	return Decision{Host: host, Reason: ReasonHostnameInUse,
		Message: fmt.Sprintf("hostname %q is in use by another tenant", host)}
}

func withheldDecision(host string, holder LeaseKey) Decision {
	return Decision{Host: host, Reason: ReasonWithheld,
		Message: fmt.Sprintf("hostname %q is held by deployment dseq=%d gseq=%d of the same owner; set spec.takeover to move it here",
			host, holder.DSeq, holder.GSeq)}
}

func transferredDecision(host string, holder LeaseKey) Decision {
	return Decision{Host: host, Reason: ReasonTransferredAway,
		Message: fmt.Sprintf("hostname %q was moved by takeover to deployment dseq=%d gseq=%d of the same owner",
			host, holder.DSeq, holder.GSeq)}
}

func invalidDecision(err error) Decision {
	return Decision{Reason: ReasonInvalidHostname, Message: err.Error()}
}
