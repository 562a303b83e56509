package controllers

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/addresses"
	"github.com/shardgate/shardgate/internal/akash"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
	shardgateevents "github.com/shardgate/shardgate/internal/events"
	"github.com/shardgate/shardgate/internal/tenancy"
)

// providerLeasedIPServiceIndex indexes ProviderLeasedIPs by the
// namespace/name of the Service they produce.
const providerLeasedIPServiceIndex = "akash.ipService"

// Event reasons of ProviderLeasedIPs.
const (
	ReasonInvalidLeasedIP = "InvalidProviderLeasedIP"
)

// ProviderLeasedIPReconciler writes, for each Akash ProviderLeasedIP, the
// LoadBalancer Service Akash's IP operator would write, in the lease
// namespace; MetalLB assigns its address. Deleting a ProviderLeasedIP
// deletes only its own Service. An address is never shared across owners:
// the sharing key must be the lease owner's own, and a lease namespace
// marked with another owner gets nothing.
type ProviderLeasedIPReconciler struct {
	Client client.Client
	// Namespace is where the provider writes ProviderLeasedIPs.
	Namespace string
	// Pool is the MetalLB pool of leased IPs (akash.metalLBPool): named in
	// each Service's pool annotation unless it is akash.DefaultMetalLBPool.
	Pool string
	// Policy reads namespaces' owner markings (nil: the defaults).
	Policy   func() tenancy.Policy
	Recorder events.EventRecorder
	Log      logr.Logger

	// live reads the apiserver directly for object writes (see write).
	live client.Reader

	mu sync.Mutex
	// services: ProviderLeasedIP name → the Service it wrote.
	services map[types.NamespacedName]types.NamespacedName
	// applied: the Services (by UID) known to carry shardgate's fields. A
	// Service Akash's own IP operator wrote may already be as desired; it
	// is applied once all the same, so that shardgate's start-up sweep
	// (which deletes only what shardgate wrote) removes it when its
	// ProviderLeasedIP goes while shardgate is down.
	applied map[types.UID]bool
	emitted shardgateevents.Memory
}

