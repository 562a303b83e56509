package hostnames

import (
	"slices"
	"sort"
	"strings"
	"sync"
)

// Engine is the in-memory ownership index: which claim key holds which name,
// and every claimant's decision. All methods are safe for concurrent use.
//
// The engine's state is a pure function of the live claimants (with their
// Takeover flags and Holding hints) and the block list: the same set gives
// the same decisions whatever the order of the Upsert and Remove calls that
// built it. A restarted controller that upserts every LeaseHost, with Holding
// taken from its status, comes back with the same holders.
type Engine struct {
	mu      sync.RWMutex
	blocked *BlockList
	claims  map[string]*claim     // by UID
	hosts   map[string]*hostState // by normalised name
	stats   [numStates]int
	scratch []Decision
}

type claim struct {
	Claimant        // as given, Host not normalised
	host     string // normalised; "" when invalid
	dec      Decision
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
		hosts:   map[string]*hostState{},
	}
}

// Upsert records that claimant c wants the name c.Host, or updates it (same
// UID) and returns its decision. If the claimant asked for another name
// before, that name is released first and its oldest eligible waiter is
// promoted. The returned changes list every other claimant whose decision
// changed as a consequence, sorted by UID.
//
// A claimant refused HostnameInUse changes nothing else: a LeaseHost is one
// name, so the request is atomic.
func (e *Engine) Upsert(c Claimant) (Decision, []Change) {
	host, err := Normalise(c.Host)

	e.mu.Lock()
	defer e.mu.Unlock()

	var changes []Change
	cl := e.claims[c.UID]
	if cl == nil {
		cl = &claim{}
		e.claims[c.UID] = cl
	} else if cl.host != "" {
		hs := e.hosts[cl.host]
		hs.remove(cl)
		if err != nil || cl.host != host {
			changes = e.resolve(cl.host, hs, changes, c.UID)
		}
	}
	cl.Claimant = c
	if err != nil {
		cl.host = ""
		e.setDecision(cl, invalidDecision(err))
		return cl.dec, sortChanges(changes)
	}
	cl.host = host
	hs := e.hosts[host]
	if hs == nil {
		hs = &hostState{holder: -1}
		e.hosts[host] = hs
	}
	hs.insert(cl)
	changes = e.resolve(host, hs, changes, c.UID)
	return cl.dec, sortChanges(changes)
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
	delete(e.claims, uid)
	e.stats[stateIndex(cl.dec)]--
	if cl.host == "" {
		return nil
	}
	hs := e.hosts[cl.host]
	hs.remove(cl)
	return sortChanges(e.resolve(cl.host, hs, nil, uid))
}

// SetBlockList replaces the block list and re-evaluates every name: claims
// that become blocked are revoked (Blocked), and names that become unblocked
// are admitted again by the usual rules (the oldest waiter wins unless a hint
// or a takeover says otherwise). The changes list every claimant whose
// decision changed, sorted by UID.
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
	e.scratch, hs.holder = decide(host, hs.claims, entry, blocked, e.scratch[:0])
	for i, c := range hs.claims {
		d := e.scratch[i]
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
	entry, blocked := e.blocked.match(h)
	var heldByOther bool
	if hs := e.hosts[h]; !blocked && hs != nil && hs.holder >= 0 {
		heldByOther = hs.claims[hs.holder].Key.Owner != owner
	}
	e.mu.RUnlock()
	switch {
	case blocked:
		detail := "blocked by the provider's block list entry " + quoteHost(entry)
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
