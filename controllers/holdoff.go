package controllers

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shardgate/shardgate/internal/gatewayapi"
)

// DefaultMinInterval is the least time between translations under load
// (see translateLimiter): every translation may push to every Gateway and
// queue status writes, so under a sustained burst this bounds both at 50
// per second.
const DefaultMinInterval = 20 * time.Millisecond

// translateBurst is how many translations under load may start back to
// back before the interval applies: a new lease's LeaseHost and the route
// generated for it, arriving while the first is translated, are not held.
const translateBurst = 4

// maxTranslateDebt caps, in intervals, the rest after a slow translation.
const maxTranslateDebt = 5

// minRestIntervals is the least rest after a translation, in intervals (1
// ms of the default 20): changes that come faster than that, however
// cheap their translations, are folded as a burst. A client that waits
// for its change to be published before making the next (an xDS push, a
// watch event, then its request and the apiserver's event) is slower.
const minRestIntervals = 1.0 / 20

// translateLimiter limits translations only under load, and load is
// measured the way changes arrive:
//
//   - A change that finds no translation under way or waiting is translated
//     at once (after the rest below): each of a provider's new leases,
//     arriving one after the other on no schedule, is published as soon as
//     it arrives, however many come.
//   - A change that arrives while a translation is under way or waiting
//     marks the controller loaded: the events are coming faster than the
//     translations, so the next translation spends a token of a bucket that
//     holds translateBurst and earns one per interval, and waits for one
//     when there is none. A sustained burst is so translated at most once
//     per interval on average, all its events folded into each translation
//     (the delaying queue keeps the earliest deadline of the one key).
//   - After every translation the controller rests as long as it took (at
//     least minRestIntervals, at most maxTranslateDebt intervals) before
//     the next starts, so it never spends more than about half its time
//     translating and leaves the rest of the machine to the apiserver whose
//     events it follows. The rest runs from the translation's end: a change
//     that arrives after a quiet spell longer than the rest does not wait.
type translateLimiter struct {
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
}

func newTranslateLimiter(interval time.Duration, now func() time.Time) *translateLimiter {
	if interval <= 0 {
		interval = DefaultMinInterval
	}
	return &translateLimiter{interval: interval, now: now, tokens: translateBurst, at: now()}
}

// refill brings tokens up to now. Call with l.mu held.
func (l *translateLimiter) refill() time.Time {
	now := l.now()
	if el := now.Sub(l.at); el > 0 {
		l.tokens = min(translateBurst, l.tokens+float64(el)/float64(l.interval))
	}
	l.at = now
	return now
}

// wait records a change that asks for a translation, and returns how long
// until that translation may start (zero: now). A nil limiter never waits.
func (l *translateLimiter) wait() time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.refill()
	if l.asked || l.running {
		l.loaded = true
	}
	l.asked = true
	return l.delay(now)
}

// delay is how long until a translation may start. Call with l.mu held.
func (l *translateLimiter) delay(now time.Time) time.Duration {
	d := max(l.rested.Sub(now), 0)
	if l.loaded && l.tokens < 1 {
		// Round up, so that the retry finds a whole token.
		d = max(d, time.Duration((1-l.tokens)*float64(l.interval))+time.Microsecond)
	}
	return d
}

// take starts a translation now and returns zero, or returns how long to
// wait before it may start and starts nothing. A translation under load
// spends a token. Every translation started must be ended by done. A nil
// limiter never waits.
func (l *translateLimiter) take() time.Duration {
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
	return 0
}

// done ends the translation started by take, which took d: the next one
// starts no sooner than d from now (at least minRestIntervals, at most
// maxTranslateDebt intervals).
func (l *translateLimiter) done(d time.Duration) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.refill()
	l.running = false
	rest := max(d, time.Duration(minRestIntervals*float64(l.interval)))
	l.rested = now.Add(min(rest, maxTranslateDebt*l.interval))
}

// holdOffHandler maps every event that can change the translation to the
// snapshot key: at once when the limiter lets a translation start now,
// otherwise when it will (the delaying queue keeps the earliest deadline of
// a key, so all the events until then are folded into one translation). d, when set,
// delays every translation by at least d after the first event of a burst.
//
// Updates that cannot change the translation (status written by us or by
// another controller, resyncs) are not translated: recheck compares such an
// object's status with its desired status instead.
type holdOffHandler struct {
	d       time.Duration
	limit   *translateLimiter
	recheck func(old, obj client.Object)
}

func (h holdOffHandler) add(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	d := max(h.d, h.limit.wait())
	if d <= 0 {
		q.Add(snapshotKey)
		return
	}
	q.AddAfter(snapshotKey, d)
}

func (h holdOffHandler) Create(_ context.Context, _ event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.add(q)
}
func (h holdOffHandler) Update(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if gatewayapi.Relevant(e.ObjectOld, e.ObjectNew) {
		h.add(q)
		return
	}
	if h.recheck != nil {
		h.recheck(e.ObjectOld, e.ObjectNew)
	}
}
func (h holdOffHandler) Delete(_ context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.add(q)
}
func (h holdOffHandler) Generic(_ context.Context, _ event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.add(q)
}

var _ handler.EventHandler = holdOffHandler{}

// storeHandler puts every event into the store, which decides once, at
// insert time, whether it can change the translation and what it affects;
// next then asks for a translation, or (an update that changes nothing the
// translator reads) rechecks the object's status.
type storeHandler struct {
	store *gatewayapi.Store
	next  holdOffHandler
}

func (h storeHandler) Create(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	// A new object that changes no translation (a Service or ConfigMap
	// nothing names yet) asks for none: the Store keeps it, and the
	// object that names it brings it in.
	if h.store.Upsert(e.Object) {
		h.next.add(q)
	}
}
func (h storeHandler) Update(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if h.store.Upsert(e.ObjectNew) {
		h.next.add(q)
		return
	}
	if h.next.recheck != nil {
		h.next.recheck(e.ObjectOld, e.ObjectNew)
	}
}
func (h storeHandler) Delete(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.store.Delete(e.Object)
	h.next.add(q)
}
func (h storeHandler) Generic(_ context.Context, _ event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.next.add(q)
}

var _ handler.EventHandler = storeHandler{}
