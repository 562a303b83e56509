package hostnames

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Engine is the in-memory ownership index: which claim key holds which name,
// and every claimant's decision. All methods are safe for concurrent use.
//
// The engine is the authority on who holds a name while it runs: a claimant
// whose name is Reserved keeps it (its Holding mark is the engine's own)
// until it leaves, the name is blocked, or a takeover of the same owner moves
// it. A newcomer never displaces a live holder, whatever its age or its
// status says. Claimant.Holding as given by the caller (the status hint) is
// read only by Restore, the cold start: there the state is a pure function
// of the restored claimants, their hints and the block list, whatever their
// order, so a restarted controller that restores every LeaseHost, with
// Holding taken from its status, comes back with the same holders.
type Engine struct {
	mu      sync.RWMutex
	blocked *BlockList
	claims  map[string]*claim            // by UID
	objects map[string]map[string]*claim // by Object, then UID
	hosts   map[string]*hostState        // by normalised name
	stats   [numStates]int
	scratch []Decision
}

type claim struct {
	// Claimant is as given, Host not normalised, except Holding: the
	// engine's own mark, true while the claim is Reserved (or, during
	// Restore, the caller's hint).
	Claimant
	host string // normalised; "" when invalid
	dec  Decision
}

type hostState struct {
	claims []*claim // sorted by Older
	holder int      // index into claims, -1 when nobody holds the name
}

const (
	idxReserved = iota
	idxWithheld
	idxRefused
	numStates
)

func stateIndex(d Decision) int {
	switch d.State() {
	case StateReserved:
		return idxReserved
	case StateWithheld:
		return idxWithheld
	default:
		return idxRefused
	}
}

// New returns an empty engine using the given block list (nil blocks nothing).
func New(blocked *BlockList) *Engine {
	return &Engine{
		blocked: blocked,
		claims:  map[string]*claim{},
		objects: map[string]map[string]*claim{},
		hosts:   map[string]*hostState{},
	}
}

// Upsert records that claimant c wants the name c.Host, or updates it (same
// UID) and returns its decision. If the claimant asked for another name
// before, that name is released first and its oldest eligible waiter is
// promoted. The returned changes list every other claimant whose decision
// changed as a consequence, sorted by UID.
//
// c.Holding is ignored: a live holder keeps its name, and a claimant's
// status cannot take one (see Restore for the cold start). A claimant
// whose Key changed (the same UID, now for another lease) loses its hold:
// the name is released by the old key first, as if the claim had been
// removed, and the claim then asks again under its new key. A claimant refused
// HostnameInUse changes nothing else: a LeaseHost is one name, so the request
// is atomic.
func (e *Engine) Upsert(c Claimant) (Decision, []Change) {
	host, err := Normalise(c.Host)

	e.mu.Lock()
	defer e.mu.Unlock()

	cl, changes := e.place(c, host, err, false)
	if cl.host != "" {
		changes = e.resolve(cl.host, e.hosts[cl.host], changes, c.UID)
	}
	return cl.dec, sortChanges(changes)
}

// place records c (normalised to host, or invalid with err) without deciding
// its new name, and returns its claim and the changes on the name it left.
// The claim keeps its Holding mark while it stays on the same name; with
// restore it takes the caller's hint instead. The caller holds the write lock
// and resolves cl.host.
func (e *Engine) place(c Claimant, host string, err error, restore bool) (*claim, []Change) {
	var changes []Change
	if c.Object == "" {
		c.Object = c.UID
	}
	holding := false
	cl := e.claims[c.UID]
	if cl == nil {
		cl = &claim{}
		e.claims[c.UID] = cl
	} else {
		if cl.host != "" {
			hs := e.hosts[cl.host]
			hs.remove(cl)
			// A claim whose key changed (its object now names another
			// lease) is a new request: the old key's hold ends, and the
			// name is decided without it first, so the name's other
			// claimants (the old owner's waiting deployments) come before
			// it and a re-pointed object never carries a name across
			// owners.
			if err != nil || cl.host != host || (!restore && cl.Key != c.Key) {
				changes = e.resolve(cl.host, hs, changes, c.UID)
			} else {
				holding = cl.Holding
			}
		}
		if cl.Object != c.Object {
			e.unindex(cl)
		}
	}
	if restore {
		holding = c.Holding
	}
	cl.Claimant = c
	cl.Holding = holding
	e.index(cl)
	if err != nil {
		cl.host = ""
		cl.Holding = false
		e.setDecision(cl, invalidDecision(err))
		return cl, changes
	}
	cl.host = host
	hs := e.hosts[host]
	if hs == nil {
		hs = &hostState{holder: -1}
		e.hosts[host] = hs
	}
	hs.insert(cl)
	return cl, changes
}

