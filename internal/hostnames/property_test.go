package hostnames

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// intSource is what generates scenarios: math/rand for the property test,
// the fuzzer's bytes for FuzzEngine.
type intSource interface {
	IntN(n int) int
}

// The scenario universe: 3 owners x 2 deployments over 4 names, written in
// several spellings, plus one invalid spelling. Claimants belong to objects
// (LeaseHosts) in a few name slots; an object claims up to two names (one
// per shard), and a slot's object can be deleted and re-created with a new
// UID, the way a tenant redeploys.
var (
	propOwners = []string{"owner-a", "owner-b", "owner-c"}
	propHosts  = []string{
		"a.example.com", "A.Example.COM",
		"example.com",
		"www.other.org",
		"Bücher.example", "xn--bcher-kva.example",
	}
	propInvalidHosts = []string{"a.example.com.", "*.example.com", "bad_host.org"}
	propBlocks       = []string{".example.com", "example.com", "a.example.com", "www.other.org", ".other.org", ".bücher.example"}
	propSlots        = []string{"lh-0", "lh-1", "lh-2", "lh-3", "lh-4", "lh-5", "lh-6"}
	propParts        = []string{"0", "1"}
)

type opKind int

const (
	opUpsert   opKind = iota
	opRemove          // one claimant goes (its shard stops selecting the object)
	opBlock           // the block list changes
	opDelete          // the slot's object is deleted: ReleaseObject
	opRecreate        // deleted and re-created in one step, with a new UID
)

type op struct {
	kind  opKind
	c     Claimant // opUpsert, opRecreate (the new object's claimant)
	uid   string   // opRemove
	obj   string   // opDelete, opRecreate (the old object)
	block []string // opBlock
}

func (o op) String() string {
	switch o.kind {
	case opUpsert:
		return fmt.Sprintf("upsert(%s t=%d %s host=%q takeover=%v holding=%v)",
			o.c.UID, o.c.Created.Unix()-t0.Unix(), o.c.Key, o.c.Host, o.c.Takeover, o.c.Holding)
	case opRemove:
		return fmt.Sprintf("remove(%s)", o.uid)
	case opDelete:
		return fmt.Sprintf("releaseObject(%s)", o.obj)
	case opRecreate:
		return fmt.Sprintf("releaseObject(%s)+upsert(%s t=%d %s host=%q takeover=%v)",
			o.obj, o.c.UID, o.c.Created.Unix()-t0.Unix(), o.c.Key, o.c.Host, o.c.Takeover)
	default:
		return fmt.Sprintf("block(%q)", o.block)
	}
}

// harness applies ops to an engine and checks the invariants after each.
type harness struct {
	t     testing.TB
	e     *Engine
	gen   map[string]int      // slot -> generation of its current object
	ident map[string]Claimant // object -> fixed identity (creation time, key)
	live  map[string]Claimant // claimant UID -> as last upserted
	block []string
	log   []op
}

func newHarness(t testing.TB) *harness {
	return &harness{t: t, e: New(nil), gen: map[string]int{}, ident: map[string]Claimant{}, live: map[string]Claimant{}}
}

func (h *harness) object(slot string) string { return fmt.Sprintf("%s#%d", slot, h.gen[slot]) }

// identity is the fixed identity of the slot's current object: a later
// generation is created later, as a re-created object is.
func (h *harness) identity(slot string, src intSource) Claimant {
	obj := h.object(slot)
	if c, ok := h.ident[obj]; ok {
		return c
	}
	c := Claimant{
		// few distinct seconds, so UID tie-breaks matter
		ClaimID: ClaimID{Created: t0.Add(time.Duration(4*h.gen[slot]+src.IntN(4)) * time.Second)},
		Key:     LeaseKey{Owner: propOwners[src.IntN(len(propOwners))], DSeq: uint64(1 + h.gen[slot] + src.IntN(2)), GSeq: 1},
		Object:  obj,
	}
	h.ident[obj] = c
	return c
}

// claimant draws a claimant of the slot's current object.
func (h *harness) claimant(slot string, src intSource) Claimant {
	c := h.identity(slot, src)
	c.UID = c.Object + "/" + propParts[src.IntN(len(propParts))]
	if prev, ok := h.live[c.UID]; ok && src.IntN(2) == 0 {
		c.Host = prev.Host
	} else {
		c.Host = randomHost(src)
	}
	c.Takeover = src.IntN(4) == 0
	// Ignored by Upsert: a live hint (a forged or stale status) must not
	// matter, and the invariants below check that it does not.
	c.Holding = src.IntN(4) == 0
	return c
}

