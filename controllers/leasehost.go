package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"github.com/shardgate/shardgate/internal/autotls"
	shardgateevents "github.com/shardgate/shardgate/internal/events"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/leasehosts"
	"github.com/shardgate/shardgate/internal/status"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/sharding"
)

const leaseHostServiceIndex = "spec.service.name"

// LeaseHostReconciler admits LeaseHost names through the hostnames engine and
// writes each LeaseHost's HTTPRoute and status.
//
// It runs Workers reconciles at once: a block-list change that revokes
// thousands of names costs a route delete and a status write for each, and
// those are apiserver round trips, bound by latency rather than by CPU.
// The engine is the one authority and serialises ownership itself; the work
// queue never runs two reconciles of one LeaseHost at once. Each reconcile
// writes only its own LeaseHost; the others whose decision it changed are
// queued, and held back (handoff) until its route is written, so that a
// name that moves is served by its new holder before the old holder's
// route drops it.
type LeaseHostReconciler struct {
	Client client.Client
	// APIReader reads the apiserver directly (uncached), for status writes
	// that conflicted (nil: Client).
	APIReader      client.Reader
	Engine         *hostnames.Engine
	ControllerName string
	Recorder       events.EventRecorder
	Log            logr.Logger
	// Tenancy reads namespaces' owner markings and says where shards may
	// live (nil: the safe defaults).
	Tenancy *Tenancy
	// Workers is the number of concurrent reconciles, and of status
	// writers (default DefaultLeaseHostWorkers).
	Workers int

	// status writes every LeaseHost status (internal/status).
	status *status.ObjectWriter[*shardgatev1alpha1.LeaseHost]
	// rebuild makes the cold-start rebuild happen once, before any
	// admission, however many workers start at once.
	rebuild sync.Mutex
	// hmu guards handoff: LeaseHost → the number of running reconciles
	// that changed its decision and have not written their own route
	// yet. A LeaseHost held back is queued again when they are done.
	hmu     sync.Mutex
	handoff map[types.NamespacedName]int

	// blocked is the config's block list and reserved the names every
	// shard keeps for the provider (its canonical hostname and its apex
	// domain, with why); the engine's list is blocked.WithReserved(reserved).
	// bmu makes each swap of the engine's list one step.
	bmu      sync.Mutex
	blocked  *hostnames.BlockList
	reserved map[string]string

	// live reads the apiserver directly for object writes (see write).
	live client.Reader

	mu      sync.Mutex
	rmu     sync.Mutex // one rebuild at a time
	rebuilt bool
	// claims: the LeaseHosts' claims in the engine, by name and UID
	// (leasehosts.Claims; both events of a LeaseHost deleted and created
	// again can fold into one reconcile).
	claims *leasehosts.Claims

	// shardCerts reads the shards' own certificates (shardCertificate).
	shardCertsMu sync.Mutex
	shardCerts   *autotls.ShardCertificates
	// queue is the controller's own work queue, handed over when the
	// controller starts (source.Func). LeaseHosts that no watch event
	// names (block-list changes, failed follow-up writes) go straight into
	// it: it is unbounded and deduplicates, so nothing is dropped however
	// many LeaseHosts one change touches. Until it is handed over they wait
	// in pending.
	requeue
	// emitted keeps a reconcile from a stale cached copy from repeating
	// an Event.
	emitted shardgateevents.Memory

	// Other claimants share the engine (Akash ProviderHosts). ExtraClaimants
	// adds theirs to the one cold-start Restore, so that the holders come
	// back the same whatever the source; OtherChanges receives every engine
	// change, to pick its own claimants' out.
	ExtraClaimants func(ctx context.Context, shards []sharding.Shard) ([]hostnames.Claimant, error)
	OtherChanges   func(changes []hostnames.Change)

	// Certificates, when set, is the certificate controller's state of
	// each name (automatic HTTPS), reported as the CertificateReady of the
	// shard entries; it calls CertificatesChanged when it changes.
	Certificates interface {
		CertificateReady(namespace, host string) (autotls.State, bool)
	}
}

