package controllers

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/addresses"
	shardgateevents "github.com/shardgate/shardgate/internal/events"
	"github.com/shardgate/shardgate/internal/tenancy"
)

// Field indexes of the LeasedIP controller. The names carry a prefix so they
// cannot collide with another controller's index on the same type.
const (
	// On LeasedIPs.
	leasedIPTargetIndex     = "leasedip.spec.service"
	leasedIPServiceIndex    = "leasedip.serviceName"
	leasedIPSharingKeyIndex = "leasedip.sharingKey"
	leasedIPPoolIndex       = "leasedip.spec.pool"
	// On Services: the LeasedIP controlling it, and its sharing key (only
	// for Services a LeasedIP controls).
	serviceLeasedIPIndex   = "leasedip.controller"
	serviceSharingKeyIndex = "leasedip.service.sharingKey"
	// On IPAddressPools: the name, for lookups by name in any namespace.
	poolNameIndex = "leasedip.pool.name"
	// On Events, in the controller's own Event cache.
	eventObjectUIDIndex = "leasedip.involvedObject.uid"
)

var poolAddresses = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "shardgate_pool_addresses",
	Help: "Addresses of each MetalLB IPAddressPool by state (assigned, available), from the pool's status (IPv4 and IPv6 added up).",
}, []string{"pool", "state"})

func init() {
	ctrlmetrics.Registry.MustRegister(poolAddresses)
}

var ipAddressPoolGK = schema.GroupKind{Group: metallbv1beta1.GroupVersion.Group, Kind: "IPAddressPool"}

// LeasedIPReconciler keeps one LoadBalancer Service per LeasedIP and reports
// MetalLB's answer in the LeasedIP's status. The rules live in
// internal/addresses; this type reads, applies and writes status.
//
// It reads MetalLB's Events about Services from a cache of its own that
// holds only Events whose involvedObject.kind is Service, so the manager's
// cache does not hold every Event of the cluster.
//
// A LeasedIP holds an address only in a namespace marked as its lease
// owner's (Policy); otherwise it is refused and its Service deleted, and an
// address is shared (Pin) only with siblings in namespaces of the same
// owner.
type LeasedIPReconciler struct {
	Client client.Client
	Log    logr.Logger
	// Policy returns the namespace-owner policy: the config's, shared with
	// the LeaseHost controller (nil: tenancy.DefaultPolicy()).
	Policy func() tenancy.Policy
	// Recorder emits an Event on every change of the Allocated decision
	// (internal/events); nil emits none.
	Recorder events.EventRecorder
	// emitted keeps a reconcile from a stale cached copy from repeating
	// an Event.
	emitted shardgateevents.Memory

	events  client.Reader
	metallb bool
	// live reads the apiserver directly for object writes (see write).
	live client.Reader
}

