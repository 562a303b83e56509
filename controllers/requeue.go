/*
Copyright The shardgate Authors.
*/

package controllers

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// requeue lets a reconciler queue objects that no watch event names
// (block-list changes, follow-up writes). It receives the controller's work
// queue when the controller starts (a source.Func calling startQueue); the
// queue is unbounded and deduplicates, so nothing is dropped however many
// objects one change touches. Until it is handed over they wait in pending.
type requeue struct {
	qmu     sync.Mutex
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]
	pending map[types.NamespacedName]struct{}
}

// startQueue receives the controller's work queue and adds everything that
// was enqueued before.
func (r *requeue) startQueue(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	r.queue = q
	for nn := range r.pending {
		q.Add(reconcile.Request{NamespacedName: nn})
	}
	r.pending = nil
	return nil
}

// enqueue makes the controller reconcile nn. It never drops.
func (r *requeue) enqueue(nn types.NamespacedName) {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	if r.queue != nil {
		r.queue.Add(reconcile.Request{NamespacedName: nn})
		return
	}
	if r.pending == nil {
		r.pending = map[types.NamespacedName]struct{}{}
	}
	r.pending[nn] = struct{}{}
}