// SetupWithManager registers the controller.
func (r *ProviderLeasedIPReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.live = mgr.GetAPIReader()
	r.services = map[types.NamespacedName]types.NamespacedName{}
	r.applied = map[types.UID]bool{}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &akashv1.ProviderLeasedIP{}, providerLeasedIPServiceIndex, ipServiceIndex); err != nil {
		return fmt.Errorf("index ProviderLeasedIPs by Service: %w", err)
	}
	// Once per start, on the leader: Services of ProviderLeasedIPs deleted
	// while no controller ran.
	if err := mgr.Add(manager.RunnableFunc(r.sweep)); err != nil {
		return fmt.Errorf("add leased-IP Service sweep: %w", err)
	}
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.Namespace })
	ipServices := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[akash.LabelServiceTarget] == akash.ServiceTargetMetalLB
	})
	// And on every event of a leased-IP Service: one that no
	// ProviderLeasedIP produces any more goes.
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("akash-leasedip-orphans").
		For(&corev1.Service{}, builder.WithPredicates(ipServices)).
		Complete(reconcile.Func(r.sweepService)); err != nil {
		return fmt.Errorf("add leased-IP Service orphan controller: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("akash-providerleasedip").
		For(&akashv1.ProviderLeasedIP{}, builder.WithPredicates(inNamespace)).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(r.byService), builder.WithPredicates(ipServices)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.all), builder.WithPredicates(predicate.Or(predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Complete(r)
}

// sweep deletes the leased-IP Services (akash.network: "true",
// service-target metal-lb, lease labels) that shardgate wrote and no live
// ProviderLeasedIP produces, also when no ProviderLeasedIP is left at all
// (every lease with an IP ended while shardgate was down). A Service
// shardgate never wrote (no field manager of its own: Akash's IP operator's,
// another tool's) is never deleted, so a wrong akash.namespace costs nothing
// but the addresses shardgate itself gave out.
func (r *ProviderLeasedIPReconciler) sweep(ctx context.Context) error {
	var lips akashv1.ProviderLeasedIPList
	if err := r.Client.List(ctx, &lips, client.InNamespace(r.Namespace)); err != nil {
		return fmt.Errorf("sweep leased-IP Services: list ProviderLeasedIPs: %w", err)
	}
	wanted := map[types.NamespacedName]bool{}
	for i := range lips.Items {
		if nn, ok := ipServiceOf(&lips.Items[i]); ok && lips.Items[i].DeletionTimestamp == nil {
			wanted[nn] = true
		}
	}
	var svcs corev1.ServiceList
	if err := r.Client.List(ctx, &svcs, client.MatchingLabels{akash.LabelManaged: "true", akash.LabelServiceTarget: akash.ServiceTargetMetalLB}); err != nil {
		return fmt.Errorf("sweep leased-IP Services: list Services: %w", err)
	}
	for i := range svcs.Items {
		nn := client.ObjectKeyFromObject(&svcs.Items[i])
		if wanted[nn] {
			continue
		}
		if err := r.deleteOrphan(ctx, nn); err != nil {
			return fmt.Errorf("sweep leased-IP Services: %w", err)
		}
	}
	return nil
}

// sweepService deletes the leased-IP Service req names when it is an
// orphan (see deleteOrphan).
func (r *ProviderLeasedIPReconciler) sweepService(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return reconcile.Result{}, r.deleteOrphan(ctx, req.NamespacedName)
}

// deleteOrphan deletes the Service nn if it is a leased-IP Service of a
// lease (Akash's labels), shardgate wrote it (read from the apiserver: the
// cache keeps no managedFields), and no live ProviderLeasedIP produces it.
//
// A Service some ProviderLeasedIP in the cache produces is left at once,
// from the cache alone. Otherwise the apiserver is asked whether shardgate
// wrote it, and then the cache again: shardgate writes a leased-IP Service
// only for a ProviderLeasedIP already in its cache, so once the apiserver
// shows shardgate's fields, a cache read after that holds the
// ProviderLeasedIP, unless it has gone since. Without that second read, a
// Service Akash's IP operator wrote, whose ProviderLeasedIP arrived and
// which shardgate applied between the first read and the apiserver's
// answer, would look like shardgate's orphan, and be deleted.
func (r *ProviderLeasedIPReconciler) deleteOrphan(ctx context.Context, nn types.NamespacedName) error {
	var cached corev1.Service
	if err := r.Client.Get(ctx, nn, &cached); err != nil {
		return client.IgnoreNotFound(err)
	}
	if _, ok := akash.LeaseFromLabels(cached.Labels); !ok || cached.Labels[akash.LabelManaged] != "true" ||
		cached.Labels[akash.LabelServiceTarget] != akash.ServiceTargetMetalLB {
		return nil
	}
	if produced, err := r.produced(ctx, nn); err != nil || produced {
		return err
	}
	var svc corev1.Service
	if err := r.live.Get(ctx, nn, &svc); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !wroteBy(&svc, shardgatev1alpha1.FieldOwner) {
		return nil
	}
	if produced, err := r.produced(ctx, nn); err != nil || produced {
		return err
	}
	r.Log.Info("deleting the Service of a ProviderLeasedIP that is gone", "service", nn)
	if err := r.Client.Delete(ctx, &svc, client.Preconditions{UID: &svc.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete orphaned leased-IP Service %s: %w", nn, err)
	}
	r.forgetApplied(svc.UID)
	return nil
}

// produced reports whether a live ProviderLeasedIP in the cache produces
// the Service nn.
func (r *ProviderLeasedIPReconciler) produced(ctx context.Context, nn types.NamespacedName) (bool, error) {
	var producers akashv1.ProviderLeasedIPList
	if err := r.Client.List(ctx, &producers, client.InNamespace(r.Namespace), client.MatchingFields{providerLeasedIPServiceIndex: nn.String()}); err != nil {
		return false, fmt.Errorf("list ProviderLeasedIPs of %s: %w", nn, err)
	}
	for i := range producers.Items {
		if producers.Items[i].DeletionTimestamp == nil {
			return true, nil
		}
	}
	return false, nil
}

// wroteBy: obj has fields of field manager (it wrote them, by apply or
// update).
func wroteBy(obj client.Object, owner string) bool {
	for _, m := range obj.GetManagedFields() {
		if m.Manager == owner {
			return true
		}
	}
	return false
}

// ipServiceIndex is the providerLeasedIPServiceIndex of a
// ProviderLeasedIP: the Service it produces.
func ipServiceIndex(o client.Object) []string {
	if nn, ok := ipServiceOf(o.(*akashv1.ProviderLeasedIP)); ok {
		return []string{nn.String()}
	}
	return nil
}

func ipServiceOf(lip *akashv1.ProviderLeasedIP) (types.NamespacedName, bool) {
	l, proto, err := akash.IPLease(lip)
	if err != nil {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: l.Namespace(), Name: akash.IPServiceName(lip.Spec.ServiceName, lip.Spec.ExternalPort, string(proto))}, true
}

// Reconcile writes or removes req's Service.
func (r *ProviderLeasedIPReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var lip akashv1.ProviderLeasedIP
	if err := r.Client.Get(ctx, req.NamespacedName, &lip); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, r.removeOwn(ctx, req.NamespacedName, types.NamespacedName{})
	}
	if lip.DeletionTimestamp != nil {
		return reconcile.Result{}, r.removeOwn(ctx, req.NamespacedName, types.NamespacedName{})
	}
	l, proto, err := akash.IPLease(&lip)
	if err != nil {
		r.event(&lip, corev1.EventTypeWarning, ReasonInvalidLeasedIP, err.Error())
		return reconcile.Result{}, r.removeOwn(ctx, req.NamespacedName, types.NamespacedName{})
	}
	desired := akash.IPServiceFor(&lip, l, proto, r.Pool)
	nn := types.NamespacedName{Namespace: desired.Namespace, Name: desired.Name}
	// The spec changed to another Service: the previous one goes.
	if err := r.removeOwn(ctx, req.NamespacedName, nn); err != nil {
		return reconcile.Result{}, err
	}
	var ns corev1.Namespace
	if err := r.Client.Get(ctx, types.NamespacedName{Name: l.Namespace()}, &ns); err != nil {
		if apierrors.IsNotFound(err) {
			// Akash creates the lease namespace first; the Namespace
			// watch brings this back when it appears.
			r.event(&lip, corev1.EventTypeWarning, shardgatev1alpha1.ReasonPending, fmt.Sprintf("lease namespace %s does not exist yet", l.Namespace()))
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("get namespace %s: %w", l.Namespace(), err)
	}
	policy := tenancy.DefaultPolicy()
	if r.Policy != nil {
		policy = r.Policy()
	}
	policy.RequireOwner = false
	if policy.Check(&ns, l.Owner) == tenancy.Mismatch {
		r.event(&lip, corev1.EventTypeWarning, shardgatev1alpha1.ReasonNamespaceOwnerMismatch,
			fmt.Sprintf("lease namespace %s belongs to another owner; lease owner %q may not hold an address in it", l.Namespace(), l.Owner))
		return reconcile.Result{}, r.removeService(ctx, &lip, nn)
	}
	var existing corev1.Service
	found := true
	if err := r.Client.Get(ctx, nn, &existing); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("get service %s: %w", nn, err)
		}
		found = false
	}
	if found && !ipServiceOfLease(&existing, l) {
		r.event(&lip, corev1.EventTypeWarning, shardgatev1alpha1.ReasonServiceConflict,
			fmt.Sprintf("Service %s in the lease namespace is not this lease's leased-IP Service; not overwritten", nn.Name))
		return reconcile.Result{}, nil
	}
	r.mu.Lock()
	r.services[req.NamespacedName] = nn
	r.mu.Unlock()
	switch {
	case !found:
		if err := write(ctx, r.Client, r.live, desired, nil); apierrors.IsAlreadyExists(err) {
			return reconcile.Result{Requeue: true}, nil
		} else if err != nil {
			return reconcile.Result{}, err
		}
	case !ipServiceUpToDate(&existing, desired):
		if err := write(ctx, r.Client, r.live, desired, &existing); err != nil {
			return reconcile.Result{}, err
		}
		r.markApplied(existing.UID)
	default:
		if err := r.adopt(ctx, &existing, desired); err != nil {
			return reconcile.Result{}, err
		}
	}
	if ip := addresses.IngressIP(&existing); found && ip != "" {
		r.event(&lip, corev1.EventTypeNormal, shardgatev1alpha1.ReasonAllocated, fmt.Sprintf("Service %s has address %s", nn.Name, ip))
	}
	return reconcile.Result{}, nil
}

func (r *ProviderLeasedIPReconciler) markApplied(uid types.UID) {
	r.mu.Lock()
	r.applied[uid] = true
	r.mu.Unlock()
}

func (r *ProviderLeasedIPReconciler) forgetApplied(uid types.UID) {
	r.mu.Lock()
	delete(r.applied, uid)
	r.mu.Unlock()
}

// adopt applies desired to existing, a Service already as desired, once
// per Service and process, when the apiserver shows no field of
// shardgate's on it (another writer made it: Akash's IP operator before
// the switch). The write changes no value, only the fields' manager.
func (r *ProviderLeasedIPReconciler) adopt(ctx context.Context, existing *corev1.Service, desired *corev1.Service) error {
	r.mu.Lock()
	done := r.applied[existing.UID]
	r.mu.Unlock()
	if done {
		return nil
	}
	var svc corev1.Service
	if err := r.live.Get(ctx, client.ObjectKeyFromObject(existing), &svc); err != nil {
		return client.IgnoreNotFound(err)
	}
	if svc.UID != existing.UID {
		return nil // made again since the cache saw it: the next pass judges it
	}
	if !wroteBy(&svc, shardgatev1alpha1.FieldOwner) {
		if err := write(ctx, r.Client, r.live, desired, &svc); err != nil {
			return fmt.Errorf("adopt leased-IP Service %s/%s: %w", svc.Namespace, svc.Name, err)
		}
	}
	r.markApplied(svc.UID)
	return nil
}

// removeOwn deletes the Service the ProviderLeasedIP named lipNN wrote, if
// it is not keep and no other live ProviderLeasedIP produces it.
func (r *ProviderLeasedIPReconciler) removeOwn(ctx context.Context, lipNN, keep types.NamespacedName) error {
	r.mu.Lock()
	svc, ok := r.services[lipNN]
	if ok && svc != keep {
		delete(r.services, lipNN)
	}
	r.mu.Unlock()
	if !ok || svc == keep {
		return nil
	}
	return r.deleteUnshared(ctx, svc)
}

func (r *ProviderLeasedIPReconciler) removeService(ctx context.Context, lip *akashv1.ProviderLeasedIP, nn types.NamespacedName) error {
	r.mu.Lock()
	delete(r.services, types.NamespacedName{Namespace: lip.Namespace, Name: lip.Name})
	r.mu.Unlock()
	return r.deleteUnshared(ctx, nn)
}

// deleteUnshared deletes the leased-IP Service nn unless a live
// ProviderLeasedIP still produces it. It deletes nothing else: never another
// lease's or another owner's Service.
func (r *ProviderLeasedIPReconciler) deleteUnshared(ctx context.Context, nn types.NamespacedName) error {
	var others akashv1.ProviderLeasedIPList
	if err := r.Client.List(ctx, &others, client.InNamespace(r.Namespace), client.MatchingFields{providerLeasedIPServiceIndex: nn.String()}); err != nil {
		return fmt.Errorf("list ProviderLeasedIPs of %s: %w", nn, err)
	}
	for i := range others.Items {
		if others.Items[i].DeletionTimestamp == nil {
			return nil
		}
	}
	var svc corev1.Service
	if err := r.Client.Get(ctx, nn, &svc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("get service %s: %w", nn, err)
	}
	if svc.Labels[akash.LabelServiceTarget] != akash.ServiceTargetMetalLB {
		return nil
	}
	if err := r.Client.Delete(ctx, &svc, client.Preconditions{UID: &svc.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete service %s: %w", nn, err)
	}
	r.forgetApplied(svc.UID)
	return nil
}

func (r *ProviderLeasedIPReconciler) event(lip *akashv1.ProviderLeasedIP, typ, reason, msg string) {
	ev := shardgateevents.Event{Type: typ, Reason: reason, Action: shardgateevents.ActionAllocate, Message: msg}
	if r.Recorder != nil && r.emitted.First(string(lip.UID), ev) {
		r.Recorder.Eventf(lip, nil, typ, reason, ev.Action, "%s", msg)
	}
}

func (r *ProviderLeasedIPReconciler) byService(ctx context.Context, o client.Object) []reconcile.Request {
	var list akashv1.ProviderLeasedIPList
	nn := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
	if err := r.Client.List(ctx, &list, client.InNamespace(r.Namespace), client.MatchingFields{providerLeasedIPServiceIndex: nn.String()}); err != nil {
		r.Log.Error(err, "list ProviderLeasedIPs by Service", "service", nn)
		return nil
	}
	return lipRequests(list.Items)
}

func (r *ProviderLeasedIPReconciler) all(ctx context.Context, _ client.Object) []reconcile.Request {
	var list akashv1.ProviderLeasedIPList
	if err := r.Client.List(ctx, &list, client.InNamespace(r.Namespace)); err != nil {
		r.Log.Error(err, "list ProviderLeasedIPs")
		return nil
	}
	return lipRequests(list.Items)
}

func lipRequests(items []akashv1.ProviderLeasedIP) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(items))
	for i := range items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: items[i].Namespace, Name: items[i].Name}})
	}
	return out
}

