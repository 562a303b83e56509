package hostnames

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// lh builds a claimant: uid, creation second, owner, dseq and host.
func lh(uid string, sec int, owner string, dseq uint64, host string) Claimant {
	return Claimant{
		ClaimID: ClaimID{UID: uid, Created: t0.Add(time.Duration(sec) * time.Second)},
		Key:     LeaseKey{Owner: owner, DSeq: dseq, GSeq: 1},
		Host:    host,
	}
}

func (c Claimant) withTakeover() Claimant { c.Takeover = true; return c }
func (c Claimant) withHolding() Claimant  { c.Holding = true; return c }
func (c Claimant) withHost(h string) Claimant {
	c.Host = h
	return c
}

// step is one call on the engine and what must come of it.
type step struct {
	upsert *Claimant
	remove string
	block  []string // when non-nil: SetBlockList(block...)

	want    Reason            // the upserted claimant's reason
	changes map[string]Reason // exactly the reported changes: uid -> new reason
	holders map[string]string // host -> holder uid, "" for none
}

func up(c Claimant, want Reason, changes map[string]Reason, holders map[string]string) step {
	return step{upsert: &c, want: want, changes: changes, holders: holders}
}

func rm(uid string, changes map[string]Reason, holders map[string]string) step {
	return step{remove: uid, changes: changes, holders: holders}
}

func blk(entries []string, changes map[string]Reason, holders map[string]string) step {
	if entries == nil {
		entries = []string{}
	}
	return step{block: entries, changes: changes, holders: holders}
}

type chg = map[string]Reason
type hld = map[string]string

const (
	hostA = "app.tenant.io"
	hostB = "api.tenant.io"
)

