package controllers

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
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
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/leasehosts"
	"github.com/shardgate/shardgate/internal/status"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/sharding"
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
	// Cache is the manager's informer cache; snapshots read its stores.
	Cache          cache.Cache
	ControllerName string
	Status         *status.Writer
	Publisher      Publisher     // may be nil
	Runtime        RuntimeSource // may be nil
	// HoldOff delays a translation after the first event of a burst, so
	// that the burst is translated once (Contour holds 100 ms; we hold less).
	HoldOff time.Duration
	Log     logr.Logger
	// Tenancy says where shards may live (nil: the safe defaults); a
	// Gateway with shard parameters elsewhere is not Accepted.
	Tenancy *Tenancy
	// Blocked is the provider's block list (nil: none); shards serve no
	// route for a blocked name.
	Blocked func() *hostnames.BlockList
	// MutateInput, when set, edits each snapshot before translation. Tests
	// use it to feed loopback endpoints, which the apiserver refuses in
	// EndpointSlices; the controller leaves it nil.
	MutateInput func(*gatewayapi.Input)

	trigger chan event.GenericEvent
	once    sync.Once
	// store holds the watched objects as the event handlers deliver them,
	// and marks what each change affects; translator redoes only that.
	store      *gatewayapi.Store
	translator *gatewayapi.Translator
	// ownership: the last translation's ownership facts, which the next
	// one's handover reads; ownershipOf memoises them (see ownershipFor).
	ownership   *gatewayapi.Ownership
	ownershipOf ownershipInputs
}

// ownershipInputs identifies what a computed Ownership was computed from:
// the informers' objects are immutable, so the same pointers mean the same
// objects.
type ownershipInputs struct {
	leaseHosts map[*shardgatev1alpha1.LeaseHost]struct{}
	namespaces map[*corev1.Namespace]struct{}
	shards     []sharding.Shard
	refused    []types.NamespacedName
	blocked    *hostnames.BlockList
	policy     tenancy.Policy
	computed   *gatewayapi.Ownership
}

// SetupWithManager watches every kind the translation reads.
func (r *GatewayAPIReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.once.Do(func() { r.trigger = make(chan event.GenericEvent, 1) })
	r.store = gatewayapi.NewStore(r.ControllerName)
	r.translator = gatewayapi.NewTranslator(r.store)
	h := holdOffHandler{d: r.HoldOff, recheck: r.Status.Recheck}
	sh := storeHandler{store: r.store, next: h}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("gatewayapi").
		WatchesRawSource(source.Channel(r.trigger, h)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1, NeedLeaderElection: new(false)})
	for _, o := range []client.Object{
		&gatewayv1.GatewayClass{}, &gatewayv1.Gateway{}, &gatewayv1.HTTPRoute{}, &gatewayv1.GRPCRoute{},
		&gatewayv1.TLSRoute{}, &gatewayv1beta1.ReferenceGrant{}, &corev1.Service{}, &discoveryv1.EndpointSlice{},
		&corev1.Secret{}, &corev1.Namespace{}, &shardgatev1alpha1.GatewayParameters{},
	} {
		b = b.Watches(o, sh)
	}
	// LeaseHosts decide which names shards serve (Ownership), which
	// Reconcile computes from the cache.
	b = b.Watches(&shardgatev1alpha1.LeaseHost{}, h)
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
	var out *gatewayapi.Output
	if r.MutateInput != nil {
		// Objects fed by a test hook are not in the store.
		out = gatewayapi.Translate(in)
	} else {
		out = r.translator.Translate(gatewayapi.FactsOf(in))
	}
	translateSeconds.Observe(time.Since(start).Seconds())
	if r.Publisher != nil {
		r.Publisher.Publish(in, out)
	}
	r.Status.Submit(in, out)
	return reconcile.Result{}, nil
}

// snapshot lists the store's objects (the informers' own: no copy) and
// adds the facts that do not come from them: the Gateways' runtime, the
// shard refusals and the ownership facts.
func (r *GatewayAPIReconciler) snapshot(ctx context.Context) (*gatewayapi.Input, error) {
	in := r.store.Input(gatewayapi.Facts{})
	if r.Runtime != nil {
		in.Runtime = r.Runtime.Runtime()
	}
	leaseHosts, err := storeList[shardgatev1alpha1.LeaseHost](ctx, r.Cache)
	if err != nil {
		return nil, err
	}
	shards, problems := sharding.Discover(r.ControllerName, in.GatewayClasses, in.Gateways, in.GatewayParameters, r.Tenancy.Placement(in.Namespaces))
	in.ShardRefusals = shardRefusals(problems)
	in.Ownership = r.ownershipFor(in, leaseHosts, shards, problems)
	if r.MutateInput != nil {
		r.MutateInput(in)
	}
	return in, nil
}