func randomHost(src intSource) string {
	if src.IntN(12) == 0 {
		return propInvalidHosts[src.IntN(len(propInvalidHosts))]
	}
	return propHosts[src.IntN(len(propHosts))]
}

func randomBlock(src intSource) []string {
	out := []string{}
	for _, b := range propBlocks {
		if src.IntN(4) == 0 {
			out = append(out, b)
		}
	}
	return out
}

// genOp draws the next operation. Upserts of a known claimant keep its
// object's identity and may change its host and flags.
func (h *harness) genOp(src intSource) op {
	slot := propSlots[src.IntN(len(propSlots))]
	switch r := src.IntN(100); {
	case r < 55:
		return op{kind: opUpsert, c: h.claimant(slot, src)}
	case r < 70:
		return op{kind: opRemove, uid: h.object(slot) + "/" + propParts[src.IntN(len(propParts))]}
	case r < 80:
		return op{kind: opDelete, obj: h.object(slot)}
	case r < 92:
		old := h.object(slot)
		var host string
		for _, c := range h.live {
			if c.Object == old {
				host = c.Host
				break
			}
		}
		h.gen[slot]++
		c := h.claimant(slot, src)
		if host != "" && src.IntN(4) != 0 {
			c.Host = host // the usual redeploy: the same name, a new dseq
		}
		return op{kind: opRecreate, obj: old, c: c}
	default:
		return op{kind: opBlock, block: randomBlock(src)}
	}
}

func (h *harness) fail(format string, args ...any) {
	h.t.Helper()
	var b strings.Builder
	for i, o := range h.log {
		fmt.Fprintf(&b, "\n  %2d %s", i, o)
	}
	h.t.Fatalf("%s\nops:%s", fmt.Sprintf(format, args...), b.String())
}

func (h *harness) upsert(c Claimant) {
	h.t.Helper()
	before := h.e.Snapshot()
	_, wasLive := h.live[c.UID]
	d, changes := h.e.Upsert(c)
	h.live[c.UID] = c
	if got, _ := h.e.Decision(c.UID); got != d {
		h.fail("Decision(%s) = %+v, Upsert returned %+v", c.UID, got, d)
	}
	after := h.e.Snapshot()
	// A new claimant refused because another owner holds the name
	// changes nothing else.
	if !wasLive && d.Reason == ReasonHostnameInUse {
		if len(changes) != 0 {
			h.fail("a refused HostnameInUse request changed others: %+v", changes)
		}
		if !reflect.DeepEqual(before.Holders, after.Holders) {
			h.fail("a refused HostnameInUse request changed holders: %v -> %v", before.Holders, after.Holders)
		}
	}
	// A live holder keeps its name: the claimant may take it from another
	// key only by a takeover of the same owner, and never from another
	// owner, whatever its age or hint.
	for host, was := range before.Holders {
		now, held := after.Holders[host]
		if was.Key == c.Key {
			continue // the claimant's own key: it may move its own name
		}
		switch {
		case !held:
			h.fail("upsert of %s left %s without its holder %s", c.UID, host, was.UID)
		case now.Key == was.Key:
		case now.Key == c.Key && c.Takeover && c.Key.Owner == was.Key.Owner:
		default:
			h.fail("upsert of %s moved %s from %s (%s) to %s (%s)", c.UID, host, was.UID, was.Key, now.UID, now.Key)
		}
	}
	checkChangesExact(h.t, before, after, c.UID, changes)
}

// release releases an object and checks that nothing of it remains, and
// that the names of other owners' holders did not move.
func (h *harness) release(obj string) {
	h.t.Helper()
	before := h.e.Snapshot()
	owner := h.ident[obj].Key.Owner
	changes := h.e.ReleaseObject(obj)
	for uid, c := range h.live {
		if c.Object == obj {
			delete(h.live, uid)
		}
	}
	after := h.e.Snapshot()
	if got := h.e.ClaimsOf(obj); len(got) != 0 {
		h.fail("claimants of released object %s remain: %+v", obj, got)
	}
	for _, cs := range after.Claims {
		if cs.Claimant.Object == obj {
			h.fail("claimant %s of released object %s remains", cs.Claimant.UID, obj)
		}
	}
	for host, was := range before.Holders {
		if now, held := after.Holders[host]; was.Key.Owner != owner && (!held || now.Key != was.Key) {
			h.fail("releasing %s moved %s from %s", obj, host, was.UID)
		}
		if now := after.Holders[host]; now.Object == obj {
			h.fail("released object %s still holds %s", obj, host)
		}
	}
	checkChangesExact(h.t, before, after, "", changes)
}