func TestEngineScenarios(t *testing.T) {
	scenarios := []struct {
		name  string
		steps []step
	}{
		{"cross-owner refusal leaves state unchanged", []step{
			up(lh("a1", 1, "alice", 1, hostA), ReasonReserved, nil, hld{hostA: "a1"}),
			up(lh("b1", 2, "bob", 1, hostA), ReasonHostnameInUse, nil, hld{hostA: "a1"}),
			up(lh("b1", 2, "bob", 1, "APP.Tenant.IO"), ReasonHostnameInUse, nil, hld{hostA: "a1"}),
		}},
		{"same owner, other deployment is withheld", []step{
			up(lh("a1", 1, "alice", 1, hostA), ReasonReserved, nil, hld{hostA: "a1"}),
			up(lh("a2", 2, "alice", 2, hostA), ReasonWithheld, nil, hld{hostA: "a1"}),
		}},
		{"leases differing only in oseq share the name", []step{
			up(lh("a1", 1, "alice", 1, hostA), ReasonReserved, nil, hld{hostA: "a1"}),
			up(lh("a1b", 2, "alice", 1, hostA), ReasonReserved, nil, hld{hostA: "a1"}),
			up(lh("b1", 3, "bob", 1, hostA), ReasonHostnameInUse, nil, hld{hostA: "a1"}),
			// the key keeps the name while any of its claimants is live
			rm("a1", nil, hld{hostA: "a1b"}),
			rm("a1b", chg{"b1": ReasonReserved}, hld{hostA: "b1"}),
		}},
		{"release promotes the oldest waiter, UID breaks ties", []step{
			up(lh("a1", 1, "alice", 1, hostA), ReasonReserved, nil, hld{hostA: "a1"}),
			up(lh("w-z", 5, "bob", 1, hostA), ReasonHostnameInUse, nil, nil),
			up(lh("w-y", 3, "carol", 1, hostA), ReasonHostnameInUse, nil, nil),
			up(lh("w-x", 3, "dave", 1, hostA), ReasonHostnameInUse, nil, nil),
			rm("a1", chg{"w-x": ReasonReserved}, hld{hostA: "w-x"}),
			rm("w-x", chg{"w-y": ReasonReserved}, hld{hostA: "w-y"}),
			rm("w-y", chg{"w-z": ReasonReserved}, hld{hostA: "w-z"}),
			rm("w-z", nil, hld{hostA: ""}),
			rm("w-z", nil, nil), // unknown uid: no-op
		}},
		{"a claim re-pointed to another owner's lease takes nothing from the old owner's waiter", []step{
			up(lh("x", 1, "alice", 1, hostA), ReasonReserved, nil, hld{hostA: "x"}),
			up(lh("a2", 2, "alice", 2, hostA), ReasonWithheld, nil, hld{hostA: "x"}),
			// the same object, now for bob's lease: alice releases the name
			// (her waiting deployment gets it) and bob's request is refused
			up(lh("x", 1, "bob", 7, hostA), ReasonHostnameInUse, chg{"a2": ReasonReserved}, hld{hostA: "a2"}),
			// and pointed back: alice's again, withheld behind a2
			up(lh("x", 1, "alice", 1, hostA), ReasonWithheld, nil, hld{hostA: "a2"}),
		}},
		{"a claim re-pointed to another owner's lease, nobody else asking: released, then reserved", []step{
			up(lh("x", 1, "alice", 1, hostA), ReasonReserved, nil, hld{hostA: "x"}),
			up(lh("x", 1, "bob", 7, hostA), ReasonReserved, nil, hld{hostA: "x"}),
			up(lh("b2", 3, "bob", 8, hostA), ReasonWithheld, nil, hld{hostA: "x"}),
		}},
		{"release to a waiter of the same owner", []step{
			up(lh("a1", 1, "alice", 1, hostA), ReasonReserved, nil, nil),
			up(lh("a2", 2, "alice", 2, hostA), ReasonWithheld, nil, nil),
			up(lh("b1", 3, "bob", 1, hostA), ReasonHostnameInUse, nil, nil),
			rm("a1", chg{"a2": ReasonReserved}, hld{hostA: "a2"}),
		}},
		{"takeover within owner", []step{
			up(lh("a1", 1, "alice", 1, hostA), ReasonReserved, nil, nil),
			up(lh("a1b", 2, "alice", 1, hostA), ReasonReserved, nil, nil),
			up(lh("b1", 3, "bob", 1, hostA), ReasonHostnameInUse, nil, nil),
			up(lh("a2", 4, "alice", 2, hostA).withTakeover(), ReasonReserved,
				chg{"a1": ReasonTransferredAway, "a1b": ReasonTransferredAway}, hld{hostA: "a2"}),
			// a later plain request of a third deployment waits; a takeover
			// holds the name, so it too is told the name was transferred
			up(lh("a3", 5, "alice", 3, hostA), ReasonTransferredAway, nil, hld{hostA: "a2"}),
			// the status write-back (hints) changes nothing
			up(lh("a2", 4, "alice", 2, hostA).withTakeover().withHolding(), ReasonReserved, nil, hld{hostA: "a2"}),
			// once the taker is gone the oldest waiter comes back; a3's message names the new holder
			rm("a2", chg{"a1": ReasonReserved, "a1b": ReasonReserved, "a3": ReasonWithheld}, hld{hostA: "a1"}),
		}},
		{"a status hint moves nothing from a live holder", []step{
			up(lh("a1", 5, "alice", 1, hostA), ReasonReserved, nil, hld{hostA: "a1"}),
			// an older object of another owner whose status claims the name
			up(lh("b1", 1, "bob", 1, hostA).withHolding(), ReasonHostnameInUse, nil, hld{hostA: "a1"}),
			up(lh("b1", 1, "bob", 1, hostA).withHolding().withTakeover(), ReasonHostnameInUse, nil, hld{hostA: "a1"}),
			// an older deployment of the same owner whose status claims it
			up(lh("a2", 2, "alice", 2, hostA).withHolding(), ReasonWithheld, nil, hld{hostA: "a1"}),
			// the holder leaves: the oldest waiter is promoted, hint or not
			rm("a1", chg{"b1": ReasonReserved, "a2": ReasonHostnameInUse}, hld{hostA: "b1"}),
		}},
		{"takeover across owners is refused", []step{
			up(lh("a1", 1, "alice", 1, hostA), ReasonReserved, nil, nil),
			up(lh("b1", 2, "bob", 1, hostA).withTakeover(), ReasonHostnameInUse, nil, hld{hostA: "a1"}),
			// a1's status is written; a (stale) hint on b2 does not beat the older hint
			up(lh("a1", 1, "alice", 1, hostA).withHolding(), ReasonReserved, nil, nil),
			up(lh("b2", 3, "bob", 2, hostA).withTakeover().withHolding(), ReasonHostnameInUse, nil, hld{hostA: "a1"}),
		}},
		{"a live holder keeps the name against an older object", []step{
			up(lh("b1", 5, "bob", 1, hostA), ReasonReserved, nil, nil),
			up(lh("a1", 1, "alice", 1, hostA), ReasonHostnameInUse, nil, hld{hostA: "b1"}),
			// an older object whose hostname is edited to the name waits too
			up(lh("c1", 3, "carol", 1, hostB), ReasonReserved, nil, nil),
			up(lh("c1", 3, "carol", 1, hostA), ReasonHostnameInUse, nil, hld{hostA: "b1", hostB: ""}),
			// the holder leaves: the oldest waiter is promoted
			rm("b1", chg{"a1": ReasonReserved}, hld{hostA: "a1"}),
		}},
		{"block added after a claim revokes it; removing it re-admits", []step{
			up(lh("a1", 1, "alice", 1, hostA), ReasonReserved, nil, nil),
			up(lh("b1", 2, "bob", 1, hostA), ReasonHostnameInUse, nil, nil),
			up(lh("c1", 3, "carol", 1, hostB), ReasonReserved, nil, nil),
			blk([]string{".tenant.io"}, chg{"a1": ReasonBlocked, "b1": ReasonBlocked, "c1": ReasonBlocked}, hld{hostA: "", hostB: ""}),
			up(lh("d1", 4, "dave", 1, hostA), ReasonBlocked, nil, nil),
			blk([]string{"api.tenant.io"}, chg{"a1": ReasonReserved, "b1": ReasonHostnameInUse, "d1": ReasonHostnameInUse, "c1": ReasonBlocked /* now by another entry */}, hld{hostA: "a1", hostB: ""}),
			blk(nil, chg{"c1": ReasonReserved}, hld{hostA: "a1", hostB: "c1"}),
		}},
		{"unblocking admits the oldest waiter", []step{
			blk([]string{hostA}, nil, nil),
			up(lh("late", 9, "bob", 1, hostA), ReasonBlocked, nil, nil),
			up(lh("early", 1, "alice", 1, hostA), ReasonBlocked, nil, nil),
			blk(nil, chg{"late": ReasonHostnameInUse, "early": ReasonReserved}, hld{hostA: "early"}),
		}},
		{"host change releases the old name and promotes", []step{
			up(lh("a1", 1, "alice", 1, hostA), ReasonReserved, nil, nil),
			up(lh("b1", 2, "bob", 1, hostA), ReasonHostnameInUse, nil, nil),
			up(lh("a1", 1, "alice", 1, hostB), ReasonReserved, chg{"b1": ReasonReserved}, hld{hostA: "b1", hostB: "a1"}),
			// and back: the name is now bob's, whose status says so
			up(lh("b1", 2, "bob", 1, hostA).withHolding(), ReasonReserved, nil, nil),
			up(lh("a1", 1, "alice", 1, hostA), ReasonHostnameInUse, nil, hld{hostA: "b1", hostB: ""}),
		}},
		{"host change to an invalid name releases the old name", []step{
			up(lh("a1", 1, "alice", 1, hostA), ReasonReserved, nil, nil),
			up(lh("a2", 2, "alice", 2, hostA), ReasonWithheld, nil, nil),
			up(lh("a1", 1, "alice", 1, "*.tenant.io"), ReasonInvalidHostname, chg{"a2": ReasonReserved}, hld{hostA: "a2"}),
			up(lh("a1", 1, "alice", 1, "app.tenant.io."), ReasonInvalidHostname, nil, nil),
			rm("a1", nil, hld{hostA: "a2"}),
		}},
		{"invalid names never hold anything", []step{
			up(lh("x1", 1, "alice", 1, ""), ReasonInvalidHostname, nil, nil),
			up(lh("x2", 1, "alice", 1, strings.Repeat("a", 64)+".io"), ReasonInvalidHostname, nil, nil),
			up(lh("x3", 1, "alice", 1, "wild.*.io"), ReasonInvalidHostname, nil, nil),
		}},
	}

	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			e := New(nil)
			for i, st := range sc.steps {
				before := e.Snapshot()
				var changes []Change
				subject := ""
				switch {
				case st.upsert != nil:
					subject = st.upsert.UID
					var d Decision
					d, changes = e.Upsert(*st.upsert)
					if d.Reason != st.want || d.Reserved != (st.want == ReasonReserved) {
						t.Fatalf("step %d: Upsert(%s) = %+v; want reason %s", i, subject, d, st.want)
					}
					if got, ok := e.Decision(subject); !ok || got != d {
						t.Fatalf("step %d: Decision(%s) = %+v; Upsert returned %+v", i, subject, got, d)
					}
				case st.remove != "":
					subject = st.remove
					changes = e.Remove(st.remove)
					if _, ok := e.Decision(subject); ok {
						t.Fatalf("step %d: %s still has a decision after Remove", i, subject)
					}
				default:
					changes = e.SetBlockList(MustBlockList(st.block...))
				}
				got := map[string]Reason{}
				for _, c := range changes {
					got[c.UID] = c.New.Reason
				}
				want := st.changes
				if want == nil {
					want = map[string]Reason{}
				}
				if !maps.Equal(got, want) {
					t.Fatalf("step %d: changes %v; want %v", i, got, want)
				}
				checkChangesExact(t, before, e.Snapshot(), subject, changes)
				for host, uid := range st.holders {
					h, ok := e.Holder(host)
					if ok != (uid != "") || h.UID != uid {
						t.Fatalf("step %d: Holder(%s) = %q, %v; want %q", i, host, h.UID, ok, uid)
					}
				}
				checkInvariants(t, e)
			}
		})
	}
}