// ipServiceOfLease: svc is a leased-IP Service of lease l (its labels).
func ipServiceOfLease(svc *corev1.Service, l akash.Lease) bool {
	got, ok := akash.LeaseFromLabels(svc.Labels)
	return ok && got == l && svc.Labels[akash.LabelServiceTarget] == akash.ServiceTargetMetalLB
}

// ipServiceUpToDate: applying desired would change nothing we own.
func ipServiceUpToDate(existing, desired *corev1.Service) bool {
	for k, v := range desired.Labels {
		if existing.Labels[k] != v {
			return false
		}
	}
	for k, v := range desired.Annotations {
		if existing.Annotations[k] != v {
			return false
		}
	}
	// A pool annotation the configuration no longer asks for goes.
	if _, ok := desired.Annotations[akash.AnnotationAddressPool]; !ok && existing.Annotations[akash.AnnotationAddressPool] != "" {
		return false
	}
	if existing.Spec.Type != desired.Spec.Type || !maps.Equal(existing.Spec.Selector, desired.Spec.Selector) || len(existing.Spec.Ports) != 1 {
		return false
	}
	e, d := existing.Spec.Ports[0], desired.Spec.Ports[0]
	return e.Name == d.Name && e.Protocol == d.Protocol && e.Port == d.Port && equality.Semantic.DeepEqual(e.TargetPort, d.TargetPort)
}
