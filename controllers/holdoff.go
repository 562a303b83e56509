package controllers

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/translatelimit"
)

// holdOffHandler maps every event that can change the translation to the
// snapshot key: at once when the limiter (internal/translatelimit) lets a
// translation start now, otherwise when it will (the delaying queue keeps
// the earliest deadline of a key, so all the events until then are folded
// into one translation).
//
// Updates that cannot change the translation (status written by us or by
// another controller, resyncs) are not translated: recheck compares such an
// object's status with its desired status instead.
type holdOffHandler struct {
	limit   *translatelimit.Limiter
	recheck func(old, obj client.Object)
}

func (h holdOffHandler) add(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	d := h.limit.Wait()
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
