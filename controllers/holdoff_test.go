package controllers

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func TestTranslateLimiter(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := newTranslateLimiter(20*time.Millisecond, c.now)

	// After a quiet spell a burst of translateBurst goes at once.
	for i := range translateBurst {
		if d := l.take(); d != 0 {
			t.Fatalf("translation %d after a quiet spell waits %s", i+1, d)
		}
	}
	d := l.take()
	if d <= 0 || d > 20*time.Millisecond+time.Millisecond {
		t.Fatalf("translation after the burst: wait %s, want about 20ms", d)
	}
	if w := l.wait(); w != d {
		t.Errorf("wait %s, take said %s", w, d)
	}

	// Sustained churn: one translation per interval, however many ask.
	started := 0
	for range 1000 { // 1000 ms of an event every millisecond
		c.add(time.Millisecond)
		if l.take() == 0 {
			started++
		}
	}
	if started < 49 || started > 50 {
		t.Errorf("%d translations in 1 s of churn, want 50 (one per 20 ms)", started)
	}

	// Quiet again: the tokens come back, capped at the burst.
	c.add(time.Hour)
	for i := range translateBurst {
		if d := l.take(); d != 0 {
			t.Fatalf("translation %d after an hour's quiet waits %s", i+1, d)
		}
	}
	if d := l.take(); d == 0 {
		t.Errorf("tokens were not capped at %d", translateBurst)
	}

	// A slow translation pays for its time: one of 30 ms costs twice that,
	// three intervals, its token and two more; on a full bucket, the next
	// ones find 4-1-2 = 1 token.
	c.add(time.Hour)
	if l.take() != 0 {
		t.Fatal("no token after an hour")
	}
	l.done(30 * time.Millisecond)
	if l.take() != 0 {
		t.Fatal("the token left after a slow translation was refused")
	}
	if d := l.take(); d <= 0 || d > 20*time.Millisecond+time.Millisecond {
		t.Errorf("after a slow translation: wait %s, want about 20ms", d)
	}
	// The charge is capped: a translation of a minute waits at most
	// maxTranslateDebt intervals more.
	c.add(time.Hour)
	l.take()
	l.done(time.Minute)
	if d := l.wait(); d > time.Duration(maxTranslateDebt+1)*20*time.Millisecond {
		t.Errorf("after a one-minute translation: wait %s, want ≤ %d intervals", d, maxTranslateDebt+1)
	}
	// Under sustained churn of 10 ms translations, the controller
	// translates at most about half the time.
	c.add(time.Hour)
	busy := time.Duration(0)
	for range 1000 {
		c.add(time.Millisecond)
		if l.take() == 0 {
			l.done(10 * time.Millisecond)
			busy += 10 * time.Millisecond
		}
	}
	if busy > 600*time.Millisecond {
		t.Errorf("%s of 10 ms translations in 1 s of churn, want at most about half", busy)
	}

	// Changes arriving one per interval, each translated in 2 ms, are
	// each translated at once however long that lasts: a short
	// translation costs its token only. The arrivals jitter by a
	// millisecond either way.
	c.add(time.Hour)
	for i := range 1000 {
		c.add(20*time.Millisecond + time.Duration(1-2*(i%2))*time.Millisecond)
		if d := l.take(); d != 0 {
			t.Fatalf("change %d, one per interval: waits %s", i+1, d)
		}
		l.done(2 * time.Millisecond)
	}

	if (*translateLimiter)(nil).take() != 0 {
		t.Errorf("a nil limiter must never wait")
	}
	if newTranslateLimiter(0, c.now).interval != DefaultMinInterval {
		t.Errorf("zero interval must mean DefaultMinInterval")
	}
}

// The handler queues the key at once when a translation may start, and
// otherwise for when it may; a real delaying queue folds what comes in
// between.
func TestHoldOffHandlerQueues(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	// An interval long enough that the delayed add cannot come due while
	// the test looks, however loaded the machine.
	l := newTranslateLimiter(time.Hour, c.now)
	h := holdOffHandler{limit: l}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	ctx := context.Background()
	create := event.CreateEvent{Object: &gatewayv1.HTTPRoute{}}

	h.Create(ctx, create, q)
	if q.Len() != 1 {
		t.Fatalf("first event after a quiet spell: queue length %d, want 1", q.Len())
	}
	for range translateBurst {
		if l.take() != 0 {
			t.Fatal("limiter refused the burst")
		}
	}
	key, _ := q.Get()
	q.Done(key)
	for range 10 {
		h.Create(ctx, create, q)
	}
	if q.Len() != 0 {
		t.Errorf("events while the limiter has no token: queue length %d, want 0 (held for later)", q.Len())
	}
}
