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

// DefaultMinInterval is the least time between translations under sustained
// churn: every translation may push to every Gateway and queue status
// writes, so this bounds both at 50 per second.
const DefaultMinInterval = 20 * time.Millisecond

// translateBurst is how many translations may start back to back after a
// quiet spell. A new lease creates a Service, an EndpointSlice (which goes
// to the xDS server alone) and a route one after the other; each change is
// translated and pushed as it arrives instead of the route waiting for the
// interval.
const translateBurst = 4

// maxTranslateDebt caps what a long translation costs beyond its token, in
// intervals: a slow full translation delays the next one by at most this
// many intervals more.
const maxTranslateDebt = 5

// translateLimiter spaces translations with a token bucket: it holds up to
// translateBurst tokens and earns one per interval. A change after a quiet
// spell finds a token and is translated at once; under sustained churn
// translations start at most once per interval on average, and the events
// of each interval are folded into one translation.
//
// A slow translation also pays for the time it took (done): in all it
// costs twice its time in intervals, so that a translation of d starts at
// least 2d after the one before, up to maxTranslateDebt intervals more than
// its token. So under sustained churn the controller spends at most about
// half its time translating and leaves the rest of the machine to the
// apiserver whose events it is following. A translation of at most half an
// interval costs its token only: changes arriving one per interval are each
// translated at once, however long the churn lasts.
type translateLimiter struct {
	interval time.Duration
	now      func() time.Time

	mu     sync.Mutex
	tokens float64
	at     time.Time // when tokens was last brought up to date
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

// wait is how long until a translation may start (zero: now).
func (l *translateLimiter) wait() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill()
	return l.deficit()
}

func (l *translateLimiter) deficit() time.Duration {
	if l.tokens >= 1 {
		return 0
	}
	// Round up, so that the retry finds a whole token.
	return time.Duration((1-l.tokens)*float64(l.interval)) + time.Microsecond
}

// take spends a token for a translation starting now and returns zero, or
// returns how long to wait for one and spends nothing. A nil limiter never
// waits.
func (l *translateLimiter) take() time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill()
	if d := l.deficit(); d > 0 {
		return d
	}
	l.tokens--
	return 0
}

// done charges the translation that took d what it cost beyond its token:
// twice its time, in intervals, less the token's one.
func (l *translateLimiter) done(d time.Duration) {
	if l == nil {
		return
	}
	extra := 2*float64(d)/float64(l.interval) - 1
	if extra <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill()
	l.tokens -= min(extra, maxTranslateDebt)
}

// holdOffHandler maps every event that can change the translation to the
// snapshot key: at once when the limiter has a token, otherwise when it
// will have one (the delaying queue keeps the earliest deadline of a key, so
// all the events until then are folded into one translation). d, when set,
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
	d := h.d
	if h.limit != nil {
		d = max(d, h.limit.wait())
	}
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
