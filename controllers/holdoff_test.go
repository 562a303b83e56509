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

	"github.com/shardgate/shardgate/internal/translatelimit"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// The handler queues the key at once when a translation may start, and
// otherwise for when it may; a real delaying queue folds what comes in
// between.
func TestHoldOffHandlerQueues(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	// An interval long enough that the delayed add cannot come due while
	// the test looks, however loaded the machine.
	l := translatelimit.New(time.Hour, c.now)
	h := holdOffHandler{limit: l}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	ctx := context.Background()
	create := event.CreateEvent{Object: &gatewayv1.HTTPRoute{}}

	h.Create(ctx, create, q)
	if q.Len() != 1 {
		t.Fatalf("first event after a quiet spell: queue length %d, want 1", q.Len())
	}
	key, _ := q.Get()
	if l.Take() != 0 {
		t.Fatal("limiter refused the first translation")
	}
	// Under load, the burst spent: translations asked for while one runs,
	// each started once its rest is over, until none may start.
	for range translatelimit.Burst {
		l.Wait()
		l.Done(0)
		c.add(3 * time.Minute) // the least rest of an hour's interval
		if l.Take() != 0 {
			t.Fatal("limiter refused a translation of the burst")
		}
	}
	// Events during the translation are held for the next token.
	for range 10 {
		h.Create(ctx, create, q)
	}
	l.Done(0)
	q.Done(key)
	if q.Len() != 0 {
		t.Errorf("events under load while the limiter has no token: queue length %d, want 0 (held for later)", q.Len())
	}
	if d := l.Take(); d < 30*time.Minute {
		t.Errorf("translation under load with no token: wait %s, want most of an interval", d)
	}
}

// Changes one at a time, each arriving after the translation of the one
// before (a translation of 1 ms, the next change 3 ms after it ended), go
// into the real queue at once, every one of them: 250 changes a second of
// a single client are no load.
func TestHoldOffHandlerBackToBack(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := translatelimit.New(20*time.Millisecond, c.now)
	h := holdOffHandler{limit: l}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	ctx := context.Background()
	create := event.CreateEvent{Object: &gatewayv1.HTTPRoute{}}
	for i := range 200 {
		h.Create(ctx, create, q)
		if q.Len() != 1 {
			t.Fatalf("change %d, after its predecessor was translated: queue length %d, want 1 (queued at once)", i+1, q.Len())
		}
		key, _ := q.Get()
		if d := l.Take(); d != 0 {
			t.Fatalf("change %d: translation held %s", i+1, d)
		}
		c.add(time.Millisecond)
		l.Done(time.Millisecond)
		q.Done(key)
		c.add(3 * time.Millisecond)
	}
}