// checkChangesExact checks that changes lists exactly the claimants other than
// subject whose decision differs between before and after, with the right
// old and new decisions, sorted by UID.
func checkChangesExact(t testing.TB, before, after Snapshot, subject string, changes []Change) {
	t.Helper()
	old := map[string]Decision{}
	for _, cs := range before.Claims {
		old[cs.Claimant.UID] = cs.Decision
	}
	want := map[string]Change{}
	for _, cs := range after.Claims {
		uid := cs.Claimant.UID
		if uid == subject {
			continue
		}
		if o, ok := old[uid]; ok && o != cs.Decision {
			want[uid] = Change{UID: uid, Old: o, New: cs.Decision}
		}
	}
	got := map[string]Change{}
	for _, c := range changes {
		if _, dup := got[c.UID]; dup {
			t.Fatalf("change for %s reported twice", c.UID)
		}
		got[c.UID] = c
	}
	if !maps.Equal(got, want) {
		t.Fatalf("changes %+v;\nwant %+v", got, want)
	}
	if !slices.IsSortedFunc(changes, func(a, b Change) int { return strings.Compare(a.UID, b.UID) }) {
		t.Fatalf("changes are not sorted by UID: %+v", changes)
	}
}

func TestCanReserve(t *testing.T) {
	e := New(MustBlockList(".blocked.io"))
	e.Upsert(lh("a1", 1, "alice", 1, hostA))
	e.Upsert(lh("a2", 2, "alice", 2, hostA))
	tests := []struct {
		owner, host string
		want        Reason // "" = may reserve
	}{
		{"alice", hostA, ""}, // same owner: reachable with takeover
		{"alice", "APP.TENANT.IO", ""},
		{"bob", hostA, ReasonHostnameInUse},
		{"bob", hostB, ""},
		{"bob", "x.blocked.io", ReasonBlocked},
		{"alice", "blocked.io", ReasonBlocked},
		{"bob", "*.tenant.io", ReasonInvalidHostname},
		{"bob", "", ReasonInvalidHostname},
	}
	for _, tt := range tests {
		err := e.CanReserve(tt.owner, tt.host)
		if tt.want == "" {
			if err != nil {
				t.Errorf("CanReserve(%s, %q) = %v; want nil", tt.owner, tt.host, err)
			}
			continue
		}
		var herr *Error
		if !errors.As(err, &herr) || herr.Reason != tt.want {
			t.Errorf("CanReserve(%s, %q) = %v; want reason %s", tt.owner, tt.host, err, tt.want)
			continue
		}
		if strings.Contains(err.Error(), "alice") || strings.Contains(err.Error(), "a1") {
			t.Errorf("CanReserve(%s, %q) error %q names the holder", tt.owner, tt.host, err)
		}
	}
	if err := e.CanReserve("bob", "x.blocked.io"); err == nil || !strings.Contains(err.Error(), `".blocked.io"`) {
		t.Errorf("blocked error %v does not name the entry", err)
	}
	// CanReserve changes nothing.
	before := e.Snapshot()
	_ = e.CanReserve("bob", hostB)
	if !reflect.DeepEqual(before, e.Snapshot()) {
		t.Error("CanReserve changed the state")
	}
}

