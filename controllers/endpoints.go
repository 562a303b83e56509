/*
Copyright The shardgate Authors.
*/

package controllers

import (
	"context"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// endpointHandler hands every EndpointSlice event to the publisher, which
// keeps the slices and publishes the load assignments they change. It
// never enqueues: no Gateway API translation reads EndpointSlices.
type endpointHandler struct {
	publisher Publisher // may be nil
}

func (h endpointHandler) Create(_ context.Context, e event.CreateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.update(nil, e.Object)
}

func (h endpointHandler) Update(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.update(e.ObjectOld, e.ObjectNew)
}

func (h endpointHandler) Delete(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.update(e.Object, nil)
}

func (h endpointHandler) Generic(context.Context, event.GenericEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}

func (h endpointHandler) update(oldObj, newObj any) {
	if h.publisher == nil {
		return
	}
	old, _ := oldObj.(*discoveryv1.EndpointSlice)
	obj, _ := newObj.(*discoveryv1.EndpointSlice)
	if old == nil && obj == nil {
		return
	}
	h.publisher.UpdateEndpointSlice(old, obj)
}

var _ handler.EventHandler = endpointHandler{}