// CertificatesChanged reconciles the LeaseHosts whose certificate state
// changed.
func (r *LeaseHostReconciler) CertificatesChanged(nns []types.NamespacedName) {
	for _, nn := range nns {
		r.enqueue(nn)
	}
}

// DefaultLeaseHostWorkers is LeaseHostReconciler.Workers' default: enough
// concurrent apiserver round trips to revoke thousands of names within
// seconds, few enough to leave the apiserver's priority and fairness room
// for everything else.
const DefaultLeaseHostWorkers = 32

// SetupWithManager registers the controller and its watches.
func (r *LeaseHostReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.claims = leasehosts.NewClaims(r.Engine, leasehosts.LeaseHostKind)
	r.blocked = r.Engine.BlockList()
	r.handoff = map[types.NamespacedName]int{}
	if r.Workers <= 0 {
		r.Workers = DefaultLeaseHostWorkers
	}
	reader := r.APIReader
	if reader == nil {
		reader = mgr.GetAPIReader()
	}
	r.live = reader
	r.status = status.NewObjectWriter("LeaseHost", r.Client, reader,
		func() *shardgatev1alpha1.LeaseHost { return &shardgatev1alpha1.LeaseHost{} },
		status.ObjectWriterOptions{Workers: r.Workers, Log: r.Log})
	if err := mgr.Add(r.status); err != nil {
		return fmt.Errorf("add LeaseHost status writer: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &shardgatev1alpha1.LeaseHost{}, leaseHostServiceIndex,
		func(o client.Object) []string { return []string{o.(*shardgatev1alpha1.LeaseHost).Spec.Service.Name} }); err != nil {
		return fmt.Errorf("index LeaseHosts by service: %w", err)
	}
	all := handler.EnqueueRequestsFromMapFunc(r.allLeaseHosts)
	return ctrl.NewControllerManagedBy(mgr).
		Named("leasehost").
		For(&shardgatev1alpha1.LeaseHost{}).
		Owns(&gatewayv1.HTTPRoute{}).
		// Shards change only with spec (generation) or labels.
		Watches(&gatewayv1.Gateway{}, all, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&gatewayv1.GatewayClass{}, all, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&shardgatev1alpha1.GatewayParameters{}, all, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Labels select shards; annotations and labels carry the
		// namespace's owner, which also decides whether its Gateways may
		// be shards.
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceChanged), builder.WithPredicates(predicate.Or(predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(r.serviceLeaseHosts)).
		WatchesRawSource(source.Func(r.startQueue)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Workers}).
		Complete(r)
}

// SetBlockList swaps the block list (a config reload). Claims that become
// blocked are revoked and names that become free are re-admitted; every
// LeaseHost whose decision changed is reconciled.
func (r *LeaseHostReconciler) SetBlockList(b *hostnames.BlockList) {
	r.bmu.Lock()
	r.blocked = b
	changes := r.Engine.SetBlockList(b.WithReserved(r.reserved))
	r.bmu.Unlock()
	r.Log.Info("block list changed", "entries", b.Len(), "claimsChanged", len(changes))
	r.forward(changes)
	for _, obj := range r.changedLeaseHosts(changes, types.NamespacedName{}) {
		r.enqueue(obj.NamespacedName)
	}
}

// TenancyChanged re-evaluates every LeaseHost after the tenancy settings
// (r.Tenancy) changed on a config reload.
//
// The rule: a LeaseHost acts for its namespace's owner only. When the
// namespace carries an owner marking, the LeaseHost's spec.lease.owner, and
// its shardgate.io/lease-owner label if it has one, must equal it (compared
// verbatim, like owners everywhere; an empty marking matches nobody);
// otherwise the LeaseHost is Reserved=False NamespaceOwnerMismatch. When the
// namespace carries none and the policy requires one, it is Reserved=False
// NamespaceOwnerMissing. Either way it claims no name (any it held is
// released to the next waiter) and gets no route.
func (r *LeaseHostReconciler) TenancyChanged() {
	if r.claims == nil {
		return
	}
	for _, req := range r.allLeaseHosts(context.Background(), nil) {
		r.enqueue(req.NamespacedName)
	}
}

// ownerPolicy is the current policy.
func (r *LeaseHostReconciler) ownerPolicy() tenancy.Policy { return r.Tenancy.Policy() }

// Reconcile admits req's names and writes its route and status, then writes
// every other LeaseHost whose decision changed as a consequence.
func (r *LeaseHostReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if err := r.ensureRebuilt(ctx); err != nil {
		return reconcile.Result{}, err
	}
	var lh shardgatev1alpha1.LeaseHost
	if err := r.Client.Get(ctx, req.NamespacedName, &lh); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, r.released(ctx, req.NamespacedName)
	}
	if lh.DeletionTimestamp != nil {
		return reconcile.Result{}, r.released(ctx, req.NamespacedName)
	}
	replacedChanges, err := r.replaced(ctx, req.NamespacedName, lh.UID)
	if err != nil {
		return reconcile.Result{}, err
	}
	plan, err := r.plan(ctx, &lh)
	if err != nil {
		// The previous object's claims are released already: the
		// LeaseHosts that changed with them must not wait for this retry.
		r.queueChanged(replacedChanges, req.NamespacedName)
		return reconcile.Result{}, err
	}
	decisions, others, held := r.claim(&lh, plan, replacedChanges)
	if held {
		// Another reconcile took a name from this LeaseHost and has not
		// written its own route yet; it queues this one when it has.
		return reconcile.Result{}, nil
	}
	// Deferred, so that the LeaseHosts held back are released however
	// this reconcile ends.
	defer r.handedOver(others)
	if err := r.write(ctx, &lh, plan, decisions); err != nil {
		return reconcile.Result{}, err
	}
	r.observeMetrics()
	return reconcile.Result{}, nil
}