func TestMessagesNeverNameAnotherTenant(t *testing.T) {
	const (
		aliceOwner = "akash1alicesecretowner"
		aliceUID   = "uid-alice-0000-secret"
		bobOwner   = "akash1bobprivateowner"
		bobUID     = "uid-bob-1111-private"
	)
	e := New(nil)
	alice := lh(aliceUID, 1, aliceOwner, 7, hostA)
	bob := lh(bobUID, 2, bobOwner, 9, hostA)
	var decisions []Decision
	d, _ := e.Upsert(alice)
	decisions = append(decisions, d)
	d, _ = e.Upsert(bob)
	decisions = append(decisions, d)
	d, _ = e.Upsert(bob.withTakeover())
	decisions = append(decisions, d)
	for _, c := range e.Remove(aliceUID) {
		decisions = append(decisions, c.New, c.Old)
	}
	d, _ = e.Upsert(alice.withHost(hostA))
	decisions = append(decisions, d)
	for _, c := range e.SetBlockList(MustBlockList(".tenant.io")) {
		decisions = append(decisions, c.New, c.Old)
	}
	if len(decisions) < 6 {
		t.Fatalf("scenario produced only %d decisions", len(decisions))
	}
	for _, d := range decisions {
		for _, secret := range []string{aliceOwner, aliceUID, bobOwner, bobUID} {
			if strings.Contains(d.Message, secret) {
				t.Errorf("message %q contains %q", d.Message, secret)
			}
		}
	}
	if err := e.CanReserve(bobOwner, hostA); err == nil {
		t.Fatal("CanReserve on a blocked name succeeded")
	} else if strings.Contains(err.Error(), aliceOwner) || strings.Contains(err.Error(), aliceUID) {
		t.Errorf("CanReserve error %q names alice", err)
	}
}