func (h *harness) apply(o op) {
	h.t.Helper()
	h.log = append(h.log, o)
	switch o.kind {
	case opUpsert:
		h.upsert(o.c)
	case opRemove:
		before := h.e.Snapshot()
		changes := h.e.Remove(o.uid)
		delete(h.live, o.uid)
		checkChangesExact(h.t, before, h.e.Snapshot(), o.uid, changes)
	case opDelete:
		h.release(o.obj)
	case opRecreate:
		h.release(o.obj)
		h.upsert(o.c)
	case opBlock:
		before := h.e.Snapshot()
		old := MustBlockList(h.block...)
		h.block = o.block
		changes := h.e.SetBlockList(MustBlockList(o.block...))
		after := h.e.Snapshot()
		// A name blocked neither before nor after keeps its holder.
		for host, was := range before.Holders {
			if _, blocked := MustBlockList(o.block...).match(host); blocked {
				continue
			}
			if _, blocked := old.match(host); blocked {
				continue
			}
			if now := after.Holders[host]; now.UID != was.UID {
				h.fail("a block-list change moved unblocked %s from %s to %s", host, was.UID, now.UID)
			}
		}
		checkChangesExact(h.t, before, after, "", changes)
	}
	checkInvariants(h.t, h.e)
	if h.t.Failed() {
		h.fail("after the last op")
	}
}

// checkFinal checks the restart rule: a fresh engine
// that restores the live claimants with the hint their written status would
// give (Reserved), in any order, comes back with exactly the same state; and
// a cold start with arbitrary hints does not depend on the order either.
func (h *harness) checkFinal(src intSource) {
	h.t.Helper()
	want := h.e.Snapshot()
	live := make([]Claimant, 0, len(want.Claims))
	for _, cs := range want.Claims {
		c := h.live[cs.Claimant.UID]
		c.Holding = cs.Decision.Reserved
		live = append(live, c)
	}
	if len(live) != len(h.live) {
		h.fail("engine has %d claimants; %d are live", len(live), len(h.live))
	}
	for round := range 2 {
		f := New(MustBlockList(h.block...))
		order := slices.Clone(live)
		shuffle(src, order)
		f.Restore(order)
		if got := f.Snapshot(); !reflect.DeepEqual(got, want) {
			h.fail("round %d: restored state differs\n got %s\nwant %s", round, dumpSnapshot(got), dumpSnapshot(want))
		}
	}
	// Arbitrary (forged or stale) hints: ambiguous, but settled the same
	// way whatever the order.
	for i := range live {
		live[i].Holding = src.IntN(2) == 0
	}
	var first Snapshot
	for round := range 2 {
		f := New(MustBlockList(h.block...))
		order := slices.Clone(live)
		shuffle(src, order)
		f.Restore(order)
		checkInvariants(h.t, f)
		got := f.Snapshot()
		if round == 0 {
			first = got
		} else if !reflect.DeepEqual(got, first) {
			h.fail("a cold start with hints depends on the order\n got %s\nwant %s", dumpSnapshot(got), dumpSnapshot(first))
		}
	}
}

func shuffle[T any](src intSource, s []T) {
	for i := len(s) - 1; i > 0; i-- {
		j := src.IntN(i + 1)
		s[i], s[j] = s[j], s[i]
	}
}

