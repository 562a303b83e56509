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
	toolscache "k8s.io/client-go/tools/cache"
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
	"github.com/shardgate/shardgate/internal/akash"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/internal/leasehosts"
	"github.com/shardgate/shardgate/internal/status"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/internal/translatelimit"
	"github.com/shardgate/shardgate/sharding"
)

var translateSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "shardgate_translate_duration_seconds",
	Help:    "Time to build the snapshot and translate it (Gateway API to IR and status).",
	Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
})

// gatewayTranslations counts how each translation handled each Gateway:
// assembled in full, patched with the routes that changed, or reused as
// it was. A change that assembles every Gateway again shows here.
var gatewayTranslations = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "shardgate_gateway_translations_total",
	Help: "Gateways translated, by how: full (assembled again), patched (the changed routes applied to the last assembly) or reused (unchanged).",
}, []string{"how"})

var (
	gatewayTranslationsFull    = gatewayTranslations.WithLabelValues("full")
	gatewayTranslationsPatched = gatewayTranslations.WithLabelValues("patched")
	gatewayTranslationsReused  = gatewayTranslations.WithLabelValues("reused")
)

func init() { ctrlmetrics.Registry.MustRegister(translateSeconds, gatewayTranslations) }

// snapshotKey is the one work item: every event asks for a new translation
// of the whole snapshot, and the queue folds a burst into one.
var snapshotKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "snapshot"}}

// Publisher receives the IR of every Gateway to serve, and every
// EndpointSlice change (the xDS server). The IR names each cluster's
// Service port; the publisher gives it that port's endpoints from the
// slices, so a slice change goes to it alone, with no translation. Neither
// method may block for long.
type Publisher interface {
	Publish(gateways []*ir.Gateway)
	UpdateEndpointSlice(old, obj *discoveryv1.EndpointSlice)
}

// RuntimeSource supplies the facts about Gateways that come from outside the
// Gateway API objects: Envoy Service addresses. (xDS publish outcomes go
// from the publisher to the status writer, not through translation.)
type RuntimeSource interface {
	Runtime() map[types.NamespacedName]gatewayapi.GatewayRuntime
}

// GatewayAPIReconciler translates the Gateway API snapshot. It runs on every
// replica: each serves xDS from its own translation. Status goes to the
// status writer, which writes on the leader only.
type GatewayAPIReconciler struct {
	// Cache is the manager's informer cache; snapshots read its stores.
	Cache          Informers
	ControllerName string
	Status         *status.Writer
	Publisher      Publisher     // may be nil
	Runtime        RuntimeSource // may be nil
	Log            logr.Logger
	// Tenancy says where shards may live (nil: the safe defaults); a
	// Gateway with shard parameters elsewhere is not Accepted.
	Tenancy *Tenancy
	// Blocked is the provider's block list (nil: none); shards serve no
	// route for a blocked name.
	Blocked func() *hostnames.BlockList
	// TenantLimits bound each tenant's routes on each shard (nil: no
	// limits); read on every translation.
	TenantLimits func() gatewayapi.TenantLimits
	// AkashNamespace, when set (Akash mode), is where the provider writes
	// ProviderHosts: their names are claims in the ownership facts, so the
	// shards serve the routes generated for them.
	AkashNamespace string
	// Certificates, when set, receives every translation's ownership
	// facts and shards (automatic HTTPS); Submit must not block.
	Certificates interface {
		Submit(*gatewayapi.Ownership, []sharding.Shard)
	}

	trigger chan event.GenericEvent
	once    sync.Once
	// limit spaces translations, and so xDS pushes and status batches,
	// under load only (internal/translatelimit).
	limit *translatelimit.Limiter
	// prepared makes the store, translator, limiter and handlers once
	// (prepare); events is the handler that asks for a translation.
	prepared sync.Once
	events   holdOffHandler
	// store holds the watched objects as the event handlers deliver them,
	// and marks what each change affects; translator redoes only that.
	store      *gatewayapi.Store
	translator *gatewayapi.Translator
	// facts keeps the ownership facts between translations, and says how
	// each differs from the last (leasehosts.Facts); akash, the
	// ProviderHosts' claims they read (akash.Claims).
	facts *leasehosts.Facts
	akash akash.Claims
	// shards are the last snapshot's, for Certificates.
	shards []sharding.Shard
}

// Informers is what the reconciler needs of the manager's cache: a kind's
// informer, whose store a snapshot lists.
type Informers interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
}

// Watch is one kind the translation reads, and the handler its events go
// to.
type Watch struct {
	Object  client.Object
	Handler handler.EventHandler
}

// prepare makes the store, the translator, the limiter and the event
// handlers, once, from the fields set by then.
func (r *GatewayAPIReconciler) prepare() {
	r.prepared.Do(func() {
		r.once.Do(func() { r.trigger = make(chan event.GenericEvent, 1) })
		r.store = gatewayapi.NewStore(r.ControllerName)
		r.translator = gatewayapi.NewTranslator(r.store)
		r.limit = translatelimit.New(translatelimit.Interval, time.Now)
		r.events = holdOffHandler{limit: r.limit, recheck: r.Status.RecheckUpdate}
	})
}