func TestMessages(t *testing.T) {
	e := New(MustBlockList(".evil.example"))
	tests := []struct {
		c        Claimant
		contains []string
	}{
		{lh("a1", 1, "alice", 1, hostA), []string{`"app.tenant.io"`, "reserved"}},
		{lh("a2", 2, "alice", 42, hostA), []string{"dseq=1 gseq=1", "same owner", "takeover"}},
		{lh("b1", 3, "bob", 1, hostA), []string{"another tenant"}},
		{lh("a3", 4, "alice", 43, hostA).withTakeover(), []string{"reserved"}},
		{lh("a2", 2, "alice", 42, hostA), []string{"moved by takeover", "dseq=43"}},
		{lh("x1", 5, "bob", 2, "www.EVIL.example"), []string{`".evil.example"`, `"www.evil.example"`, "blocked"}},
		{lh("x2", 6, "bob", 3, "*.tenant.io"), []string{"wildcard"}},
	}
	for _, tt := range tests {
		d, _ := e.Upsert(tt.c)
		for _, s := range tt.contains {
			if !strings.Contains(d.Message, s) {
				t.Errorf("%s: message %q does not contain %q", tt.c.UID, d.Message, s)
			}
		}
	}
}

func TestOlder(t *testing.T) {
	a := lh("b", 1, "x", 1, hostA)
	b := lh("a", 2, "x", 1, hostA)
	c := lh("c", 1, "x", 1, hostA)
	tests := []struct {
		x, y Claimant
		want bool
	}{
		{a, b, true},  // earlier creation wins over a smaller UID
		{b, a, false}, //
		{a, c, true},  // same second: UID decides
		{c, a, false},
		{a, a, false},
	}
	for _, tt := range tests {
		if got := Older(tt.x, tt.y); got != tt.want {
			t.Errorf("Older(%s@%v, %s@%v) = %v; want %v", tt.x.UID, tt.x.Created, tt.y.UID, tt.y.Created, got, tt.want)
		}
	}
	// Equal instants in different locations are a tie.
	d := a
	d.UID = "a"
	d.Created = a.Created.In(time.FixedZone("x", 3600))
	if !Older(d, a) || Older(a, d) {
		t.Error("creation times in different zones must compare as instants")
	}
}

