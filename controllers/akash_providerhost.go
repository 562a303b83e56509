package controllers

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/akash"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
	shardgateevents "github.com/shardgate/shardgate/internal/events"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/leasehosts"
	"github.com/shardgate/shardgate/sharding"
)

// Indexes of ProviderHosts.
const (
	providerHostLeaseNSIndex  = "akash.leaseNamespace"
	providerHostHostnameIndex = "akash.hostname"
)

// Event reasons of ProviderHosts besides the engine's (Reserved, Blocked,
// HostnameInUse, Withheld, ...).
const (
	ReasonInvalidProviderHost = "InvalidProviderHost"
	ReasonServiceNotFound     = "ServiceNotFound"
)

// ProviderHostReconciler admits the hostnames of Akash ProviderHosts through
// the LeaseHost controller's hostname engine (the same claims, block list,
// shards and order) and writes, for each name held, the HTTPRoute Akash's
// hostname operator would write, in the lease namespace. A ProviderHost has
// no status: decisions are Events on it, and the record of who holds a name
// is the generated route itself, read back on a cold start.
type ProviderHostReconciler struct {
	Client     client.Client
	LeaseHosts *LeaseHostReconciler
	// Namespace is where the provider writes ProviderHosts and Manifests.
	Namespace string
	Recorder  events.EventRecorder
	Log       logr.Logger

	// live reads the apiserver directly for object writes (see write).
	live client.Reader

	// claims: the ProviderHosts' claims in the LeaseHost controller's
	// engine, by name and UID, with the route each may have written, to
	// delete on release (leasehosts.Claims).
	claims *leasehosts.Claims

	requeue
	emitted shardgateevents.Memory
	// retry: whether the HTTPRoute CRD keeps rules[].retry (akash_retry.go).
	retry retryState
}