// SetupWithManager registers the LeasedIP controller, its indexes and
// watches, and the pool usage metrics controller.
func (r *LeasedIPReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.live = mgr.GetAPIReader()
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	lipIndexes := map[string]func(*shardgatev1alpha1.LeasedIP) string{
		leasedIPTargetIndex:     func(l *shardgatev1alpha1.LeasedIP) string { return l.Spec.Service },
		leasedIPServiceIndex:    addresses.LeasedIPServiceName,
		leasedIPSharingKeyIndex: addresses.LeasedIPSharingKey,
		leasedIPPoolIndex:       func(l *shardgatev1alpha1.LeasedIP) string { return l.Spec.Pool },
	}
	for name, f := range lipIndexes {
		if err := idx.IndexField(ctx, &shardgatev1alpha1.LeasedIP{}, name, func(o client.Object) []string {
			if v := f(o.(*shardgatev1alpha1.LeasedIP)); v != "" {
				return []string{v}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("index LeasedIPs by %s: %w", name, err)
		}
	}
	if err := idx.IndexField(ctx, &corev1.Service{}, serviceLeasedIPIndex, func(o client.Object) []string {
		if n := addresses.LeasedIPController(o); n != "" {
			return []string{n}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index Services by LeasedIP: %w", err)
	}
	if err := idx.IndexField(ctx, &corev1.Service{}, serviceSharingKeyIndex, func(o client.Object) []string {
		if k := o.GetAnnotations()[addresses.AnnotationAllowSharedIP]; k != "" && addresses.LeasedIPController(o) != "" {
			return []string{k}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index Services by sharing key: %w", err)
	}

	// MetalLB's Events about Services, in a cache of their own.
	events, err := cache.New(mgr.GetConfig(), eventCacheOptions(mgr.GetScheme(), mgr.GetRESTMapper()))
	if err != nil {
		return fmt.Errorf("create the Event cache: %w", err)
	}
	if err := events.IndexField(ctx, &corev1.Event{}, eventObjectUIDIndex, func(o client.Object) []string {
		return []string{string(o.(*corev1.Event).InvolvedObject.UID)}
	}); err != nil {
		return fmt.Errorf("index Events by object: %w", err)
	}
	if err := mgr.Add(eventCache{events}); err != nil {
		return fmt.Errorf("add the Event cache: %w", err)
	}
	r.events = events

	// Without MetalLB's CRDs the controller still runs; pools are then
	// "not found" and nothing is watched for them.
	if _, err := mgr.GetRESTMapper().RESTMapping(ipAddressPoolGK, metallbv1beta1.GroupVersion.Version); err == nil {
		r.metallb = true
	} else if meta.IsNoMatchError(err) {
		r.Log.Info("MetalLB's IPAddressPool CRD is not installed; LeasedIP pools cannot be checked")
	} else {
		return fmt.Errorf("look up IPAddressPool: %w", err)
	}

	b := ctrl.NewControllerManagedBy(mgr).
		Named("leasedip").
		// Status writes (ours) do not change the generation.
		For(&shardgatev1alpha1.LeasedIP{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(r.serviceLeasedIPs)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceLeasedIPs),
			builder.WithPredicates(predicate.Or(predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		WatchesRawSource(source.Kind(cache.Cache(events), &corev1.Event{},
			handler.TypedEnqueueRequestsFromMapFunc(r.eventLeasedIPs),
			predicate.NewTypedPredicateFuncs(addresses.IsAllocationEvent)))
	if r.metallb {
		if err := idx.IndexField(ctx, &metallbv1beta1.IPAddressPool{}, poolNameIndex, func(o client.Object) []string {
			return []string{o.GetName()}
		}); err != nil {
			return fmt.Errorf("index IPAddressPools by name: %w", err)
		}
		b = b.Watches(&metallbv1beta1.IPAddressPool{}, handler.EnqueueRequestsFromMapFunc(r.poolLeasedIPs))
	}
	if err := b.Complete(r); err != nil {
		return err
	}
	if !r.metallb {
		return nil
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("leasedip-pool-usage").
		For(&metallbv1beta1.IPAddressPool{}).
		Complete(&poolUsageReconciler{client: mgr.GetClient()})
}

// eventCache makes the manager start the Event cache with its other caches,
// before the controllers.
type eventCache struct{ cache.Cache }

func (c eventCache) GetCache() cache.Cache { return c.Cache }

// Reconcile makes req's Service match its spec and writes its status.
func (r *LeasedIPReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var lip shardgatev1alpha1.LeasedIP
	if err := r.Client.Get(ctx, req.NamespacedName, &lip); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		// Gone: delete the Services it controlled (garbage collection would
		// too, later). Services of any other object are never touched.
		return reconcile.Result{}, r.deleteServices(ctx, req.Namespace, req.Name, "", "")
	}
	if lip.DeletionTimestamp != nil {
		r.emitted.Forget(string(lip.UID))
		return reconcile.Result{}, r.deleteServices(ctx, lip.Namespace, lip.Name, lip.UID, "")
	}
	ns, err := r.namespace(ctx, lip.Namespace)
	if err != nil {
		return reconcile.Result{}, err
	}
	if refused := r.refusal(&lip, ns); refused != nil {
		// Not its owner's namespace: no Service, so no address (one it
		// held, for example before the namespace changed owner, goes).
		if err := r.deleteServices(ctx, lip.Namespace, lip.Name, lip.UID, ""); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, r.writeStatus(ctx, &lip, addresses.StatusFor(&lip, addresses.Observed{Refused: refused}))
	}
	name := addresses.LeasedIPServiceName(&lip)
	// A changed spec (port, protocol, service) leaves a Service under an
	// old name behind.
	if err := r.deleteServices(ctx, lip.Namespace, lip.Name, lip.UID, name); err != nil {
		return reconcile.Result{}, err
	}

	var obs addresses.Observed
	target, err := r.getService(ctx, lip.Namespace, lip.Spec.Service)
	if err != nil {
		return reconcile.Result{}, err
	}
	obs.Target = target
	existing, err := r.getService(ctx, lip.Namespace, name)
	if err != nil {
		return reconcile.Result{}, err
	}
	obs.Service = existing
	if lip.Spec.Pool != "" {
		obs.Pool, err = r.pool(ctx, lip.Spec.Pool)
		if err != nil {
			return reconcile.Result{}, err
		}
		obs.PoolMissing = obs.Pool == nil
	}

	own := existing != nil && addresses.ControlledBy(existing, string(lip.UID))
	// Create only when the Service can be right: the selector is known and
	// the pool exists. An existing one is kept up to date.
	if (existing == nil && target != nil && !obs.PoolMissing) || (own && target != nil) {
		var siblings []corev1.Service
		if addresses.IngressIP(existing) == "" {
			var list corev1.ServiceList
			if err := r.Client.List(ctx, &list, client.MatchingFields{serviceSharingKeyIndex: addresses.LeasedIPSharingKey(&lip)}); err != nil {
				return reconcile.Result{}, fmt.Errorf("list Services sharing %s: %w", addresses.LeasedIPSharingKey(&lip), err)
			}
			if siblings, err = r.sameOwner(ctx, ns, list.Items); err != nil {
				return reconcile.Result{}, err
			}
		}
		desired := addresses.DesiredService(&lip, target, addresses.Pin(&lip, obs.Pool, existing, siblings))
		switch {
		case existing == nil:
			// Created, never applied (see write): the next pass judges a
			// Service someone else made under this name first.
			if err := write(ctx, r.Client, r.live, desired, nil); apierrors.IsAlreadyExists(err) {
				return reconcile.Result{Requeue: true}, nil
			} else if err != nil {
				return reconcile.Result{}, err
			}
			obs.Service = desired
		case !addresses.ServiceUpToDate(existing, desired):
			if err := write(ctx, r.Client, r.live, desired, existing); err != nil {
				return reconcile.Result{}, err
			}
		}
	}

	if own && existing.UID != "" && addresses.IngressIP(existing) == "" {
		var evs corev1.EventList
		if err := r.events.List(ctx, &evs, client.InNamespace(lip.Namespace), client.MatchingFields{eventObjectUIDIndex: string(existing.UID)}); err != nil {
			return reconcile.Result{}, fmt.Errorf("list Events of Service %s/%s: %w", lip.Namespace, name, err)
		}
		obs.Event = addresses.LatestAllocationEvent(evs.Items, string(existing.UID))
	}

	return reconcile.Result{}, r.writeStatus(ctx, &lip, addresses.StatusFor(&lip, obs))
}

// eventCacheOptions: the Events about Services, without their managedFields
// (nothing reads them; every Event has one).
func eventCacheOptions(scheme *runtime.Scheme, mapper meta.RESTMapper) cache.Options {
	return cache.Options{
		Scheme:           scheme,
		Mapper:           mapper,
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Event{}: {Field: fields.OneTermEqualSelector("involvedObject.kind", "Service")},
		},
	}
}

// writeStatus writes status when it differs from lip's, at once (a merge
// patch). Through the coalescing status writer, a LeasedIP's status flapped
// (PoolExhausted, Pending, PoolExhausted) while MetalLB reported an
// exhausted pool, so LeasedIP status stays on this direct path.
func (r *LeasedIPReconciler) writeStatus(ctx context.Context, lip *shardgatev1alpha1.LeasedIP, next shardgatev1alpha1.LeasedIPStatus) error {
	if equality.Semantic.DeepEqual(next, lip.Status) {
		return nil
	}
	if r.Recorder != nil {
		for _, ev := range shardgateevents.LeasedIP(&lip.Status, &next) {
			if r.emitted.First(string(lip.UID), ev) {
				r.Recorder.Eventf(lip, nil, ev.Type, ev.Reason, ev.Action, "%s", ev.Message)
			}
		}
	}
	patch := client.MergeFrom(lip.DeepCopy())
	lip.Status = next
	if err := r.Client.Status().Patch(ctx, lip, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("write status of LeasedIP %s/%s: %w", lip.Namespace, lip.Name, err)
	}
	return nil
}

func (r *LeasedIPReconciler) getService(ctx context.Context, ns, name string) (*corev1.Service, error) {
	var svc corev1.Service
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &svc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get Service %s/%s: %w", ns, name, err)
	}
	return &svc, nil
}

// pool finds the IPAddressPool named name in any namespace (MetalLB's
// annotation names a pool without a namespace), or nil.
func (r *LeasedIPReconciler) pool(ctx context.Context, name string) (*metallbv1beta1.IPAddressPool, error) {
	if !r.metallb {
		return nil, nil
	}
	var list metallbv1beta1.IPAddressPoolList
	if err := r.Client.List(ctx, &list, client.MatchingFields{poolNameIndex: name}); err != nil {
		return nil, fmt.Errorf("list IPAddressPools named %s: %w", name, err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	return &list.Items[0], nil
}

// deleteServices deletes the Services in ns that the LeasedIP named
// leasedIP controls, except the one named keep. With uid set only Services
// controlled by that incarnation go; with uid empty (the LeasedIP is gone)
// any incarnation's. Each delete is preconditioned on the Service's UID, and
// Services are found by their controller reference, never by labels.
func (r *LeasedIPReconciler) deleteServices(ctx context.Context, ns, leasedIP string, uid types.UID, keep string) error {
	var list corev1.ServiceList
	if err := r.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{serviceLeasedIPIndex: leasedIP}); err != nil {
		return fmt.Errorf("list Services of LeasedIP %s/%s: %w", ns, leasedIP, err)
	}
	for i := range list.Items {
		svc := &list.Items[i]
		if svc.Name == keep || svc.DeletionTimestamp != nil || addresses.LeasedIPController(svc) != leasedIP {
			continue
		}
		if uid != "" && !addresses.ControlledBy(svc, string(uid)) {
			continue
		}
		if err := r.Client.Delete(ctx, svc, client.Preconditions{UID: &svc.UID}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete Service %s/%s: %w", ns, svc.Name, err)
		}
		r.Log.Info("deleted the Service of a LeasedIP", "service", ns+"/"+svc.Name, "leasedip", leasedIP)
	}
	return nil
}

// serviceLeasedIPs: a Service matters to the LeasedIP controlling it, to
// the LeasedIPs whose target it is or whose Service name it has, and, for a
// LeasedIP's Service, to the LeasedIPs with its sharing key (they may pin
// its address).
func (r *LeasedIPReconciler) serviceLeasedIPs(ctx context.Context, o client.Object) []reconcile.Request {
	set := map[types.NamespacedName]bool{}
	if n := addresses.LeasedIPController(o); n != "" {
		set[types.NamespacedName{Namespace: o.GetNamespace(), Name: n}] = true
		if key := o.GetAnnotations()[addresses.AnnotationAllowSharedIP]; key != "" {
			r.addLeasedIPs(ctx, set, client.MatchingFields{leasedIPSharingKeyIndex: key})
		}
	}
	r.addLeasedIPs(ctx, set, client.InNamespace(o.GetNamespace()), client.MatchingFields{leasedIPTargetIndex: o.GetName()})
	r.addLeasedIPs(ctx, set, client.InNamespace(o.GetNamespace()), client.MatchingFields{leasedIPServiceIndex: o.GetName()})
	return setRequests(set)
}

func (r *LeasedIPReconciler) eventLeasedIPs(ctx context.Context, ev *corev1.Event) []reconcile.Request {
	set := map[types.NamespacedName]bool{}
	r.addLeasedIPs(ctx, set, client.InNamespace(ev.InvolvedObject.Namespace), client.MatchingFields{leasedIPServiceIndex: ev.InvolvedObject.Name})
	return setRequests(set)
}

func (r *LeasedIPReconciler) poolLeasedIPs(ctx context.Context, o client.Object) []reconcile.Request {
	set := map[types.NamespacedName]bool{}
	r.addLeasedIPs(ctx, set, client.MatchingFields{leasedIPPoolIndex: o.GetName()})
	return setRequests(set)
}

func (r *LeasedIPReconciler) addLeasedIPs(ctx context.Context, set map[types.NamespacedName]bool, opts ...client.ListOption) {
	var list shardgatev1alpha1.LeasedIPList
	if err := r.Client.List(ctx, &list, opts...); err != nil {
		r.Log.Error(err, "list LeasedIPs")
		return
	}
	for i := range list.Items {
		set[types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}] = true
	}
}

func setRequests(set map[types.NamespacedName]bool) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(set))
	for nn := range set {
		out = append(out, reconcile.Request{NamespacedName: nn})
	}
	return out
}

// poolUsageReconciler exports shardgate_pool_addresses from each
// IPAddressPool's status, refreshed on every pool event.
type poolUsageReconciler struct {
	client client.Client
}

func (r *poolUsageReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var p metallbv1beta1.IPAddressPool
	if err := r.client.Get(ctx, req.NamespacedName, &p); err != nil {
		if apierrors.IsNotFound(err) {
			poolAddresses.DeletePartialMatch(prometheus.Labels{"pool": req.Name})
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	u := addresses.UsageOf(&p)
	poolAddresses.WithLabelValues(p.Name, "assigned").Set(float64(u.Assigned))
	poolAddresses.WithLabelValues(p.Name, "available").Set(float64(u.Available))
	return reconcile.Result{}, nil
}
