package status

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ObjectWriter writes the status of one kind of shardgate's own objects
// (LeaseHost, LeasedIP, GatewayParameters), whose reconcilers compute each
// object's whole status. It is the one status path for them:
//
//   - only on change: a desired status equal to the stored one is never
//     written;
//   - coalesced: the desired statuses of one object given before its write
//     starts become one write, of the latest;
//   - safe against lost updates: each write is bound to the resourceVersion
//     it read, and a conflict (409) reads the apiserver and tries again;
//   - bound to one object: a status computed for one UID is never written
//     to another object that took its name.
//
// Write may be called at any time and on any replica; the writing itself
// (Start) runs on the elected leader only. Failures are retried with the
// work queue's backoff until the object is gone or a newer status replaces
// the failed one.
type ObjectWriter[T client.Object] struct {
	kind    string
	client  client.Client // cached reads and writes
	reader  client.Reader // uncached reads, after a conflict or a lagging cache
	newObj  func() T
	workers int
	holdOff time.Duration
	log     logr.Logger

	mu      sync.Mutex
	pending map[types.NamespacedName]desiredStatus[T]
	// writing counts the writes under way.
	writing int
	// written is the resourceVersion our last write of each object
	// produced: a cached copy older than that is the cache lagging behind
	// us, not a status that needs writing again.
	written map[types.NamespacedName]uint64
	queue   workqueue.TypedRateLimitingInterface[types.NamespacedName]
}

// desiredStatus is what Write was last given for one object.
type desiredStatus[T client.Object] struct {
	uid types.UID
	set func(T)
}

// ObjectWriterOptions tune an ObjectWriter; zero values take the defaults.
type ObjectWriterOptions struct {
	// Workers write concurrently (default 8): each write is an apiserver
	// round trip, and a change that touches thousands of objects (a
	// block-list change revoking their names) should not wait for them
	// one by one. Each write runs in a goroutine that lasts as long as
	// it does: an idle writer holds none.
	Workers int
	// HoldOff delays each object's write after its first Write, so that
	// a burst of changes to it is written once (default 5 ms; negative:
	// none).
	HoldOff time.Duration
	Log     logr.Logger
}

// DefaultObjectHoldOff is ObjectWriterOptions.HoldOff's default.
const DefaultObjectHoldOff = 5 * time.Millisecond

// NewObjectWriter returns a writer for the status of kind (used in logs and
// the shardgate_status_writes_total metric), whose objects newObj makes.
// Reads go to c's cache and, after a conflict, to reader (the apiserver).
func NewObjectWriter[T client.Object](kind string, c client.Client, reader client.Reader, newObj func() T, opts ObjectWriterOptions) *ObjectWriter[T] {
	if opts.Workers <= 0 {
		opts.Workers = 8
	}
	switch {
	case opts.HoldOff == 0:
		opts.HoldOff = DefaultObjectHoldOff
	case opts.HoldOff < 0:
		opts.HoldOff = 0
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	if reader == nil {
		reader = c
	}
	return &ObjectWriter[T]{
		kind: kind, client: c, reader: reader, newObj: newObj,
		workers: opts.Workers, holdOff: opts.HoldOff, log: opts.Log.WithValues("kind", kind),
		pending: map[types.NamespacedName]desiredStatus[T]{},
		written: map[types.NamespacedName]uint64{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](10*time.Millisecond, 10*time.Second),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "status-" + kind}),
	}
}

// Write asks for obj's status to become what set makes of it. set is given
// a fresh copy of the stored object (as read when the write happens) and
// must change only its status; it may run more than once, after a
// conflict. A later Write for the same object, before this one is
// written, replaces it.
func (w *ObjectWriter[T]) Write(obj T, set func(T)) {
	nn := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	w.mu.Lock()
	w.pending[nn] = desiredStatus[T]{uid: obj.GetUID(), set: set}
	w.mu.Unlock()
	if w.holdOff > 0 {
		w.queue.AddAfter(nn, w.holdOff)
		return
	}
	w.queue.Add(nn)
}