// Restore is the cold start: it records every claimant of cs as Upsert does,
// but honours their Holding hints (their status said Reserved=True for
// exactly this name), and decides each name once, after all of them are in.
// The result is a pure function of the claimants, their hints and the block
// list, whatever the order of cs: two hint carriers of different keys are
// settled by age (the oldest hint carrier), as an ambiguous cold start must
// be. It returns every claimant's decision by UID, and the changes of
// claimants not in cs, sorted by UID.
func (e *Engine) Restore(cs []Claimant) (map[string]Decision, []Change) {
	e.mu.Lock()
	defer e.mu.Unlock()

	var changes []Change
	touched := map[string]bool{}
	restored := make(map[string]bool, len(cs))
	for _, c := range cs {
		host, err := Normalise(c.Host)
		cl, ch := e.place(c, host, err, true)
		changes = append(changes, ch...)
		restored[c.UID] = true
		if cl.host != "" {
			touched[cl.host] = true
		}
	}
	for _, h := range slices.Sorted(maps.Keys(touched)) {
		changes = e.resolve(h, e.hosts[h], changes, "")
	}
	out := make(map[string]Decision, len(cs))
	for _, c := range cs {
		out[c.UID] = e.claims[c.UID].dec
	}
	kept := changes[:0]
	for _, ch := range changes {
		if !restored[ch.UID] {
			kept = append(kept, ch)
		}
	}
	return out, sortChanges(kept)
}

func (e *Engine) index(cl *claim) {
	m := e.objects[cl.Object]
	if m == nil {
		m = map[string]*claim{}
		e.objects[cl.Object] = m
	}
	m[cl.UID] = cl
}

func (e *Engine) unindex(cl *claim) {
	if m := e.objects[cl.Object]; m != nil {
		delete(m, cl.UID)
		if len(m) == 0 {
			delete(e.objects, cl.Object)
		}
	}
}

// Remove forgets the claimant with this UID (its LeaseHost was deleted) and
// releases its name. When the last claimant of the holding key goes, the name
// passes to the next claimant by the rules of decide: usually the oldest
// waiter, of any owner. The changes list every other claimant whose decision
// changed, sorted by UID. Removing an unknown UID is a no-op.
func (e *Engine) Remove(uid string) []Change {
	e.mu.Lock()
	defer e.mu.Unlock()

	cl := e.claims[uid]
	if cl == nil {
		return nil
	}
	return sortChanges(e.remove(cl, nil))
}

// remove forgets cl and appends the changes on its name. The caller holds the
// write lock.
func (e *Engine) remove(cl *claim, changes []Change) []Change {
	delete(e.claims, cl.UID)
	e.unindex(cl)
	e.stats[stateIndex(cl.dec)]--
	if cl.host == "" {
		return changes
	}
	hs := e.hosts[cl.host]
	hs.remove(cl)
	return e.resolve(cl.host, hs, changes, cl.UID)
}