func dumpSnapshot(s Snapshot) string {
	var b strings.Builder
	for _, cs := range s.Claims {
		fmt.Fprintf(&b, "\n    %s %s %q -> %s", cs.Claimant.UID, cs.Claimant.Key, cs.Claimant.Host, cs.Decision.Reason)
	}
	hosts := make([]string, 0, len(s.Holders))
	for h := range s.Holders {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	for _, h := range hosts {
		fmt.Fprintf(&b, "\n    holder %s = %s", h, s.Holders[h].UID)
	}
	fmt.Fprintf(&b, "\n    blocked %q", s.Blocked)
	return b.String()
}

// checkInvariants checks the engine's whole state against the ownership
// rules (the package doc), recomputed from scratch.
func checkInvariants(t testing.TB, e *Engine) {
	t.Helper()
	s := e.Snapshot()
	bl := MustBlockList(s.Blocked...).WithReserved(s.Reserved)
	byHost := map[string][]ClaimState{}
	counts := map[State]int{StateReserved: 0, StateWithheld: 0, StateRefused: 0}
	for _, cs := range s.Claims {
		counts[cs.Decision.State()]++
		c, d := cs.Claimant, cs.Decision
		host, err := Normalise(c.Host)
		if err != nil {
			if d.Reason != ReasonInvalidHostname || d.Reserved || d.Host != "" {
				t.Errorf("%s: invalid host %q decided %+v", c.UID, c.Host, d)
			}
			continue
		}
		if d.Host != host {
			t.Errorf("%s: decision host %q; want %q", c.UID, d.Host, host)
		}
		if d.Reserved != (d.Reason == ReasonReserved) {
			t.Errorf("%s: Reserved=%v with reason %s", c.UID, d.Reserved, d.Reason)
		}
		byHost[host] = append(byHost[host], cs)
		// Never name another tenant.
		for _, other := range s.Claims {
			o := other.Claimant
			if o.Key.Owner != c.Key.Owner && strings.Contains(d.Message, o.Key.Owner) {
				t.Errorf("%s: message %q names owner %s", c.UID, d.Message, o.Key.Owner)
			}
			if o.UID != c.UID && strings.Contains(d.Message, o.UID) {
				t.Errorf("%s: message %q names UID %s", c.UID, d.Message, o.UID)
			}
		}
	}
	if st := e.Stats(); !reflect.DeepEqual(st, counts) {
		t.Errorf("Stats() = %v; recount %v", st, counts)
	}
	for host := range s.Holders {
		if len(byHost[host]) == 0 {
			t.Errorf("holder recorded for unclaimed %s", host)
		}
	}
	for host, list := range byHost {
		slices.SortFunc(list, func(a, b ClaimState) int {
			if Older(a.Claimant, b.Claimant) {
				return -1
			}
			return 1
		})
		holder, held := s.Holders[host]
		if entry, blocked := bl.match(host); blocked {
			if held {
				t.Errorf("%s is blocked by %s but held by %s", host, entry, holder.UID)
			}
			for _, cs := range list {
				if cs.Decision.Reason != ReasonBlocked || !strings.Contains(cs.Decision.Message, entry) {
					t.Errorf("%s on blocked %s: %+v", cs.Claimant.UID, host, cs.Decision)
				}
			}
			continue
		}
		// Someone always holds a claimed, unblocked name: release promotes.
		if !held {
			t.Errorf("%s has %d claimants and no holder", host, len(list))
			continue
		}
		if h2, ok := e.Holder(host); !ok || h2 != holder {
			t.Errorf("Holder(%s) = %v, %v; snapshot says %s", host, h2.UID, ok, holder.UID)
		}
		// Exactly one key holds; the holder is its oldest claimant.
		firstReserved := -1
		for i, cs := range list {
			if cs.Decision.Reserved {
				if firstReserved < 0 {
					firstReserved = i
				}
				if cs.Claimant.Key != holder.Key {
					t.Errorf("%s: two holder keys: %s and %s", host, cs.Claimant.Key, holder.Key)
				}
			}
		}
		if firstReserved < 0 || list[firstReserved].Claimant.UID != holder.UID {
			t.Errorf("%s: holder %s is not the oldest reserved claimant", host, holder.UID)
		}
		// Precedence: takeover (newest, same owner) > hint (oldest) > oldest.
		base := list[0].Claimant
		for _, cs := range list {
			if cs.Claimant.Holding {
				base = cs.Claimant
				break
			}
		}
		wantKey := base.Key
		var taker *Claimant
		for i := len(list) - 1; i >= 0; i-- {
			if c := list[i].Claimant; c.Takeover && c.Key.Owner == base.Key.Owner {
				taker = &c
				wantKey = c.Key
				break
			}
		}
		if holder.Key != wantKey {
			t.Errorf("%s: holder key %s; rules say %s", host, holder.Key, wantKey)
		}
		for _, cs := range list {
			c, d := cs.Claimant, cs.Decision
			var want Reason
			switch {
			case c.Key == holder.Key:
				want = ReasonReserved
			case c.Key.Owner != holder.Key.Owner:
				want = ReasonHostnameInUse
			case taker != nil:
				want = ReasonTransferredAway
			default:
				want = ReasonWithheld
			}
			if d.Reason != want {
				t.Errorf("%s on %s: %s; want %s", c.UID, host, d.Reason, want)
			}
		}
	}
}

func TestPropertyOrderIndependence(t *testing.T) {
	const scenarios = 500
	for seed := range uint64(scenarios) {
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		h := newHarness(t)
		for range 10 + rng.IntN(50) {
			h.apply(h.genOp(rng))
		}
		h.checkFinal(rng)
		if t.Failed() {
			t.Fatalf("seed %d failed", seed)
		}
	}
}

// TestRacingClaimsExactlyOneWins: two LeaseHosts of different owners racing
// for one name, in both orders and with status write-back: exactly one wins,
// the one admitted first, and nothing moves it afterwards; a restart from the
// written status keeps it.
func TestRacingClaimsExactlyOneWins(t *testing.T) {
	a := lh("uid-a", 1, "alice", 1, hostA)
	b := lh("uid-b", 1, "bob", 1, hostA) // same second: UID decides on a cold start
	for _, order := range [][]Claimant{{a, b}, {b, a}} {
		e := New(nil)
		for _, c := range order {
			e.Upsert(c)
		}
		winner := order[0].UID
		h, _ := e.Holder(hostA)
		if h.UID != winner {
			t.Errorf("order %s,%s: holder %s; want %s", order[0].UID, order[1].UID, h.UID, winner)
		}
		// The controller writes status and re-upserts; the loser's
		// (forged) hint changes nothing.
		e.Upsert(order[0].withHolding())
		e.Upsert(order[1].withHolding())
		if h, _ := e.Holder(hostA); h.UID != winner {
			t.Errorf("after write-back: holder %s; want %s", h.UID, winner)
		}
		r := New(nil)
		w, l := order[0].withHolding(), order[1]
		r.Restore([]Claimant{l, w})
		if h, _ := r.Holder(hostA); h.UID != winner {
			t.Errorf("after a restart: holder %s; want %s", h.UID, winner)
		}
	}
}

// TestConcurrentUse hammers one engine from several goroutines (run with
// -race) and checks the end state against a fresh engine built from the
// final live set.
func TestConcurrentUse(t *testing.T) {
	e := New(nil)
	const workers = 8
	finals := make([]map[string]Claimant, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			live := map[string]Claimant{}
			for i := range 400 {
				uid := fmt.Sprintf("w%d-%d", w, rng.IntN(10))
				c := lh(uid, int(hashString(uid)%5), propOwners[hashString(uid)%3], uint64(1+hashString(uid)%2), propHosts[rng.IntN(len(propHosts))])
				c.Takeover = rng.IntN(5) == 0
				c.Holding = rng.IntN(5) == 0
				switch rng.IntN(6) {
				case 0, 1:
					e.Remove(uid)
					delete(live, uid)
				case 2:
					_ = e.CanReserve(c.Key.Owner, c.Host)
					_, _ = e.Holder(c.Host)
					_ = e.Stats()
					if i%50 == 0 {
						_ = e.Snapshot()
					}
				case 3:
					if w == 0 {
						e.SetBlockList(MustBlockList(randomBlock(rng)...))
					}
				default:
					e.Upsert(c)
					live[uid] = c
				}
			}
			finals[w] = live
		}()
	}
	wg.Wait()
	final := MustBlockList(".other.org")
	e.SetBlockList(final)
	got := e.Snapshot()
	var restored []Claimant
	for _, cs := range got.Claims {
		restored = append(restored, cs.Claimant) // Holding: the engine's mark
	}
	n := 0
	for _, live := range finals {
		for uid, c := range live {
			n++
			if d, ok := e.Decision(uid); !ok {
				t.Errorf("live claimant %s (%s) has no decision", uid, c.Host)
			} else if d.Host == "" && d.Reason != ReasonInvalidHostname {
				t.Errorf("%s: %+v", uid, d)
			}
		}
	}
	if n != len(got.Claims) {
		t.Errorf("engine has %d claimants; %d are live", len(got.Claims), n)
	}
	f := New(final)
	f.Restore(restored)
	if want := f.Snapshot(); !reflect.DeepEqual(got, want) {
		t.Errorf("concurrent engine differs from a restart of it:\n got %s\nwant %s", dumpSnapshot(got), dumpSnapshot(want))
	}
	checkInvariants(t, e)
}

func hashString(s string) uint64 {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