// Forget drops what is known of the object named nn (it was deleted):
// a pending status is not written.
func (w *ObjectWriter[T]) Forget(nn types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pending, nn)
	delete(w.written, nn)
}

// Settled reports whether every status given to Write has been written
// (or found unneeded): none is waiting, being written or due for a retry.
func (w *ObjectWriter[T]) Settled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending) == 0 && w.writing == 0
}

// Start writes until ctx ends, at most Workers writes at a time, each in
// a goroutine that exists only while it writes (see runWorkers).
func (w *ObjectWriter[T]) Start(ctx context.Context) error {
	runWorkers(ctx, w.queue, w.workers, nil, func(nn types.NamespacedName) { w.process(ctx, nn) })
	return nil
}

// NeedLeaderElection: only the leader writes.
func (w *ObjectWriter[T]) NeedLeaderElection() bool { return true }

// process writes the pending status of nn, if any, and queues it again,
// rate limited, when that fails.
func (w *ObjectWriter[T]) process(ctx context.Context, nn types.NamespacedName) {
	w.mu.Lock()
	d, ok := w.pending[nn]
	delete(w.pending, nn)
	if ok {
		w.writing++
	}
	w.mu.Unlock()
	if !ok {
		w.queue.Forget(nn)
		return
	}
	err := w.write(ctx, nn, d)
	w.mu.Lock()
	w.writing--
	if err != nil && ctx.Err() == nil {
		// Due for a retry: pending again, unless a newer status came.
		if _, newer := w.pending[nn]; !newer {
			w.pending[nn] = d
		}
	}
	w.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		w.log.V(1).Info("status write failed; retrying", "object", nn, "error", err.Error())
		w.queue.AddRateLimited(nn)
		return
	}
	w.queue.Forget(nn)
}

// write brings one object's status in line with d. It reads the cache
// first and, when the cache lags behind our own last write or a write
// conflicted, the apiserver.
func (w *ObjectWriter[T]) write(ctx context.Context, nn types.NamespacedName, d desiredStatus[T]) error {
	var reader client.Reader = w.client
	for attempt := 0; attempt < 4; attempt++ {
		obj := w.newObj()
		if err := reader.Get(ctx, nn, obj); err != nil {
			if apierrors.IsNotFound(err) {
				w.Forget(nn)
				return nil
			}
			return fmt.Errorf("get %s %s: %w", w.kind, nn, err)
		}
		if d.uid != "" && obj.GetUID() != d.uid {
			// Another object took the name; its own reconcile writes it.
			return nil
		}
		if w.behind(nn, obj.GetResourceVersion()) && reader != w.reader {
			reader = w.reader
			continue
		}
		want := obj.DeepCopyObject().(T)
		d.set(want)
		if equality.Semantic.DeepEqual(obj, want) {
			return nil
		}
		writesTotal.WithLabelValues(w.kind).Inc()
		err := w.client.Status().Update(ctx, want)
		if err == nil {
			w.recordWrite(nn, want.GetResourceVersion())
			return nil
		}
		if apierrors.IsNotFound(err) {
			w.Forget(nn)
			return nil
		}
		if !apierrors.IsConflict(err) {
			return fmt.Errorf("write status of %s %s: %w", w.kind, nn, err)
		}
		reader = w.reader
	}
	return fmt.Errorf("write status of %s %s: conflicts persisted", w.kind, nn)
}

// behind: rv is older than the resourceVersion our last write of nn
// produced. resourceVersions are compared as numbers only as a hint to
// skip a write bound to conflict; one that does not parse is not behind.
func (w *ObjectWriter[T]) behind(nn types.NamespacedName, rv string) bool {
	w.mu.Lock()
	last, ok := w.written[nn]
	w.mu.Unlock()
	if !ok {
		return false
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	return err == nil && n < last
}

func (w *ObjectWriter[T]) recordWrite(nn types.NamespacedName, rv string) {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return
	}
	w.mu.Lock()
	w.written[nn] = n
	w.mu.Unlock()
}