// ClaimsOf returns the claimants recorded for object (a LeaseHost's UID: see
// Claimant.Object), sorted by UID, with Host as given. It is the engine's own
// record of what an object claims, so that a caller releases what the engine
// holds, not what the caller believes it asked for.
func (e *Engine) ClaimsOf(object string) []Claimant {
	e.mu.RLock()
	defer e.mu.RUnlock()
	m := e.objects[object]
	out := make([]Claimant, 0, len(m))
	for _, cl := range m {
		out = append(out, cl.Claimant)
	}
	slices.SortFunc(out, func(a, b Claimant) int { return strings.Compare(a.UID, b.UID) })
	return out
}

// ReleaseObject forgets every claimant of object (its LeaseHost was deleted,
// or replaced by a new object of the same name) and releases their names, as
// Remove does for each. Releasing an unknown object is a no-op.
func (e *Engine) ReleaseObject(object string) []Change {
	e.mu.Lock()
	defer e.mu.Unlock()
	// Take every claimant of object out first, then decide each name once,
	// so no claimant of object shows up in the changes.
	hosts := map[string]bool{}
	for _, cl := range e.objects[object] {
		delete(e.claims, cl.UID)
		e.stats[stateIndex(cl.dec)]--
		if cl.host != "" {
			e.hosts[cl.host].remove(cl)
			hosts[cl.host] = true
		}
	}
	delete(e.objects, object)
	var changes []Change
	for _, h := range slices.Sorted(maps.Keys(hosts)) {
		changes = e.resolve(h, e.hosts[h], changes, "")
	}
	return sortChanges(changes)
}

// SetBlockList replaces the block list and re-evaluates every name: claims
// that become blocked are revoked (Blocked), and names that become unblocked
// are admitted again by the usual rules (the oldest waiter wins unless a
// takeover says otherwise). A name blocked neither before nor after keeps its
// holder. The changes list every claimant whose decision changed, sorted by
// UID.
func (e *Engine) SetBlockList(b *BlockList) []Change {
	e.mu.Lock()
	defer e.mu.Unlock()

	e.blocked = b
	var changes []Change
	for host, hs := range e.hosts {
		changes = e.resolve(host, hs, changes, "")
	}
	return sortChanges(changes)
}

// BlockList returns the block list in use.
func (e *Engine) BlockList() *BlockList {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.blocked
}

// resolve recomputes the decisions of every claimant of host, appends a Change
// for each one that changed other than subject, and drops the host when it has
// no claimants left. The caller holds the write lock.
func (e *Engine) resolve(host string, hs *hostState, changes []Change, subject string) []Change {
	if len(hs.claims) == 0 {
		delete(e.hosts, host)
		return changes
	}
	entry, blocked := e.blocked.match(host)
	why, _ := e.blocked.Reserved(entry)
	e.scratch, hs.holder = decide(host, hs.claims, entry, why, blocked, e.scratch[:0])
	for i, c := range hs.claims {
		d := e.scratch[i]
		// The engine's own mark: a claim that is Reserved holds, so a
		// newcomer (older or not, hint or not) cannot displace it.
		c.Holding = d.Reserved
		if d == c.dec {
			continue
		}
		if c.UID != subject {
			changes = append(changes, Change{UID: c.UID, Old: c.dec, New: d})
		}
		e.setDecision(c, d)
	}
	return changes
}

func (e *Engine) setDecision(c *claim, d Decision) {
	if c.dec.Reason != "" {
		e.stats[stateIndex(c.dec)]--
	}
	e.stats[stateIndex(d)]++
	c.dec = d
}

func sortChanges(changes []Change) []Change {
	sort.Slice(changes, func(i, j int) bool { return changes[i].UID < changes[j].UID })
	return changes
}

func (hs *hostState) insert(c *claim) {
	i := sort.Search(len(hs.claims), func(i int) bool { return Older(c.Claimant, hs.claims[i].Claimant) })
	hs.claims = slices.Insert(hs.claims, i, c)
}

func (hs *hostState) remove(c *claim) {
	if i := slices.Index(hs.claims, c); i >= 0 {
		hs.claims = slices.Delete(hs.claims, i, i+1)
	}
}