// Watches are the kinds the translation reads, each with the handler its
// informer's events go to, as SetupWithManager registers them. The first
// call prepares the reconciler from its fields.
func (r *GatewayAPIReconciler) Watches() []Watch {
	r.prepare()
	sh := storeHandler{store: r.store, next: r.events}
	var out []Watch
	for _, o := range []client.Object{
		&gatewayv1.GatewayClass{}, &gatewayv1.Gateway{}, &gatewayv1.HTTPRoute{}, &gatewayv1.GRPCRoute{},
		&gatewayv1.TLSRoute{}, &gatewayv1.TCPRoute{}, &gatewayv1.ListenerSet{}, &gatewayv1beta1.ReferenceGrant{}, &corev1.Service{},
		&corev1.Secret{}, &corev1.ConfigMap{}, &corev1.Namespace{},
		&shardgatev1alpha1.GatewayParameters{}, &gatewayv1.BackendTLSPolicy{},
	} {
		out = append(out, Watch{o, sh})
	}
	// EndpointSlices go to the publisher alone, and ask for no
	// translation. They are watched here all the same so that the first
	// translation waits for their informer to sync: a Gateway is never
	// first published without its endpoints.
	out = append(out, Watch{&discoveryv1.EndpointSlice{}, endpointHandler{publisher: r.Publisher}})
	// LeaseHosts decide which names shards serve (Ownership), which
	// Reconcile computes from the cache; so do ProviderHosts in Akash mode.
	out = append(out, Watch{&shardgatev1alpha1.LeaseHost{}, r.events})
	if r.AkashNamespace != "" {
		out = append(out, Watch{&akashv1.ProviderHost{}, r.events})
	}
	return out
}

// TriggerSource is the source of the translations Trigger asks for.
func (r *GatewayAPIReconciler) TriggerSource() source.Source {
	r.prepare()
	return source.Channel(r.trigger, r.events)
}

// SetupWithManager watches every kind the translation reads.
func (r *GatewayAPIReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("gatewayapi").
		WatchesRawSource(r.TriggerSource()).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1, NeedLeaderElection: new(false)})
	for _, w := range r.Watches() {
		b = b.Watches(w.Object, w.Handler)
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
	// Events that arrived during the last translation put the key back at
	// once; the limiter decides whether it is time yet.
	if wait := r.limit.Take(); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	start := time.Now()
	defer func() {
		r.limit.Done(time.Since(start))
		r.Status.BurstHold(r.limit.Hold())
	}()
	in, err := r.snapshot(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	before := r.translator.Stats
	out := r.translator.Translate(gatewayapi.FactsOf(in))
	translateSeconds.Observe(time.Since(start).Seconds())
	after := r.translator.Stats
	gatewayTranslationsFull.Add(float64(after.Full - before.Full))
	gatewayTranslationsPatched.Add(float64(after.Patched - before.Patched))
	gatewayTranslationsReused.Add(float64(after.Reused - before.Reused))
	if r.Publisher != nil {
		r.Publisher.Publish(out.Gateways)
	}
	r.Status.Submit(in, out)
	if r.Certificates != nil {
		r.Certificates.Submit(in.Ownership, r.shards)
	}
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
	placement := r.Tenancy.Placement(in.Namespaces)
	shards, problems := sharding.Discover(r.ControllerName, in.GatewayClasses, in.Gateways, in.GatewayParameters, placement)
	r.shards = shards
	in.ShardRefusals = shardRefusals(problems)
	in.TenantNamespaces = tenantNamespaces(placement.Policy, placement.Namespaces, in.Gateways, in.GatewayClasses)
	if r.TenantLimits != nil {
		in.TenantLimits = r.TenantLimits()
	}
	var providers []*shardgatev1alpha1.LeaseHost
	if r.AkashNamespace != "" {
		phs, err := storeList[akashv1.ProviderHost](ctx, r.Cache)
		if err != nil {
			return nil, err
		}
		providers = r.akash.Of(r.AkashNamespace, phs, in.HTTPRoutes)
	}
	var blocked *hostnames.BlockList
	if r.Blocked != nil {
		blocked = r.Blocked()
	}
	if r.facts == nil {
		r.facts = leasehosts.NewFacts()
	}
	in.Ownership = r.facts.Next(leasehosts.FactsInput{
		LeaseHosts: leaseHosts, ProviderHosts: providers, Namespaces: in.Namespaces,
		Shards: shards, Problems: problems, Policy: r.Tenancy.Policy(), Blocked: blocked,
		Routes: in.HTTPRoutes, Now: time.Now(),
	})
	return in, nil
}

// tenantNamespaces are the namespaces that hold a Gateway, or a
// GatewayClass's parameters, and belong to a tenant, with why (nil when
// none): a Gateway there, or a class configured from there, gets no
// provider resources. Only those namespaces are looked at, so the cost is
// that of the Gateways and classes, not of every lease namespace.
func tenantNamespaces(p tenancy.Policy, namespaces map[string]*corev1.Namespace, gateways []*gatewayv1.Gateway, classes []*gatewayv1.GatewayClass) map[string]string {
	var out map[string]string
	check := func(name string) {
		if _, done := out[name]; done {
			return
		}
		if why, tenant := p.TenantNamespace(name, namespaces[name]); tenant {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = why
		}
	}
	for _, gw := range gateways {
		check(gw.Namespace)
	}
	for _, c := range classes {
		if ref := c.Spec.ParametersRef; ref != nil && ref.Namespace != nil && *ref.Namespace != "" {
			check(string(*ref.Namespace))
		}
	}
	return out
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
}](ctx context.Context, c Informers) ([]*T, error) {
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