// SetupWithManager registers the controller and hooks it into the LeaseHost
// controller's engine. Call it before the manager starts.
func (r *ProviderHostReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.live = mgr.GetAPIReader()
	r.claims = leasehosts.NewClaims(r.LeaseHosts.Engine, akash.HostKind)
	r.LeaseHosts.ExtraClaimants = r.restoreClaimants
	r.LeaseHosts.OtherChanges = r.enqueueChanged
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(context.Background(), &akashv1.ProviderHost{}, providerHostLeaseNSIndex, func(o client.Object) []string {
		return []string{akash.HostLease(o.(*akashv1.ProviderHost)).Namespace()}
	}); err != nil {
		return fmt.Errorf("index ProviderHosts by lease namespace: %w", err)
	}
	if err := idx.IndexField(context.Background(), &akashv1.ProviderHost{}, providerHostHostnameIndex, func(o client.Object) []string {
		return []string{normalisedOrRaw(o.(*akashv1.ProviderHost).Spec.Hostname)}
	}); err != nil {
		return fmt.Errorf("index ProviderHosts by hostname: %w", err)
	}
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.Namespace })
	all := handler.EnqueueRequestsFromMapFunc(r.all)
	akashRoutes := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[akash.LabelManaged] == "true" })
	return ctrl.NewControllerManagedBy(mgr).
		Named("akash-providerhost").
		For(&akashv1.ProviderHost{}, builder.WithPredicates(inNamespace)).
		Watches(&gatewayv1.HTTPRoute{}, handler.EnqueueRequestsFromMapFunc(r.byRoute), builder.WithPredicates(akashRoutes)).
		Watches(&akashv1.Manifest{}, handler.EnqueueRequestsFromMapFunc(r.byManifest), builder.WithPredicates(inNamespace)).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(r.byLeaseNamespaceOf)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.byNamespace), builder.WithPredicates(predicate.Or(predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&gatewayv1.Gateway{}, all, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&gatewayv1.GatewayClass{}, all, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&shardgatev1alpha1.GatewayParameters{}, all, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Func(r.startQueue)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(r)
}

// Reconcile admits req's hostname and writes or removes its route.
func (r *ProviderHostReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if err := r.LeaseHosts.EnsureRebuilt(ctx); err != nil {
		return reconcile.Result{}, err
	}
	var ph akashv1.ProviderHost
	if err := r.Client.Get(ctx, req.NamespacedName, &ph); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, r.release(ctx, req.NamespacedName, "")
	}
	if ph.DeletionTimestamp != nil {
		return reconcile.Result{}, r.release(ctx, req.NamespacedName, "")
	}
	// A ProviderHost deleted and re-created under one name: the old
	// object's claims go first.
	if err := r.release(ctx, req.NamespacedName, ph.UID); err != nil {
		return reconcile.Result{}, err
	}
	if err := akash.ValidateHost(&ph); err != nil {
		r.event(&ph, corev1.EventTypeWarning, ReasonInvalidProviderHost, shardgateevents.ActionReserve, err.Error())
		return reconcile.Result{}, r.release(ctx, req.NamespacedName, "")
	}
	shards, err := r.LeaseHosts.Shards(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	plan, err := r.plan(ctx, &ph, shards)
	if err != nil {
		return reconcile.Result{}, err
	}
	previous, hadRoute := r.claims.Route(ph.UID)
	decisions, changes := r.claims.Claim(req.NamespacedName, akash.AsLeaseHost(&ph, false), hostRoute(&ph), plan)
	// The hostname was edited: the route of the old name goes.
	if hadRoute && previous != akash.HostRoute(&ph) {
		if err := r.deleteRoute(ctx, previous); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := r.write(ctx, &ph, plan, decisions); err != nil {
		return reconcile.Result{}, err
	}
	r.propagate(changes, req.NamespacedName)
	r.LeaseHosts.observeMetrics()
	return reconcile.Result{}, nil
}

// plan is ph's plan, as a LeaseHost in the lease namespace. A ProviderHost
// is written by the provider, not a tenant (akash.HostKind): an unmarked
// lease namespace is allowed, but a lease namespace marked with another
// owner (Akash's akash.network/lease.id.owner, or shardgate.io/owner)
// refuses it.
func (r *ProviderHostReconciler) plan(ctx context.Context, ph *akashv1.ProviderHost, shards []sharding.Shard) (leasehosts.Plan, error) {
	return planClaim(ctx, r.Client, r.claims.Kind(), akash.AsLeaseHost(ph, false), shards, r.LeaseHosts.ownerPolicy())
}

// hostRoute is the route ph writes, or the zero name (as recorded before)
// when its hostname is not one.
func hostRoute(ph *akashv1.ProviderHost) types.NamespacedName {
	if _, err := hostnames.Normalise(ph.Spec.Hostname); err != nil {
		return types.NamespacedName{}
	}
	return akash.HostRoute(ph)
}

// write makes ph's route match its decisions and emits the decision's
// Event. The route is written only while the Service exists.
func (r *ProviderHostReconciler) write(ctx context.Context, ph *akashv1.ProviderHost, plan leasehosts.Plan, decisions map[string]hostnames.Decision) error {
	l := akash.HostLease(ph)
	host := normalisedOrRaw(ph.Spec.Hostname)
	d := decisions[host]
	if len(plan.Hosts) > 0 {
		d = decisions[plan.Hosts[0]]
	}
	nn := types.NamespacedName{Namespace: l.Namespace(), Name: akash.RouteName(host)}
	var existing gatewayv1.HTTPRoute
	found := true
	if err := r.Client.Get(ctx, nn, &existing); err != nil {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("get route %s: %w", nn, err)
		}
		found = false
	}
	ours := found && akash.IsGeneratedRoute(&existing, ph)
	var desired *gatewayv1.HTTPRoute
	if d.Reserved {
		var svc corev1.Service
		err := r.Client.Get(ctx, types.NamespacedName{Namespace: l.Namespace(), Name: ph.Spec.ServiceName}, &svc)
		switch {
		case apierrors.IsNotFound(err):
			r.event(ph, corev1.EventTypeWarning, ReasonServiceNotFound, shardgateevents.ActionRoute,
				fmt.Sprintf("Service %s does not exist in the lease namespace %s; no route until it does", ph.Spec.ServiceName, l.Namespace()))
		case err != nil:
			return fmt.Errorf("get service %s/%s: %w", l.Namespace(), ph.Spec.ServiceName, err)
		case !servicePort(&svc, int32(ph.Spec.ExternalPort)):
			r.event(ph, corev1.EventTypeWarning, ReasonServiceNotFound, shardgateevents.ActionRoute,
				fmt.Sprintf("Service %s has no port %d; no route until it does", ph.Spec.ServiceName, ph.Spec.ExternalPort))
		default:
			var m akashv1.Manifest
			mp := &m
			if err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: l.Namespace()}, &m); err != nil {
				if !apierrors.IsNotFound(err) {
					return fmt.Errorf("get manifest %s/%s: %w", r.Namespace, l.Namespace(), err)
				}
				mp = nil
			}
			opts, _ := akash.OptionsFor(mp, ph.Spec.ServiceName, ph.Spec.ExternalPort)
			desired = akash.RouteFor(ph, plan, decisions, opts)
		}
	}
	switch {
	case found && !ours && desired != nil:
		// Not a route of this lease (its labels say so): never
		// overwritten, whoever wrote it.
		r.event(ph, corev1.EventTypeWarning, shardgatev1alpha1.ReasonRouteConflict, shardgateevents.ActionRoute,
			fmt.Sprintf("HTTPRoute %s in the lease namespace is not this lease's; not overwritten", nn.Name))
		desired = nil
	case desired == nil && ours:
		if err := r.Client.Delete(ctx, &existing, client.Preconditions{UID: &existing.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete route %s: %w", nn, err)
		}
	case desired != nil && !found:
		if err := r.writeRoute(ctx, ph, desired, nil); err != nil {
			return err
		}
	case desired != nil:
		if err := r.writeRoute(ctx, ph, desired, &existing); err != nil {
			return err
		}
	}
	if d.Reason != "" {
		typ := corev1.EventTypeWarning
		if d.Reserved {
			typ = corev1.EventTypeNormal
		}
		r.event(ph, typ, string(d.Reason), shardgateevents.ActionReserve, d.Message)
	}
	return nil
}