// ensureRebuilt loads every LeaseHost into the engine before the first
// admission, with the names their status says they hold as hints (the only
// place status is read as one: Engine.Restore), so that a restarted
// controller comes back with exactly the same holders.
func (r *LeaseHostReconciler) ensureRebuilt(ctx context.Context) error {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	r.mu.Lock()
	done := r.rebuilt
	r.mu.Unlock()
	if done {
		return nil
	}
	r.rebuild.Lock()
	defer r.rebuild.Unlock()
	r.mu.Lock()
	done = r.rebuilt
	r.mu.Unlock()
	if done {
		return nil
	}
	var list shardgatev1alpha1.LeaseHostList
	if err := r.Client.List(ctx, &list); err != nil {
		return fmt.Errorf("rebuild hostname claims: %w", err)
	}
	// Oldest first: the order does not change the result (the engine is
	// order-independent), but it makes logs read naturally.
	slices.SortFunc(list.Items, func(a, b shardgatev1alpha1.LeaseHost) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(string(a.UID), string(b.UID))
	})
	shards, err := r.shards(ctx) // once: the shards do not change per LeaseHost
	if err != nil {
		return err
	}
	var claimants []hostnames.Claimant
	for i := range list.Items {
		lh := &list.Items[i]
		if lh.DeletionTimestamp != nil {
			continue
		}
		plan, err := r.planOn(ctx, lh, shards)
		if err != nil {
			return err
		}
		// The status hint (Holding) counts here, on a cold start, only.
		nn := types.NamespacedName{Namespace: lh.Namespace, Name: lh.Name}
		claimants = append(claimants, r.claims.Restored(nn, lh, nn, plan)...)
	}
	if r.ExtraClaimants != nil {
		extra, err := r.ExtraClaimants(ctx, shards)
		if err != nil {
			return err
		}
		claimants = append(claimants, extra...)
	}
	r.Engine.Restore(claimants)
	r.mu.Lock()
	r.rebuilt = true
	r.mu.Unlock()
	r.Log.Info("rebuilt hostname claims", "leaseHosts", len(list.Items))
	r.observeMetrics()
	return nil
}

// plan finds the shards selecting lh and the names it claims on them.
func (r *LeaseHostReconciler) plan(ctx context.Context, lh *shardgatev1alpha1.LeaseHost) (leasehosts.Plan, error) {
	shards, err := r.shards(ctx)
	if err != nil {
		return leasehosts.Plan{}, err
	}
	return r.planOn(ctx, lh, shards)
}

