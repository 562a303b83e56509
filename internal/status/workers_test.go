package status

import (
	"context"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/shardgate/shardgate/internal/testwait"
)

// runningWorkers counts the goroutines runWorkers started that have not
// returned yet, from every goroutine's stack.
func runningWorkers() int {
	n := 0
	for _, g := range strings.Split(allStacks(), "\n\n") {
		if workerFrame.MatchString(g) {
			n++
		}
	}
	return n
}

var workerFrame = regexp.MustCompile(`(?m)^github\.com/shardgate/shardgate/internal/status\.runWorkers\[[^\n]*\]\.func`)

// pool runs runWorkers over q with n slots until the test ends, and
// reports the writes in flight.
type pool[T comparable] struct {
	q        workqueue.TypedRateLimitingInterface[T]
	cancel   context.CancelFunc
	done     chan struct{}
	inFlight atomic.Int64
	most     atomic.Int64
}

func startPool[T comparable](t *testing.T, q workqueue.TypedRateLimitingInterface[T], n int, process func(context.Context, T)) *pool[T] {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &pool[T]{q: q, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		runWorkers(ctx, q, n, nil, func(item T) {
			now := p.inFlight.Add(1)
			for {
				most := p.most.Load()
				if now <= most || p.most.CompareAndSwap(most, now) {
					break
				}
			}
			defer p.inFlight.Add(-1)
			process(ctx, item)
		})
	}()
	t.Cleanup(func() { cancel(); <-p.done })
	return p
}

func newQueue[T comparable](limiter workqueue.TypedRateLimiter[T]) workqueue.TypedRateLimitingInterface[T] {
	return workqueue.NewTypedRateLimitingQueue(limiter)
}

func TestRunWorkersHoldNoGoroutineWhenIdle(t *testing.T) {
	q := newQueue(workqueue.DefaultTypedControllerRateLimiter[int]())
	base := runtime.NumGoroutine()
	var processed atomic.Int64
	startPool(t, q, 32, func(_ context.Context, i int) {
		processed.Add(1)
		q.Forget(i)
	})
	// Only the goroutine that runs runWorkers, waiting on the queue.
	idle := func() bool { return runningWorkers() == 0 && runtime.NumGoroutine() <= base+1 }
	testwait.For(t, "an idle pool before any work", idle)

	for round := range 3 {
		for i := range 200 {
			q.Add(round*1000 + i)
		}
		testwait.For(t, fmt.Sprintf("round %d's items", round), func() bool { return processed.Load() == int64(200*(round+1)) })
		testwait.For(t, fmt.Sprintf("no goroutine left after round %d", round), idle)
	}
}

func TestRunWorkersReachButNeverExceedTheirNumber(t *testing.T) {
	const n, items = 6, 40
	q := newQueue(workqueue.DefaultTypedControllerRateLimiter[int]())
	gate := make(chan struct{})
	var processed atomic.Int64
	p := startPool(t, q, n, func(_ context.Context, i int) {
		<-gate
		processed.Add(1)
		q.Forget(i)
	})
	release := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release) // runs before the pool's: a failed test does not hang
	for i := range items {
		q.Add(i)
	}
	// n writes block in flight; the rest stay queued, taken only when a
	// slot frees.
	testwait.For(t, "n items in flight", func() bool {
		return p.inFlight.Load() == n && q.Len() == items-n && runningWorkers() == n
	})
	release()
	testwait.For(t, "every item", func() bool { return processed.Load() == items })
	testwait.For(t, "no goroutine left", func() bool { return runningWorkers() == 0 })
	if got := p.most.Load(); got != n {
		t.Errorf("at most %d items in flight, want %d", got, n)
	}
}

// Many goroutines add the same few keys while the pool processes them and
// goes idle over and over: every key is processed after its last Add
// (none stranded in the queue with no goroutine to take it), never by two
// goroutines at once, and never more than n at a time.
func TestRunWorkersStrandNoItem(t *testing.T) {
	const n, keys, adders, adds, rounds = 3, 16, 8, 40, 50
	q := newQueue(workqueue.DefaultTypedControllerRateLimiter[int]())
	var (
		version [keys]atomic.Int64 // bumped before each Add
		seen    [keys]atomic.Int64 // the version a processing saw
		busy    [keys]atomic.Bool
		twice   atomic.Int64
	)
	p := startPool(t, q, n, func(_ context.Context, k int) {
		if !busy[k].CompareAndSwap(false, true) {
			twice.Add(1)
		}
		seen[k].Store(version[k].Load())
		runtime.Gosched()
		busy[k].Store(false)
		q.Forget(k)
	})
	for round := range rounds {
		var wg sync.WaitGroup
		for a := range adders {
			wg.Go(func() {
				for i := range adds {
					k := (a*adds + i + round) % keys
					version[k].Add(1)
					q.Add(k)
					if i%8 == 0 {
						runtime.Gosched()
					}
				}
			})
		}
		wg.Wait()
		testwait.For(t, fmt.Sprintf("round %d: every key processed after its last add, and the pool idle", round), func() bool {
			for k := range keys {
				if seen[k].Load() != version[k].Load() {
					return false
				}
			}
			return runningWorkers() == 0 && q.Len() == 0
		})
	}
	if got := twice.Load(); got != 0 {
		t.Errorf("%d items processed by two goroutines at once", got)
	}
	if got := p.most.Load(); got > n {
		t.Errorf("%d items in flight, more than %d", got, n)
	}
}

