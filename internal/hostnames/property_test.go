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
// several spellings, plus one invalid spelling.
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
	propUIDs         = []string{"uid-00", "uid-01", "uid-02", "uid-03", "uid-04", "uid-05", "uid-06", "uid-07", "uid-08", "uid-09"}
)

type opKind int

const (
	opUpsert opKind = iota
	opRemove
	opBlock
)

type op struct {
	kind  opKind
	c     Claimant // opUpsert
	uid   string   // opRemove
	block []string // opBlock
}

func (o op) String() string {
	switch o.kind {
	case opUpsert:
		return fmt.Sprintf("upsert(%s t=%d %s host=%q takeover=%v holding=%v)",
			o.c.UID, o.c.Created.Unix()-t0.Unix(), o.c.Key, o.c.Host, o.c.Takeover, o.c.Holding)
	case opRemove:
		return fmt.Sprintf("remove(%s)", o.uid)
	default:
		return fmt.Sprintf("block(%q)", o.block)
	}
}

// harness applies ops to an engine and checks the invariants after each.
type harness struct {
	t     testing.TB
	e     *Engine
	ident map[string]Claimant // fixed identity (UID, creation time, key) of each UID
	live  map[string]Claimant
	block []string
	log   []op
}

func newHarness(t testing.TB) *harness {
	return &harness{t: t, e: New(nil), ident: map[string]Claimant{}, live: map[string]Claimant{}}
}

func (h *harness) identity(uid string, src intSource) Claimant {
	if c, ok := h.ident[uid]; ok {
		return c
	}
	c := Claimant{
		// few distinct seconds, so UID tie-breaks matter
		ClaimID: ClaimID{UID: uid, Created: t0.Add(time.Duration(src.IntN(4)) * time.Second)},
		Key:     LeaseKey{Owner: propOwners[src.IntN(len(propOwners))], DSeq: uint64(1 + src.IntN(2)), GSeq: 1},
	}
	h.ident[uid] = c
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

// genOp draws the next operation. Upserts of a known UID keep its identity
// and may change its host and flags.
func (h *harness) genOp(src intSource) op {
	switch r := src.IntN(100); {
	case r < 62:
		uid := propUIDs[src.IntN(len(propUIDs))]
		c := h.identity(uid, src)
		if prev, ok := h.live[uid]; ok && src.IntN(2) == 0 {
			c.Host = prev.Host
		} else {
			c.Host = randomHost(src)
		}
		c.Takeover = src.IntN(4) == 0
		c.Holding = src.IntN(4) == 0
		return op{kind: opUpsert, c: c}
	case r < 90:
		return op{kind: opRemove, uid: propUIDs[src.IntN(len(propUIDs))]}
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

func (h *harness) apply(o op) {
	h.t.Helper()
	h.log = append(h.log, o)
	before := h.e.Snapshot()
	var changes []Change
	subject := ""
	switch o.kind {
	case opUpsert:
		subject = o.c.UID
		_, wasLive := h.live[subject]
		d, ch := h.e.Upsert(o.c)
		changes = ch
		h.live[subject] = o.c
		if got, _ := h.e.Decision(subject); got != d {
			h.fail("Decision(%s) = %+v, Upsert returned %+v", subject, got, d)
		}
		// A new claimant refused because another owner holds the name
		// changes nothing else.
		if !wasLive && d.Reason == ReasonHostnameInUse {
			if len(changes) != 0 {
				h.fail("a refused HostnameInUse request changed others: %+v", changes)
			}
			after := h.e.Snapshot()
			if !reflect.DeepEqual(before.Holders, after.Holders) {
				h.fail("a refused HostnameInUse request changed holders: %v -> %v", before.Holders, after.Holders)
			}
		}
	case opRemove:
		subject = o.uid
		changes = h.e.Remove(o.uid)
		delete(h.live, o.uid)
	case opBlock:
		h.block = o.block
		changes = h.e.SetBlockList(MustBlockList(o.block...))
	}
	checkChangesExact(h.t, before, h.e.Snapshot(), subject, changes)
	checkInvariants(h.t, h.e)
	if h.t.Failed() {
		h.fail("after the last op")
	}
}

// checkFinal checks that the final decisions are a function of the final live
// set: a fresh engine fed the live set in several random orders, with noise
// (other hosts and flags first, junk claimants, another block list) that is
// undone before the end, ends in exactly the same state.
func (h *harness) checkFinal(src intSource) {
	h.t.Helper()
	want := h.e.Snapshot()
	live := make([]Claimant, 0, len(h.live))
	for _, uid := range propUIDs {
		if c, ok := h.live[uid]; ok {
			live = append(live, c)
		}
	}
	for round := range 3 {
		f := New(nil)
		noise := round > 0
		if noise {
			f.SetBlockList(MustBlockList(randomBlock(src)...))
			var junk []string
			var first []Claimant
			for i := range 1 + src.IntN(4) {
				j := h.identity(fmt.Sprintf("junk-%d", i), src)
				j.Host = randomHost(src)
				j.Takeover = src.IntN(2) == 0
				j.Holding = src.IntN(2) == 0
				first = append(first, j)
				junk = append(junk, j.UID)
			}
			for _, c := range live {
				if src.IntN(2) == 0 {
					v := c
					v.Host = randomHost(src)
					v.Takeover = !c.Takeover
					v.Holding = !c.Holding
					first = append(first, v)
				}
			}
			shuffle(src, first)
			for _, c := range first {
				f.Upsert(c)
			}
			order := slices.Clone(live)
			shuffle(src, order)
			for _, c := range order {
				f.Upsert(c)
			}
			shuffle(src, junk)
			for _, uid := range junk {
				f.Remove(uid)
			}
		} else {
			order := slices.Clone(live)
			shuffle(src, order)
			for _, c := range order {
				f.Upsert(c)
			}
		}
		f.SetBlockList(MustBlockList(h.block...))
		if got := f.Snapshot(); !reflect.DeepEqual(got, want) {
			h.fail("round %d (noise %v): rebuilt state differs\n got %s\nwant %s", round, noise, dumpSnapshot(got), dumpSnapshot(want))
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
	bl := MustBlockList(s.Blocked...)
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
// for one name, in both orders and with status write-back: the same one wins.
func TestRacingClaimsExactlyOneWins(t *testing.T) {
	a := lh("uid-a", 1, "alice", 1, hostA)
	b := lh("uid-b", 1, "bob", 1, hostA) // same second: UID decides
	for _, order := range [][]Claimant{{a, b}, {b, a}} {
		e := New(nil)
		for _, c := range order {
			e.Upsert(c)
		}
		h, _ := e.Holder(hostA)
		if h.UID != "uid-a" {
			t.Errorf("order %s,%s: holder %s; want uid-a", order[0].UID, order[1].UID, h.UID)
		}
		// The controller writes status and re-upserts with the hint.
		e.Upsert(a.withHolding())
		e.Upsert(b)
		if h, _ := e.Holder(hostA); h.UID != "uid-a" {
			t.Errorf("after write-back: holder %s", h.UID)
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
	f := New(final)
	for _, live := range finals {
		for _, c := range live {
			f.Upsert(c)
		}
	}
	if got, want := e.Snapshot(), f.Snapshot(); !reflect.DeepEqual(got, want) {
		t.Errorf("concurrent engine differs from a fresh build:\n got %s\nwant %s", dumpSnapshot(got), dumpSnapshot(want))
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