// planOn is plan with the shards already discovered.
func (r *LeaseHostReconciler) planOn(ctx context.Context, lh *shardgatev1alpha1.LeaseHost, shards []sharding.Shard) (leasehosts.Plan, error) {
	return planClaim(ctx, r.Client, r.claims.Kind(), lh, shards, r.ownerPolicy())
}

// planClaim is the plan of lh, the claim of an object of kind, on shards:
// its namespace read through c (missing: nil), and the owner policy p as
// kind follows it.
func planClaim(ctx context.Context, c client.Reader, kind leasehosts.Kind, lh *shardgatev1alpha1.LeaseHost, shards []sharding.Shard, p tenancy.Policy) (leasehosts.Plan, error) {
	var ns corev1.Namespace
	nsp := &ns
	if err := c.Get(ctx, types.NamespacedName{Name: lh.Namespace}, &ns); err != nil {
		if !apierrors.IsNotFound(err) {
			return leasehosts.Plan{}, fmt.Errorf("get namespace %s: %w", lh.Namespace, err)
		}
		nsp = nil
	}
	return leasehosts.PlanIn(lh, shards, nsp, kind.Policy(p)), nil
}

func (r *LeaseHostReconciler) shards(ctx context.Context) ([]sharding.Shard, error) {
	var classes gatewayv1.GatewayClassList
	var gws gatewayv1.GatewayList
	var params shardgatev1alpha1.GatewayParametersList
	if err := r.Client.List(ctx, &classes); err != nil {
		return nil, fmt.Errorf("list GatewayClasses: %w", err)
	}
	if err := r.Client.List(ctx, &gws); err != nil {
		return nil, fmt.Errorf("list Gateways: %w", err)
	}
	if err := r.Client.List(ctx, &params); err != nil {
		return nil, fmt.Errorf("list GatewayParameters: %w", err)
	}
	// Only the Gateways' namespaces decide where shards may live: read
	// those, not every namespace (a provider may have one per lease).
	var namespaces []*corev1.Namespace
	seen := map[string]bool{}
	for i := range gws.Items {
		name := gws.Items[i].Namespace
		if seen[name] {
			continue
		}
		seen[name] = true
		ns := &corev1.Namespace{}
		if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, ns); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("get namespace %s: %w", name, err)
		}
		namespaces = append(namespaces, ns)
	}
	shards, _ := sharding.Discover(r.ControllerName, ptrs(classes.Items), ptrs(gws.Items), ptrs(params.Items), r.Tenancy.Placement(namespaces))
	r.reserveShardNames(shards)
	return shards, nil
}

// reserveShardNames keeps every shard's canonical hostname and apex domain
// for the provider: no tenant may claim the name Envoy's router answers to,
// or the shard's domain itself. They are refused Blocked like block-list
// entries, with a message saying why, and a claim on one is revoked when the
// shard appears.
func (r *LeaseHostReconciler) reserveShardNames(shards []sharding.Shard) {
	names := leasehosts.ProviderNames(shards)
	r.bmu.Lock()
	if maps.Equal(names, r.reserved) {
		r.bmu.Unlock()
		return
	}
	r.reserved = names
	changes := r.Engine.SetBlockList(r.blocked.WithReserved(names))
	r.bmu.Unlock()
	r.Log.Info("names reserved for the shards changed", "names", len(names), "claimsChanged", len(changes))
	r.forward(changes)
	for _, obj := range r.changedLeaseHosts(changes, types.NamespacedName{}) {
		r.enqueue(obj.NamespacedName)
	}
}