// A delayed item and a rate-limited retry are processed when they become
// ready, though no goroutine waited for them; an item due in an hour holds
// none meanwhile.
func TestRunWorkersTakeDelayedAndRetriedItems(t *testing.T) {
	q := newQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 100*time.Millisecond))
	var (
		mu       sync.Mutex
		attempts = map[string]int{}
	)
	count := func(k string) int { mu.Lock(); defer mu.Unlock(); return attempts[k] }
	startPool(t, q, 4, func(_ context.Context, k string) {
		mu.Lock()
		attempts[k]++
		n := attempts[k]
		mu.Unlock()
		if k == "flaky" && n < 4 {
			q.AddRateLimited(k) // failed: retried with backoff
			return
		}
		q.Forget(k)
	})
	q.AddAfter("parked", time.Hour)
	q.Add("now")
	q.AddAfter("later", 50*time.Millisecond)
	q.Add("flaky")
	testwait.For(t, "the immediate, delayed and retried items", func() bool {
		return count("now") == 1 && count("later") == 1 && count("flaky") == 4
	})
	testwait.For(t, "an idle pool with an item due in an hour", func() bool {
		return runningWorkers() == 0 && q.Len() == 0
	})
	if got := count("parked"); got != 0 {
		t.Errorf("the item due in an hour was processed %d times", got)
	}
}

// When ctx ends runWorkers returns, after every item it took was
// processed: those in flight finish, those still queued are handed out
// (with ctx ended), and no goroutine of it is left.
func TestRunWorkersStopWithTheirContext(t *testing.T) {
	const n, items = 2, 5
	q := newQueue(workqueue.DefaultTypedControllerRateLimiter[int]())
	var started, finished atomic.Int64
	p := startPool(t, q, n, func(ctx context.Context, i int) {
		started.Add(1)
		<-ctx.Done() // a write in flight, cut short by the stop
		finished.Add(1)
		q.Forget(i)
	})
	for i := range items {
		q.Add(i)
	}
	testwait.For(t, "n items in flight", func() bool { return p.inFlight.Load() == n })
	p.cancel()
	testwait.For(t, "runWorkers to return", func() bool {
		select {
		case <-p.done:
			return true
		default:
			return false
		}
	})
	if s, f := started.Load(), finished.Load(); s != items || f != items {
		t.Errorf("when runWorkers returned: %d items started, %d finished; want %d and %d", s, f, items, items)
	}
	if !q.ShuttingDown() {
		t.Error("the queue is not shut down")
	}
	testwait.For(t, "no goroutine left", func() bool { return runningWorkers() == 0 })
}

// While the gate holds, no item is taken: they stay queued, one entry
// each however often added, and no goroutine is started for them; once it
// opens, each is processed once.
func TestRunWorkersWaitAtTheirGate(t *testing.T) {
	q := newQueue(workqueue.DefaultTypedControllerRateLimiter[int]())
	open := make(chan struct{})
	gated := make(chan struct{}, 1)
	var mu sync.Mutex
	seen := map[int]int{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		runWorkers(ctx, q, 4, func() {
			select {
			case gated <- struct{}{}:
			default:
			}
			<-open
		}, func(i int) {
			mu.Lock()
			seen[i]++
			mu.Unlock()
			q.Forget(i)
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	for range 3 {
		for i := range 10 {
			q.Add(i)
		}
	}
	<-gated // the dispatcher is at the gate, with the items queued
	if n := q.Len(); n != 10 {
		t.Errorf("%d items queued at the gate, want 10 (one each)", n)
	}
	if n := runningWorkers(); n != 0 {
		t.Errorf("%d workers running while the gate holds", n)
	}
	close(open)
	testwait.For(t, "every item processed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 10
	})
	mu.Lock()
	defer mu.Unlock()
	for i, n := range seen {
		if n != 1 {
			t.Errorf("item %d processed %d times, want once", i, n)
		}
	}
}
