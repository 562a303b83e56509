package status

import (
	"context"
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// runWorkers processes q's items until ctx ends, at most n at a time, each
// in a goroutine of its own that exists only while it processes its item:
// an idle writer holds no goroutine (and no stack) of its own. The
// caller's goroutine is the one that waits on q: it takes an item once
// fewer than n are being processed and starts a goroutine for it, so an
// item added, or a delayed or rate-limited one becoming ready, is taken as
// soon as a slot is free, however the goroutines before it ended.
//
// The work queue still decides what is processed and when: it never hands
// out an item that is being processed (a second Add of it waits for its
// Done), and it keeps one entry per item however often it is added.
// process is given each item; runWorkers marks it Done when process
// returns, so process calls Forget or AddRateLimited as with workers of
// its own.
//
// gate, when not nil, is called before each item is taken: it may wait
// (a sustained burst, see Writer.waitBurst), and the items stay in q
// meanwhile, one entry each, with no goroutine held for them.
//
// When ctx ends runWorkers shuts q down; the items still queued are
// processed (with ctx ended), as the queue hands them out after a
// shutdown, and runWorkers returns once every goroutine it started has.
func runWorkers[T comparable](ctx context.Context, q workqueue.TypedInterface[T], n int, gate func(), process func(T)) {
	stop := context.AfterFunc(ctx, q.ShutDown)
	defer stop()
	n = max(n, 1)
	slots := make(chan struct{}, n)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		// A slot first, then the item: an item taken from q is never
		// left waiting for a goroutine, so it stays visible to Len and
		// to the queue's metrics until one can process it.
		if gate != nil {
			gate()
		}
		slots <- struct{}{}
		item, quit := q.Get()
		if quit {
			return
		}
		wg.Go(func() {
			defer func() { <-slots }()
			defer q.Done(item)
			process(item)
		})
	}
}