// ownershipFor computes which routes the shards may serve: the hostname
// engine run over the live LeaseHosts (leasehosts.Ownership), plus the
// names kept through a same-owner handover (leasehosts.Handover). Every
// Gateway that has a shard section counts as a shard here, even one that
// Discover could not use (a bad selector, a duplicate name): such a
// Gateway still allows routes from every namespace, and serves only what
// the engine allows, in the strict Generated mode.
//
// The engine run costs O(LeaseHosts); it is redone only when a LeaseHost,
// a Namespace, the shards, the block list or the owner policy changed, and
// a changed result makes the translator translate everything again
// (reusing the routes' compilations).
func (r *GatewayAPIReconciler) ownershipFor(in *gatewayapi.Input, leaseHosts []*shardgatev1alpha1.LeaseHost, shards []sharding.Shard, problems []sharding.Problem) *gatewayapi.Ownership {
	var refused []types.NamespacedName
	for _, p := range problems {
		if p.Reason != sharding.ReasonInvalidParameters && !slices.Contains(refused, p.Gateway) {
			refused = append(refused, p.Gateway)
		}
	}
	var blocked *hostnames.BlockList
	if r.Blocked != nil {
		blocked = r.Blocked()
	}
	policy := r.Tenancy.Policy()
	key := ownershipInputs{shards: shards, refused: refused, blocked: blocked, policy: policy}
	base := r.ownershipOf.computed
	if base == nil || !r.ownershipOf.same(&key, leaseHosts, in.Namespaces) {
		key.leaseHosts, key.namespaces = set(leaseHosts), set(in.Namespaces)
		base = leasehosts.Ownership(leasehosts.OwnershipInput{
			LeaseHosts: leaseHosts, Namespaces: in.Namespaces, Shards: shards, Policy: policy, Blocked: blocked,
		})
		for _, gw := range refused {
			if _, ok := base.Shards[gw]; !ok {
				base.Shards[gw] = gatewayapi.RoutesGenerated
			}
		}
		key.computed = base
		r.ownershipOf = key
	}
	live := make(map[types.UID]bool, len(leaseHosts))
	for _, lh := range leaseHosts {
		if lh.DeletionTimestamp == nil {
			live[lh.UID] = true
		}
	}
	out := leasehosts.Handover(r.ownership, base, in.HTTPRoutes, live)
	r.ownership = out
	return out
}

func (k *ownershipInputs) same(o *ownershipInputs, leaseHosts []*shardgatev1alpha1.LeaseHost, namespaces []*corev1.Namespace) bool {
	return sameSet(k.leaseHosts, leaseHosts) && sameSet(k.namespaces, namespaces) &&
		reflect.DeepEqual(k.shards, o.shards) && slices.Equal(k.refused, o.refused) && k.blocked == o.blocked &&
		slices.Equal(k.policy.Keys, o.policy.Keys) && k.policy.RequireOwner == o.policy.RequireOwner
}

func set[T any](items []*T) map[*T]struct{} {
	out := make(map[*T]struct{}, len(items))
	for _, it := range items {
		out[it] = struct{}{}
	}
	return out
}

// sameSet: items are exactly the members of s (the store's lists come in
// no particular order).
func sameSet[T any](s map[*T]struct{}, items []*T) bool {
	if len(s) != len(items) {
		return false
	}
	for _, it := range items {
		if _, ok := s[it]; !ok {
			return false
		}
	}
	return true
}

// shardRefusals are the Gateways that may not be shards where they live.
func shardRefusals(problems []sharding.Problem) map[types.NamespacedName]string {
	var out map[types.NamespacedName]string
	for _, p := range problems {
		if p.Reason != sharding.ReasonShardInTenantNamespace && p.Reason != sharding.ReasonShardNamespaceNotAllowed {
			continue
		}
		if out == nil {
			out = map[types.NamespacedName]string{}
		}
		out[p.Gateway] = p.Reason + ": " + p.Message
	}
	return out
}

// storeList returns the objects in the informer store for T, as stored.
func storeList[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, c cache.Cache) ([]*T, error) {
	var zero T
	obj := PT(&zero)
	inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(true))
	if err != nil {
		return nil, fmt.Errorf("informer for %T: %w", obj, err)
	}
	st, ok := inf.(interface{ GetStore() toolscache.Store })
	if !ok {
		return nil, fmt.Errorf("informer for %T has no store", obj)
	}
	items := st.GetStore().List()
	out := make([]*T, 0, len(items))
	for _, it := range items {
		if t, ok := it.(*T); ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// holdOffHandler maps every event that can change the translation to the
// snapshot key, delayed by d. The delaying queue keeps the earliest deadline
// of a key, so a burst waits at most d after its first event; with d = 0 a
// lone change is translated at once and the events of a burst that arrive
// during a translation are folded into the next one.
//
// Updates that cannot change the translation (status written by us or by
// another controller, resyncs) are not translated: recheck compares such an
// object's status with its desired status instead.
type holdOffHandler struct {
	d       time.Duration
	recheck func(client.Object)
}

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
	if gatewayapi.Relevant(e.ObjectOld, e.ObjectNew) {
		h.add(q)
		return
	}
	if h.recheck != nil {
		h.recheck(e.ObjectNew)
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
	h.store.Upsert(e.Object)
	h.next.add(q)
}
func (h storeHandler) Update(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if h.store.Upsert(e.ObjectNew) {
		h.next.add(q)
		return
	}
	if h.next.recheck != nil {
		h.next.recheck(e.ObjectNew)
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