// claim brings the engine's claimants for lh in line with plan, and returns
// lh's decisions by host and the other LeaseHosts whose decision changed
// (with earlier, those of changes already made). Those are held back until
// the caller has written lh's route and called handedOver. When lh itself is
// held back by another reconcile, claim changes nothing and says so (held).
func (r *LeaseHostReconciler) claim(lh *shardgatev1alpha1.LeaseHost, plan leasehosts.Plan, earlier []hostnames.Change) (decisions map[string]hostnames.Decision, others []types.NamespacedName, held bool) {
	nn := types.NamespacedName{Namespace: lh.Namespace, Name: lh.Name}
	// One step under hmu: no other reconcile can see a decision this one
	// changes before the LeaseHost it changed is marked held back.
	r.hmu.Lock()
	defer r.hmu.Unlock()
	if r.handoff[nn] > 0 {
		for _, obj := range r.changedLeaseHosts(earlier, nn) {
			r.enqueue(obj.NamespacedName)
		}
		return nil, nil, true
	}
	decisions, changes := r.claims.Claim(nn, lh, nn, plan)
	for _, obj := range r.changedLeaseHosts(append(earlier, changes...), nn) {
		r.handoff[obj.NamespacedName]++
		others = append(others, obj.NamespacedName)
	}
	return decisions, others, false
}

// handedOver ends the handoff of others (claim's) and queues them.
func (r *LeaseHostReconciler) handedOver(others []types.NamespacedName) {
	r.hmu.Lock()
	for _, nn := range others {
		if r.handoff[nn]--; r.handoff[nn] <= 0 {
			delete(r.handoff, nn)
		}
	}
	r.hmu.Unlock()
	for _, nn := range others {
		r.enqueue(nn)
	}
}

// released forgets the claims of every object named nn (the LeaseHost was
// deleted, or is being deleted), deletes its route at once (not waiting for
// garbage collection: the name may have a new holder now), and writes the
// LeaseHosts that were promoted.
func (r *LeaseHostReconciler) released(ctx context.Context, nn types.NamespacedName) error {
	uids, _ := r.claims.Drop(nn, "")
	changes, err := r.release(ctx, nn, uids)
	if err != nil {
		return err
	}
	r.status.Forget(nn)
	r.queueChanged(changes, nn)
	r.observeMetrics()
	return nil
}

// replaced releases the claims of objects named nn other than live: a
// LeaseHost deleted and re-created under the same name, with both events
// folded into this reconcile. Their route goes too; live writes its own.
func (r *LeaseHostReconciler) replaced(ctx context.Context, nn types.NamespacedName, live types.UID) ([]hostnames.Change, error) {
	stale, _ := r.claims.Drop(nn, live)
	if len(stale) == 0 {
		return nil, nil
	}
	r.Log.V(1).Info("LeaseHost re-created; releasing the previous object's claims", "leasehost", nn, "previous", stale)
	return r.release(ctx, nn, stale)
}

// release releases every claim of the objects uids, by the engine's record
// of what they claim, and deletes the route named nn if one of them controls
// it.
func (r *LeaseHostReconciler) release(ctx context.Context, nn types.NamespacedName, uids []types.UID) ([]hostnames.Change, error) {
	if len(uids) == 0 {
		return nil, nil
	}
	changes := r.claims.Release(uids)
	var route gatewayv1.HTTPRoute
	err := r.Client.Get(ctx, nn, &route)
	if err == nil && slices.ContainsFunc(uids, func(u types.UID) bool { return ownedBy(&route, u) }) {
		if err := r.Client.Delete(ctx, &route, client.Preconditions{UID: &route.UID}); err != nil && !apierrors.IsNotFound(err) {
			return changes, fmt.Errorf("delete route %s: %w", nn, err)
		}
	}
	return changes, nil
}

// queueChanged queues every LeaseHost other than self whose decision
// changed: each writes its own route and status in its own reconcile. Other
// claimants' changes (Akash ProviderHosts) are forwarded to their owner.
func (r *LeaseHostReconciler) queueChanged(changes []hostnames.Change, self types.NamespacedName) {
	r.forward(changes)
	for _, obj := range r.changedLeaseHosts(changes, self) {
		r.enqueue(obj.NamespacedName)
	}
}

// forward hands changes to the engine's other claimants (OtherChanges).
func (r *LeaseHostReconciler) forward(changes []hostnames.Change) {
	if r.OtherChanges != nil && len(changes) > 0 {
		r.OtherChanges(changes)
	}
}