// event emits an Event on ph once per change (a stale cached copy does not
// repeat it), and counts refusals.
func (r *ProviderHostReconciler) event(ph *akashv1.ProviderHost, typ, reason, action, msg string) {
	ev := shardgateevents.Event{Type: typ, Reason: reason, Action: action, Message: msg}
	if !r.emitted.First(string(ph.UID), ev) {
		return
	}
	if action == shardgateevents.ActionReserve && reason != shardgatev1alpha1.ReasonReserved {
		hostnameRefusals.WithLabelValues(reason).Inc()
	}
	if r.Recorder != nil {
		r.Recorder.Eventf(ph, nil, typ, reason, action, "%s", msg)
	}
}

// release forgets the claims of the objects named nn other than keep ("":
// all of them) and deletes the routes they wrote.
func (r *ProviderHostReconciler) release(ctx context.Context, nn types.NamespacedName, keep types.UID) error {
	gone, routes := r.claims.Drop(nn, keep)
	changes := r.claims.Release(gone)
	for _, rt := range routes {
		if err := r.deleteRoute(ctx, rt); err != nil {
			return err
		}
	}
	r.propagate(changes, nn)
	r.LeaseHosts.observeMetrics()
	return nil
}

// deleteRoute deletes the generated route rt, unless a live ProviderHost
// holds its name.
func (r *ProviderHostReconciler) deleteRoute(ctx context.Context, rt types.NamespacedName) error {
	var route gatewayv1.HTTPRoute
	if err := r.Client.Get(ctx, rt, &route); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("get route %s: %w", rt, err)
	}
	// A live ProviderHost of the route's lease namespace may hold the
	// route's name (another object of the same lease wrote it too).
	if route.Labels[akash.LabelManaged] != "true" || r.claims.HoldsRoute(rt) {
		return nil
	}
	if err := r.Client.Delete(ctx, &route, client.Preconditions{UID: &route.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete route %s: %w", rt, err)
	}
	return nil
}

// propagate reconciles every claimant whose decision changed: ProviderHosts
// here, LeaseHosts in their controller.
func (r *ProviderHostReconciler) propagate(changes []hostnames.Change, self types.NamespacedName) {
	if len(changes) == 0 {
		return
	}
	r.enqueueChangedExcept(changes, self)
	r.LeaseHosts.EnqueueChanged(changes)
}

// enqueueChanged reconciles the ProviderHosts among changes.
func (r *ProviderHostReconciler) enqueueChanged(changes []hostnames.Change) {
	r.enqueueChangedExcept(changes, types.NamespacedName{})
}

func (r *ProviderHostReconciler) enqueueChangedExcept(changes []hostnames.Change, self types.NamespacedName) {
	for _, obj := range r.claims.Changed(changes, self) {
		r.enqueue(obj.NamespacedName)
	}
}