// CanReserve is the pre-flight check (Akash CanReserveHostnames): nil when
// owner may claim host, that is the name is valid, not blocked, and free or
// held by the same owner (another deployment of the owner reaches it with a
// takeover). Otherwise it returns an *Error with reason InvalidHostname,
// Blocked or HostnameInUse. It does O(labels) work and changes nothing.
func (e *Engine) CanReserve(owner, host string) error {
	h, err := Normalise(host)
	if err != nil {
		return err
	}
	e.mu.RLock()
	bl := e.blocked
	entry, blocked := bl.match(h)
	var heldByOther bool
	if hs := e.hosts[h]; !blocked && hs != nil && hs.holder >= 0 {
		heldByOther = hs.claims[hs.holder].Key.Owner != owner
	}
	e.mu.RUnlock()
	switch {
	case blocked:
		detail := "blocked by the provider's block list entry " + quoteHost(entry)
		if why, ok := bl.Reserved(entry); ok {
			detail = "reserved for the provider's shard: " + why
		}
		if lookalike(h, entry) {
			detail += " (it is a look-alike of a blocked name)"
		}
		return &Error{Reason: ReasonBlocked, Host: h, Detail: detail}
	case heldByOther:
		return &Error{Reason: ReasonHostnameInUse, Host: h, Detail: "in use by another tenant"}
	}
	return nil
}

// Holder returns the claimant holding host: the oldest claimant of the holding
// claim key. It returns false when the name is invalid, blocked or unclaimed.
func (e *Engine) Holder(host string) (Claimant, bool) {
	h, err := Normalise(host)
	if err != nil {
		return Claimant{}, false
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	hs := e.hosts[h]
	if hs == nil || hs.holder < 0 {
		return Claimant{}, false
	}
	return hs.claims[hs.holder].Claimant, true
}

// Decision returns the current decision for the claimant with this UID.
func (e *Engine) Decision(uid string) (Decision, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	cl := e.claims[uid]
	if cl == nil {
		return Decision{}, false
	}
	return cl.dec, true
}

// Stats counts claimants by state (reserved, withheld, refused) for metrics.
// It costs O(1): the counts are kept up to date by every change.
func (e *Engine) Stats() map[State]int {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return map[State]int{
		StateReserved: e.stats[idxReserved],
		StateWithheld: e.stats[idxWithheld],
		StateRefused:  e.stats[idxRefused],
	}
}

// ClaimState is one claimant and its decision.
type ClaimState struct {
	Claimant Claimant
	Decision Decision
}

// Snapshot is a copy of the engine's state, for tests and debugging.
type Snapshot struct {
	// Claims holds every claimant, sorted by UID, with Host as given.
	Claims []ClaimState
	// Holders maps each held (normalised) name to its holder, as Holder
	// returns it.
	Holders map[string]Claimant
	// Blocked lists the block-list entries, normalised and sorted.
	Blocked []string
	// Reserved maps the names reserved for the provider to why
	// (BlockList.WithReserved); nil when there are none.
	Reserved map[string]string
}

// Snapshot copies the engine's state. It costs O(claimants).
func (e *Engine) Snapshot() Snapshot {
	e.mu.RLock()
	defer e.mu.RUnlock()
	s := Snapshot{
		Claims:  make([]ClaimState, 0, len(e.claims)),
		Holders: make(map[string]Claimant, len(e.hosts)),
		Blocked: e.blocked.Entries(),
	}
	if r := e.blocked.ReservedNames(); len(r) > 0 {
		s.Reserved = r
	}
	for _, cl := range e.claims {
		s.Claims = append(s.Claims, ClaimState{Claimant: cl.Claimant, Decision: cl.dec})
	}
	slices.SortFunc(s.Claims, func(a, b ClaimState) int { return strings.Compare(a.Claimant.UID, b.Claimant.UID) })
	for host, hs := range e.hosts {
		if hs.holder >= 0 {
			s.Holders[host] = hs.claims[hs.holder].Claimant
		}
	}
	return s
}