func TestStats(t *testing.T) {
	e := New(MustBlockList("blocked.io"))
	e.Upsert(lh("a1", 1, "alice", 1, hostA))
	e.Upsert(lh("a1b", 1, "alice", 1, hostA))
	e.Upsert(lh("a2", 2, "alice", 2, hostA))
	e.Upsert(lh("b1", 3, "bob", 1, hostA))
	e.Upsert(lh("b2", 3, "bob", 1, "blocked.io"))
	e.Upsert(lh("b3", 3, "bob", 1, "bad_name"))
	want := map[State]int{StateReserved: 2, StateWithheld: 1, StateRefused: 3}
	if got := e.Stats(); !maps.Equal(got, want) {
		t.Errorf("Stats() = %v; want %v", got, want)
	}
	e.Remove("a1")
	e.Remove("a1b")
	e.Remove("b3")
	want = map[State]int{StateReserved: 1, StateWithheld: 0, StateRefused: 2}
	if got := e.Stats(); !maps.Equal(got, want) {
		t.Errorf("after removes Stats() = %v; want %v", got, want)
	}
}

func TestSnapshotRebuild(t *testing.T) {
	e := New(MustBlockList(".blocked.io"))
	for _, c := range []Claimant{
		lh("a1", 1, "alice", 1, hostA),
		lh("a2", 2, "alice", 2, hostA).withTakeover(),
		lh("b1", 3, "bob", 1, hostA),
		lh("b2", 3, "bob", 1, hostB),
		lh("c1", 4, "carol", 1, "x.blocked.io"),
		lh("c2", 4, "carol", 1, "not valid"),
	} {
		e.Upsert(c)
	}
	s := e.Snapshot()
	// A restart: every claimant restored, with the hint its written status
	// gives (Holding in a snapshot is the engine's mark: Reserved).
	rebuilt := New(MustBlockList(s.Blocked...))
	var cs []Claimant
	for i := len(s.Claims) - 1; i >= 0; i-- {
		c := s.Claims[i].Claimant
		if c.Holding != s.Claims[i].Decision.Reserved {
			t.Errorf("%s: Holding %v with decision %s", c.UID, c.Holding, s.Claims[i].Decision.Reason)
		}
		cs = append(cs, c)
	}
	rebuilt.Restore(cs)
	if got := rebuilt.Snapshot(); !reflect.DeepEqual(got, s) {
		t.Errorf("rebuilt snapshot differs:\n got %+v\nwant %+v", got, s)
	}
	if s.Holders[hostA].UID != "a2" || s.Holders[hostB].UID != "b2" {
		t.Errorf("holders %+v", s.Holders)
	}
}