// EnsureRebuilt rebuilds the engine's claims on first use (ensureRebuilt);
// the engine's other claimants call it before their first admission.
func (r *LeaseHostReconciler) EnsureRebuilt(ctx context.Context) error { return r.ensureRebuilt(ctx) }

// Shards are the shards as the LeaseHost controller sees them (reserving
// their names in the engine's block list).
func (r *LeaseHostReconciler) Shards(ctx context.Context) ([]sharding.Shard, error) {
	return r.shards(ctx)
}

// EnqueueChanged reconciles every LeaseHost whose decision is among changes
// (the engine's other claimants' changes that touch LeaseHosts).
func (r *LeaseHostReconciler) EnqueueChanged(changes []hostnames.Change) {
	for _, obj := range r.changedLeaseHosts(changes, types.NamespacedName{}) {
		r.enqueue(obj.NamespacedName)
	}
}

// changedLeaseHosts are the LeaseHosts other than self whose decision is
// among changes.
func (r *LeaseHostReconciler) changedLeaseHosts(changes []hostnames.Change, self types.NamespacedName) []leasehosts.Object {
	return r.claims.Changed(changes, self)
}

// write makes the route and status of lh match its decisions. The route goes
// first, so that a name that moves is served by its new holder before the
// old holder's route (written next, by the caller) drops it.
func (r *LeaseHostReconciler) write(ctx context.Context, lh *shardgatev1alpha1.LeaseHost, plan leasehosts.Plan, decisions map[string]hostnames.Decision) error {
	desired := leasehosts.RouteFor(lh, plan, decisions)
	nn := types.NamespacedName{Namespace: lh.Namespace, Name: leasehosts.RouteName(lh)}
	var existing gatewayv1.HTTPRoute
	found := true
	if err := r.Client.Get(ctx, nn, &existing); err != nil {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("get route %s: %w", nn, err)
		}
		found = false
	}
	conflict := found && !ownedBy(&existing, lh.UID)
	observedRoute := &existing
	switch {
	case conflict:
		observedRoute = nil
	case desired == nil && found:
		if err := r.Client.Delete(ctx, &existing, client.Preconditions{UID: &existing.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete route %s: %w", nn, err)
		}
		observedRoute = nil
	case desired == nil:
		observedRoute = nil
	case !found:
		if err := write(ctx, r.Client, r.live, desired, nil); err != nil {
			return err
		}
		observedRoute = nil
	case !r.claims.Kind().RouteUpToDate(&existing, desired):
		if err := write(ctx, r.Client, r.live, desired, &existing); err != nil {
			return err
		}
	}

	var svc corev1.Service
	svcErr := r.Client.Get(ctx, types.NamespacedName{Namespace: lh.Namespace, Name: lh.Spec.Service.Name}, &svc)
	if svcErr != nil && !apierrors.IsNotFound(svcErr) {
		return fmt.Errorf("get service: %w", svcErr)
	}
	next := leasehosts.StatusFor(lh, plan, decisions, leasehosts.Observed{
		Route:          observedRoute,
		RouteConflict:  conflict,
		ServiceExists:  svcErr == nil,
		ControllerName: r.ControllerName,
		Certificate:    r.certificateReady(),

		ShardCertificate: r.shardCertificate(ctx),
	})
	if equality.Semantic.DeepEqual(next, lh.Status) {
		return nil
	}
	r.recordEvents(lh, &next)
	r.status.Write(lh, func(stored *shardgatev1alpha1.LeaseHost) { stored.Status = *next.DeepCopy() })
	return nil
}

