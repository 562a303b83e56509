package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/status"
)

var translateSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "shardgate_translate_duration_seconds",
	Help:    "Time to build the snapshot and translate it (Gateway API to IR and status).",
	Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
})

func init() { ctrlmetrics.Registry.MustRegister(translateSeconds) }

// snapshotKey is the one work item: every event asks for a new translation
// of the whole snapshot, and the queue folds a burst into one.
var snapshotKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "snapshot"}}

// Publisher receives every translation (the xDS server). It must not block.
type Publisher interface {
	Publish(in *gatewayapi.Input, out *gatewayapi.Output)
}

// RuntimeSource supplies the facts about Gateways that come from outside the
// Gateway API objects: Envoy Service addresses and xDS publish results.
type RuntimeSource interface {
	Runtime() map[types.NamespacedName]gatewayapi.GatewayRuntime
}

// GatewayAPIReconciler translates the Gateway API snapshot. It runs on every
// replica: each serves xDS from its own translation. Status goes to the
// status writer, which writes on the leader only.
type GatewayAPIReconciler struct {
	Client         client.Client
	ControllerName string
	Status         *status.Writer
	Publisher      Publisher     // may be nil
	Runtime        RuntimeSource // may be nil
	// HoldOff delays a translation after the first event of a burst, so
	// that the burst is translated once (Contour holds 100 ms; we hold less).
	HoldOff time.Duration
	Log     logr.Logger
	// MutateInput, when set, edits each snapshot before translation. Tests
	// use it to feed loopback endpoints, which the apiserver refuses in
	// EndpointSlices; the controller leaves it nil.
	MutateInput func(*gatewayapi.Input)

	trigger chan event.GenericEvent
	once    sync.Once
}

// SetupWithManager watches every kind the translation reads.
func (r *GatewayAPIReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.once.Do(func() { r.trigger = make(chan event.GenericEvent, 1) })
	h := holdOffHandler{d: r.HoldOff}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("gatewayapi").
		WatchesRawSource(source.Channel(r.trigger, h)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1, NeedLeaderElection: new(false)})
	for _, o := range []client.Object{
		&gatewayv1.GatewayClass{}, &gatewayv1.Gateway{}, &gatewayv1.HTTPRoute{}, &gatewayv1.GRPCRoute{},
		&gatewayv1.TLSRoute{}, &gatewayv1beta1.ReferenceGrant{}, &corev1.Service{}, &discoveryv1.EndpointSlice{},
		&corev1.Secret{}, &corev1.Namespace{}, &shardgatev1alpha1.GatewayParameters{},
	} {
		b = b.Watches(o, h)
	}
	return b.Complete(r)
}

// Trigger asks for a translation (for example when a Gateway's runtime facts
// changed). It never blocks.
func (r *GatewayAPIReconciler) Trigger() {
	r.once.Do(func() { r.trigger = make(chan event.GenericEvent, 1) })
	select {
	case r.trigger <- event.GenericEvent{Object: &corev1.Namespace{}}:
	default:
	}
}

// Reconcile builds the snapshot from the cache, translates it, hands the
// status to the writer and the IR to the publisher.
func (r *GatewayAPIReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	in, err := r.snapshot(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	out := gatewayapi.Translate(in)
	translateSeconds.Observe(time.Since(start).Seconds())
	if r.Publisher != nil {
		r.Publisher.Publish(in, out)
	}
	r.Status.Submit(in, out)
	return reconcile.Result{}, nil
}

// snapshot lists every input from the informer cache. The objects are the
// cache's own (no deep copy): the translator and the writer only read them.
func (r *GatewayAPIReconciler) snapshot(ctx context.Context) (*gatewayapi.Input, error) {
	in := &gatewayapi.Input{ControllerName: r.ControllerName}
	nocopy := client.UnsafeDisableDeepCopy
	var (
		classes  gatewayv1.GatewayClassList
		gws      gatewayv1.GatewayList
		https    gatewayv1.HTTPRouteList
		grpcs    gatewayv1.GRPCRouteList
		tlss     gatewayv1.TLSRouteList
		grants   gatewayv1beta1.ReferenceGrantList
		svcs     corev1.ServiceList
		slices   discoveryv1.EndpointSliceList
		secrets  corev1.SecretList
		nss      corev1.NamespaceList
		params   shardgatev1alpha1.GatewayParametersList
		listOnes = []struct {
			list client.ObjectList
			what string
		}{
			{&classes, "GatewayClasses"}, {&gws, "Gateways"}, {&https, "HTTPRoutes"}, {&grpcs, "GRPCRoutes"},
			{&tlss, "TLSRoutes"}, {&grants, "ReferenceGrants"}, {&svcs, "Services"}, {&slices, "EndpointSlices"},
			{&secrets, "Secrets"}, {&nss, "Namespaces"}, {&params, "GatewayParameters"},
		}
	)
	for _, l := range listOnes {
		if err := r.Client.List(ctx, l.list, nocopy); err != nil {
			return nil, fmt.Errorf("list %s: %w", l.what, err)
		}
	}
	in.GatewayClasses = ptrs(classes.Items)
	in.Gateways = ptrs(gws.Items)
	in.HTTPRoutes = ptrs(https.Items)
	in.GRPCRoutes = ptrs(grpcs.Items)
	in.TLSRoutes = ptrs(tlss.Items)
	in.ReferenceGrants = ptrs(grants.Items)
	in.Services = ptrs(svcs.Items)
	in.EndpointSlices = ptrs(slices.Items)
	in.Secrets = ptrs(secrets.Items)
	in.Namespaces = ptrs(nss.Items)
	in.GatewayParameters = ptrs(params.Items)
	if r.Runtime != nil {
		in.Runtime = r.Runtime.Runtime()
	}
	if r.MutateInput != nil {
		r.MutateInput(in)
	}
	return in, nil
}

// holdOffHandler maps every event to the snapshot key, delayed by d. The
// delaying queue keeps the earliest deadline of a key, so a burst waits at
// most d after its first event.
type holdOffHandler struct{ d time.Duration }

func (h holdOffHandler) add(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if h.d <= 0 {
		q.Add(snapshotKey)
		return
	}
	q.AddAfter(snapshotKey, h.d)
}

func (h holdOffHandler) Create(_ context.Context, _ event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.add(q)
}
func (h holdOffHandler) Update(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.add(q)
}
func (h holdOffHandler) Delete(_ context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.add(q)
}
func (h holdOffHandler) Generic(_ context.Context, _ event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.add(q)
}

var _ handler.EventHandler = holdOffHandler{}