// TestRestore: the cold start is the only place a status hint counts, and
// there the result is the same whatever the order.
func TestRestore(t *testing.T) {
	cases := []struct {
		name    string
		claims  []Claimant
		holder  string
		reasons map[string]Reason
	}{
		{"no hints: the oldest holds",
			[]Claimant{lh("b1", 5, "bob", 1, hostA), lh("a1", 1, "alice", 1, hostA)},
			"a1", map[string]Reason{"b1": ReasonHostnameInUse}},
		{"a hint carrier beats an older object",
			[]Claimant{lh("b1", 5, "bob", 1, hostA).withHolding(), lh("a1", 1, "alice", 1, hostA)},
			"b1", map[string]Reason{"a1": ReasonHostnameInUse}},
		{"two hint carriers (ambiguous): the oldest hint carrier holds",
			[]Claimant{lh("b1", 5, "bob", 1, hostA).withHolding(), lh("c1", 3, "carol", 1, hostA).withHolding(), lh("a1", 1, "alice", 1, hostA)},
			"c1", map[string]Reason{"a1": ReasonHostnameInUse, "b1": ReasonHostnameInUse}},
		{"a takeover result survives through the hint once the flag is gone",
			[]Claimant{lh("a1", 1, "alice", 1, hostA), lh("a2", 4, "alice", 2, hostA).withHolding()},
			"a2", map[string]Reason{"a1": ReasonWithheld}},
		{"the newest takeover of the holding owner wins",
			[]Claimant{lh("a1", 1, "alice", 1, hostA).withHolding(), lh("a3", 3, "alice", 3, hostA).withTakeover(), lh("a2", 2, "alice", 2, hostA).withTakeover()},
			"a3", map[string]Reason{"a1": ReasonTransferredAway, "a2": ReasonTransferredAway}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var first Snapshot
			for round, order := range [][]Claimant{tc.claims, reversed(tc.claims)} {
				e := New(nil)
				got, changes := e.Restore(order)
				if len(changes) != 0 {
					t.Errorf("round %d: changes %+v on an empty engine", round, changes)
				}
				if h, ok := e.Holder(hostA); !ok || h.UID != tc.holder {
					t.Errorf("round %d: holder %q, %v; want %s", round, h.UID, ok, tc.holder)
				}
				for uid, want := range tc.reasons {
					if got[uid].Reason != want {
						t.Errorf("round %d: %s: %s; want %s", round, uid, got[uid].Reason, want)
					}
				}
				if round == 0 {
					first = e.Snapshot()
				} else if s := e.Snapshot(); !reflect.DeepEqual(s, first) {
					t.Errorf("restore depends on the order:\n got %s\nwant %s", dumpSnapshot(s), dumpSnapshot(first))
				}
				// After the cold start, hints count for nothing.
				for _, c := range tc.claims {
					if c.UID == tc.holder {
						continue
					}
					if d, _ := e.Upsert(c.withHolding()); d.Reserved {
						t.Errorf("round %d: a live hint on %s took the name: %+v", round, c.UID, d)
					}
				}
				if h, _ := e.Holder(hostA); h.UID != tc.holder {
					t.Errorf("round %d: after live hints the holder is %s; want %s", round, h.UID, tc.holder)
				}
			}
		})
	}
}

func reversed[T any](s []T) []T {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// TestReleaseObject: the engine's record of which object claims what is what
// a caller releases, so a re-created object of the same name (a new UID)
// neither inherits nor strands the old object's claims.
func TestReleaseObject(t *testing.T) {
	e := New(nil)
	old := func(uid, host string) Claimant {
		c := lh(uid, 1, "alice", 1, host)
		c.Object = "obj-old"
		return c
	}
	e.Upsert(old("obj-old/"+hostA, hostA))
	e.Upsert(old("obj-old/"+hostB, hostB))
	e.Upsert(lh("b1", 2, "bob", 1, hostA))
	// The re-created object: same name, new UID, a new deployment.
	next := lh("obj-new/"+hostA, 9, "alice", 2, hostA)
	next.Object = "obj-new"
	if d, _ := e.Upsert(next); d.Reason != ReasonWithheld {
		t.Fatalf("while the old object lives the new one is %s; want Withheld", d.Reason)
	}
	if got := e.ClaimsOf("obj-old"); len(got) != 2 || got[0].UID != "obj-old/"+hostB || got[1].UID != "obj-old/"+hostA {
		t.Fatalf("ClaimsOf(obj-old) = %+v", got)
	}
	changes := e.ReleaseObject("obj-old")
	if len(e.ClaimsOf("obj-old")) != 0 {
		t.Fatalf("claims of a released object remain: %+v", e.ClaimsOf("obj-old"))
	}
	// The oldest waiter (bob's, created before the new object) is promoted;
	// the new object then waits on another owner like any newcomer.
	if h, _ := e.Holder(hostA); h.UID != "b1" {
		t.Errorf("holder of %s: %s; want b1", hostA, h.UID)
	}
	if _, ok := e.Holder(hostB); ok {
		t.Errorf("%s is still held after its only claimant's object was released", hostB)
	}
	want := map[string]Reason{"b1": ReasonReserved, "obj-new/" + hostA: ReasonHostnameInUse}
	got := map[string]Reason{}
	for _, c := range changes {
		got[c.UID] = c.New.Reason
	}
	if !maps.Equal(got, want) {
		t.Errorf("changes %v; want %v", got, want)
	}
	if e.ReleaseObject("obj-old") != nil {
		t.Error("releasing an unknown object changed something")
	}
	checkInvariants(t, e)
}