// shardCertificate says, from the cache, whether a shard's own HTTPS
// listeners present a certificate covering a name under its domain; nil
// without the certificate controller (automatic HTTPS not running).
func (r *LeaseHostReconciler) shardCertificate(ctx context.Context) func(sharding.Shard, string) autotls.State {
	if r.Certificates == nil {
		return nil
	}
	return func(s sharding.Shard, host string) autotls.State {
		var gw *gatewayv1.Gateway
		var stored gatewayv1.Gateway
		if err := r.Client.Get(ctx, s.Gateway, &stored); err == nil {
			gw = &stored
		}
		r.shardCertsMu.Lock()
		defer r.shardCertsMu.Unlock()
		if r.shardCerts == nil {
			r.shardCerts = &autotls.ShardCertificates{}
		}
		r.shardCerts.Secret = func(k types.NamespacedName) *corev1.Secret {
			var sec corev1.Secret
			if err := r.Client.Get(ctx, k, &sec); err != nil {
				return nil
			}
			return &sec
		}
		return r.shardCerts.ShardState(gw, s.Domain, host)
	}
}

// certificateReady is the certificate controller's state reader, or nil.
func (r *LeaseHostReconciler) certificateReady() func(namespace, host string) (autotls.State, bool) {
	if r.Certificates == nil {
		return nil
	}
	return r.Certificates.CertificateReady
}

// recordEvents emits the Events internal/events derives from the status
// change (refusals on any shard, a missing backend, ...), and counts
// refusals.
func (r *LeaseHostReconciler) recordEvents(lh *shardgatev1alpha1.LeaseHost, next *shardgatev1alpha1.LeaseHostStatus) {
	for _, ev := range shardgateevents.LeaseHost(&lh.Status, next) {
		if ev.Action == shardgateevents.ActionReserve && ev.Reason != shardgatev1alpha1.ReasonReserved && ev.Reason != shardgatev1alpha1.ReasonPartiallyReserved {
			hostnameRefusals.WithLabelValues(ev.Reason).Inc()
		}
		if r.Recorder != nil && r.emitted.First(string(lh.UID), ev) {
			r.Recorder.Eventf(lh, nil, ev.Type, ev.Reason, ev.Action, "%s", ev.Message)
		}
	}
}

func (r *LeaseHostReconciler) observeMetrics() {
	for state, n := range r.Engine.Stats() {
		hostnameClaims.WithLabelValues(string(state)).Set(float64(n))
	}
}

func (r *LeaseHostReconciler) allLeaseHosts(ctx context.Context, _ client.Object) []reconcile.Request {
	var list shardgatev1alpha1.LeaseHostList
	if err := r.Client.List(ctx, &list); err != nil {
		r.Log.Error(err, "list LeaseHosts")
		return nil
	}
	return requests(list.Items)
}

// namespaceChanged: the LeaseHosts of the namespace, or every LeaseHost
// when the namespace holds Gateways (its marking decides whether they are
// shards).
func (r *LeaseHostReconciler) namespaceChanged(ctx context.Context, o client.Object) []reconcile.Request {
	var gws gatewayv1.GatewayList
	if err := r.Client.List(ctx, &gws, client.InNamespace(o.GetName())); err != nil {
		r.Log.Error(err, "list Gateways", "namespace", o.GetName())
		return r.allLeaseHosts(ctx, o)
	}
	if len(gws.Items) > 0 {
		return r.allLeaseHosts(ctx, o)
	}
	return r.namespaceLeaseHosts(ctx, o)
}

func (r *LeaseHostReconciler) namespaceLeaseHosts(ctx context.Context, o client.Object) []reconcile.Request {
	var list shardgatev1alpha1.LeaseHostList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetName())); err != nil {
		r.Log.Error(err, "list LeaseHosts", "namespace", o.GetName())
		return nil
	}
	return requests(list.Items)
}

func (r *LeaseHostReconciler) serviceLeaseHosts(ctx context.Context, o client.Object) []reconcile.Request {
	var list shardgatev1alpha1.LeaseHostList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{leaseHostServiceIndex: o.GetName()}); err != nil {
		r.Log.Error(err, "list LeaseHosts by service", "service", o.GetNamespace()+"/"+o.GetName())
		return nil
	}
	return requests(list.Items)
}

func requests(items []shardgatev1alpha1.LeaseHost) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(items))
	for i := range items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: items[i].Namespace, Name: items[i].Name}})
	}
	return out
}

func ownedBy(o metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOf(o)
	return ref != nil && ref.UID == uid
}

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
