package translatelimit

import (
	"sync"
	"time"
)

// Interval is the least time between translations under load: every
// translation may push to every Gateway and queue status writes, so under a
// sustained burst this bounds both at 50 per second.
const Interval = 20 * time.Millisecond

// Burst is how many translations under load may start back to back before
// the interval applies: a new lease's LeaseHost and the route generated for
// it, arriving while the first is translated, are not held.
const Burst = 4

// MaxDebt caps, in intervals, the rest after a slow translation.
const MaxDebt = 5

// Folded is how many changes a translation must fold for it to be a
// sustained burst's: changes then arrive faster than one per interval,
// and each translation of the burst is followed by a longer hold. One
// change at a time, or a new lease's LeaseHost and its route, never is.
const Folded = 4

// MaxHold caps the hold after a translation of a sustained burst: a
// change made during a burst is translated within MaxHold (plus the
// translation).
const MaxHold = maxHoldIntervals * Interval

const maxHoldIntervals = 10

// minRestIntervals is the least rest after a translation, in intervals (1
// ms of the default 20): changes that come faster than that, however
// cheap their translations, are folded as a burst. A client that waits
// for its change to be published before making the next (an xDS push, a
// watch event, then its request and the apiserver's event) is slower.
const minRestIntervals = 1.0 / 20

// Limiter limits translations only under load, and load is measured the
// way changes arrive:
//
//   - A change that finds no translation under way or waiting is translated
//     at once (after the rest below): each of a provider's new leases,
//     arriving one after the other on no schedule, is published as soon as
//     it arrives, however many come.
//   - A change that arrives while a translation is under way or waiting
//     marks the controller loaded: the events are coming faster than the
//     translations, so the next translation spends a token of a bucket that
//     holds Burst and earns one per interval, and waits for one when there
//     is none. A sustained burst is so translated at most once per interval
//     on average, all its events folded into each translation (the delaying
//     queue keeps the earliest deadline of the one key).
//   - After every translation the controller rests as long as it took (at
//     least minRestIntervals, at most MaxDebt intervals) before the next
//     starts, so it never spends more than about half its time translating
//     and leaves the rest of the machine to the apiserver whose events it
//     follows. The rest runs from the translation's end: a change that
//     arrives after a quiet spell longer than the rest does not wait.
//   - A translation that folds Folded changes or more is a sustained
//     burst's: its rest is a hold that doubles with each such translation
//     in a row, from two intervals up to MaxHold, and ends with the burst
//     (the first translation that folds fewer, or a change after a quiet
//     spell longer than the hold). A burst of a thousand
//     Creates is so translated a few times a second instead of fifty,
//     which leaves the CPU to the apiserver the Creates wait for; each
//     change still waits at most MaxHold.
//
// A Limiter is safe for concurrent use. A nil Limiter never waits.
type Limiter struct {
	interval time.Duration
	now      func() time.Time

	mu     sync.Mutex
	tokens float64
	at     time.Time // when tokens was last brought up to date
	// asked: a translation was asked for and has not started; running:
	// one is under way; loaded: a change arrived while one was asked for
	// or under way, so the next one spends a token.
	asked, running, loaded bool
	// rested: no translation starts before this (the rest after the last).
	rested time.Time
	// changes: the changes asked for since the last translation started;
	// folded: how many the running (or last) translation folded; hold:
	// the rest after a burst's translation (zero: no burst).
	changes, folded int
	hold            time.Duration
	// burstFrom: when the burst whose hold this is began.
	burstFrom time.Time
}

// New returns a Limiter with the given interval (zero or less: Interval)
// on the clock now (nil: time.Now), its bucket full.
func New(interval time.Duration, now func() time.Time) *Limiter {
	if interval <= 0 {
		interval = Interval
	}
	if now == nil {
		now = time.Now
	}
	return &Limiter{interval: interval, now: now, tokens: Burst, at: now()}
}

// refill brings tokens up to now. Call with l.mu held.
func (l *Limiter) refill() time.Time {
	now := l.now()
	if el := now.Sub(l.at); el > 0 {
		l.tokens = min(Burst, l.tokens+float64(el)/float64(l.interval))
	}
	l.at = now
	return now
}

// Wait records a change that asks for a translation, and returns how long
// until that translation may start (zero: now).
func (l *Limiter) Wait() time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.refill()
	if l.asked || l.running {
		l.loaded = true
	} else if !now.Before(l.rested) {
		// A quiet spell longer than the last rest: any burst is over.
		l.hold = 0
	}
	l.asked = true
	l.changes++
	return l.delay(now)
}

// delay is how long until a translation may start. Call with l.mu held.
func (l *Limiter) delay(now time.Time) time.Duration {
	d := max(l.rested.Sub(now), 0)
	if l.loaded && l.tokens < 1 {
		// Round up, so that the retry finds a whole token.
		d = max(d, time.Duration((1-l.tokens)*float64(l.interval))+time.Microsecond)
	}
	return d
}

// Take starts a translation now and returns zero, or returns how long to
// wait before it may start and starts nothing. A translation under load
// spends a token. Every translation started must be ended by Done.
func (l *Limiter) Take() time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.refill()
	if d := l.delay(now); d > 0 {
		return d
	}
	if l.loaded {
		l.tokens--
	}
	l.asked, l.loaded, l.running = false, false, true
	l.folded, l.changes = l.changes, 0
	return 0
}

// Hold is the rest after the last translation if it was a sustained
// burst's (see Limiter), zero otherwise: the burst's next translation
// comes no sooner than that after the last one ended. since is when the
// burst began (its first held translation's end).
func (l *Limiter) Hold() (hold time.Duration, since time.Time) {
	if l == nil {
		return 0, time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hold, l.burstFrom
}

// Done ends the translation started by Take, which took d: the next one
// starts no sooner than d from now (at least minRestIntervals, at most
// MaxDebt intervals), or than the hold if it was a sustained burst's.
func (l *Limiter) Done(d time.Duration) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.refill()
	l.running = false
	rest := min(max(d, time.Duration(minRestIntervals*float64(l.interval))), MaxDebt*l.interval)
	if l.folded >= Folded {
		if l.hold == 0 {
			l.burstFrom = now
		}
		l.hold = min(max(2*l.hold, 2*l.interval), maxHoldIntervals*l.interval)
		rest = max(rest, l.hold)
	} else {
		l.hold = 0
	}
	l.rested = now.Add(rest)
}