// restoreClaimants are the claims of every valid ProviderHost for the
// engine's cold start. A ProviderHost whose generated route exists (with its
// lease's labels and its hostname) held the name: that is the hint, as a
// LeaseHost's status is.
func (r *ProviderHostReconciler) restoreClaimants(ctx context.Context, shards []sharding.Shard) ([]hostnames.Claimant, error) {
	var list akashv1.ProviderHostList
	if err := r.Client.List(ctx, &list, client.InNamespace(r.Namespace)); err != nil {
		return nil, fmt.Errorf("rebuild ProviderHost claims: %w", err)
	}
	var out []hostnames.Claimant
	wanted := map[types.NamespacedName]bool{}
	for i := range list.Items {
		ph := &list.Items[i]
		if ph.DeletionTimestamp != nil || akash.ValidateHost(ph) != nil {
			continue
		}
		wanted[akash.HostRoute(ph)] = true
		plan, err := r.plan(ctx, ph, shards)
		if err != nil {
			return nil, err
		}
		// The hint: its generated route exists (read only for a claim
		// that is not refused).
		holding := false
		if plan.Refusal == nil {
			var route gatewayv1.HTTPRoute
			nn := akash.HostRoute(ph)
			if err := r.Client.Get(ctx, nn, &route); err == nil {
				holding = akash.IsGeneratedRoute(&route, ph)
			} else if !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("get route %s: %w", nn, err)
			}
		}
		out = append(out, r.claims.Restored(types.NamespacedName{Namespace: ph.Namespace, Name: ph.Name}, akash.AsLeaseHost(ph, holding), hostRoute(ph), plan)...)
	}
	// With no ProviderHost at all, akash.namespace may simply be wrong:
	// sweep nothing rather than every route of the provider.
	if len(list.Items) > 0 {
		if err := r.sweepRoutes(ctx, wanted); err != nil {
			return nil, err
		}
	}
	r.Log.Info("rebuilt ProviderHost claims", "providerHosts", len(list.Items))
	return out, nil
}

// sweepRoutes deletes the generated routes (akash.network: "true", with
// lease labels) that no live ProviderHost asks for: leases that ended while
// no controller ran, whose delete events nobody saw. Without it the route
// would stay listed by the provider's recovery code and /managed-hostnames.
func (r *ProviderHostReconciler) sweepRoutes(ctx context.Context, wanted map[types.NamespacedName]bool) error {
	var routes gatewayv1.HTTPRouteList
	if err := r.Client.List(ctx, &routes, client.MatchingLabels{akash.LabelManaged: "true"}); err != nil {
		return fmt.Errorf("list generated routes: %w", err)
	}
	objs := make([]client.Object, len(routes.Items))
	for i := range routes.Items {
		objs[i] = &routes.Items[i]
	}
	return sweepAkash(ctx, r.Client, r.Log, objs, wanted, "the route of a ProviderHost")
}

// sweepAkash deletes the objects carrying Akash's lease labels that wanted
// does not name (what: how the log and errors name them). A UID
// precondition keeps it from deleting a newer object of the same name.
func sweepAkash(ctx context.Context, c client.Client, log logr.Logger, objs []client.Object, wanted map[types.NamespacedName]bool, what string) error {
	for _, o := range objs {
		nn := client.ObjectKeyFromObject(o)
		if _, ok := akash.LeaseFromLabels(o.GetLabels()); !ok || wanted[nn] {
			continue
		}
		log.Info("deleting "+what+" that is gone", "object", nn)
		uid := o.GetUID()
		if err := c.Delete(ctx, o, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("sweep: delete %s %s: %w", what, nn, err)
		}
	}
	return nil
}

func (r *ProviderHostReconciler) list(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	var list akashv1.ProviderHostList
	if err := r.Client.List(ctx, &list, append(opts, client.InNamespace(r.Namespace))...); err != nil {
		r.Log.Error(err, "list ProviderHosts")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}})
	}
	return out
}

func (r *ProviderHostReconciler) all(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.list(ctx)
}

func (r *ProviderHostReconciler) byRoute(ctx context.Context, o client.Object) []reconcile.Request {
	return r.list(ctx, client.MatchingFields{providerHostHostnameIndex: o.GetName()})
}

func (r *ProviderHostReconciler) byManifest(ctx context.Context, o client.Object) []reconcile.Request {
	return r.list(ctx, client.MatchingFields{providerHostLeaseNSIndex: o.GetName()})
}

func (r *ProviderHostReconciler) byLeaseNamespaceOf(ctx context.Context, o client.Object) []reconcile.Request {
	return r.list(ctx, client.MatchingFields{providerHostLeaseNSIndex: o.GetNamespace()})
}

// byNamespace: a lease namespace's owner marking decides its ProviderHosts;
// a namespace holding Gateways may change the shards.
func (r *ProviderHostReconciler) byNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	var gws gatewayv1.GatewayList
	if err := r.Client.List(ctx, &gws, client.InNamespace(o.GetName())); err != nil || len(gws.Items) > 0 {
		return r.list(ctx)
	}
	return r.list(ctx, client.MatchingFields{providerHostLeaseNSIndex: o.GetName()})
}

func servicePort(svc *corev1.Service, port int32) bool {
	return slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == port })
}

func normalisedOrRaw(h string) string {
	if n, err := hostnames.Normalise(h); err == nil {
		return n
	}
	return h
}
