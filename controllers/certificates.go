package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
	"github.com/shardgate/shardgate/internal/autotls"
	shardgateevents "github.com/shardgate/shardgate/internal/events"
	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/leasehosts"
	"github.com/shardgate/shardgate/sharding"
)

// CertManagerRecheck is how often the certificate controller looks again
// for cert-manager's Certificate API while the cluster does not serve it.
const CertManagerRecheck = 30 * time.Second

// CertificateSpacing is the least time between two certificate reconciles:
// each reads every name and Certificate, and translations can come many
// times a second under churn, so a burst costs one pass a second at most.
// A name's Certificate goes (or comes) at most this much later than its
// route's change.
const CertificateSpacing = time.Second

// ActionCertify is the action of the certificate controller's Events.
const ActionCertify = "Certify"

// CertificateReconciler writes the cert-manager Certificates of automatic
// HTTPS (GatewayParameters shard.tls) and deletes those no longer wanted,
// with their Secrets. The translation hands it the ownership facts and
// the shards (Submit); what to want, when to write and what each name's
// CertificateReady is are internal/autotls's pure decisions. It keeps each
// name's state in memory for the LeaseHost controller, the only writer of
// LeaseHost status (CertificateReady), and tells it which LeaseHosts to
// reconcile (Changed). It runs on the leader only, one reconcile at a
// time.
type CertificateReconciler struct {
	// Client writes; Cache reads Certificates, Secrets, LeaseHosts and
	// ProviderHosts.
	Client client.Client
	Cache  cache.Cache
	// RESTMapper says whether the cluster serves cert-manager.io/v1
	// Certificates.
	RESTMapper meta.RESTMapper
	Recorder   events.EventRecorder
	Limits     autotls.Limits
	// AkashNamespace (Akash mode) is where ProviderHosts live: their names'
	// Events go to them.
	AkashNamespace string
	Log            logr.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Changed is told the LeaseHosts whose CertificateReady changed (nil:
	// nobody).
	Changed func([]types.NamespacedName)

	once    sync.Once
	trigger chan event.GenericEvent
	pacer   *autotls.Pacer
	emitted shardgateevents.Memory

	mu     sync.Mutex
	own    *gatewayapi.Ownership
	shards []sharding.Shard
	states map[autotls.Key]autotls.State

	// Reconcile's own (one at a time).
	last      time.Time
	ctrl      controller.Controller
	watching  bool
	rebuilt   bool
	installed bool
	// created: names whose Certificate was written and is not in the
	// cache yet; failedSeen: failed Certificates already counted and
	// deleted, by UID.
	created    map[autotls.Key]time.Time
	failedSeen map[types.UID]bool
}

func (r *CertificateReconciler) init() {
	r.once.Do(func() {
		r.trigger = make(chan event.GenericEvent, 1)
		r.pacer = autotls.NewPacer(r.Limits)
		r.created = map[autotls.Key]time.Time{}
		r.failedSeen = map[types.UID]bool{}
		if r.Now == nil {
			r.Now = time.Now
		}
	})
}

// Submit hands over the facts and shards of a translation. It never
// blocks: the reconcile works from the latest.
func (r *CertificateReconciler) Submit(own *gatewayapi.Ownership, shards []sharding.Shard) {
	r.init()
	r.mu.Lock()
	r.own, r.shards = own, shards
	r.mu.Unlock()
	select {
	case r.trigger <- event.GenericEvent{Object: &corev1.Namespace{}}:
	default:
	}
}

// CertificateReady is the CertificateReady of host in namespace, as last
// decided (false: none decided yet).
func (r *CertificateReconciler) CertificateReady(namespace, host string) (autotls.State, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.states[autotls.Key{Namespace: namespace, Host: host}]
	return s, ok
}

// SetupWithManager registers the controller; it watches Certificates when
// the cluster serves them, now or later.
func (r *CertificateReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.init()
	if r.Cache == nil {
		r.Cache = mgr.GetCache()
	}
	if r.RESTMapper == nil {
		r.RESTMapper = mgr.GetRESTMapper()
	}
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("certificates").
		WatchesRawSource(source.Channel(r.trigger, handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
			return []reconcile.Request{snapshotKey}
		}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Build(r)
	if err != nil {
		return fmt.Errorf("build certificate controller: %w", err)
	}
	r.ctrl = c
	return nil
}

// certManagerInstalled says whether the cluster serves Certificates, and
// starts watching them the first time it does.
func (r *CertificateReconciler) certManagerInstalled() (bool, error) {
	gvk := autotls.CertificateGVK
	if _, err := r.RESTMapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, fmt.Errorf("look up %s: %w", gvk, err)
	}
	if !r.watching && r.ctrl != nil {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		all := handler.TypedEnqueueRequestsFromMapFunc(func(context.Context, *unstructured.Unstructured) []reconcile.Request {
			return []reconcile.Request{snapshotKey}
		})
		if err := r.ctrl.Watch(source.Kind(r.Cache, u, all)); err != nil {
			return true, fmt.Errorf("watch %s: %w", gvk, err)
		}
		r.watching = true
	}
	return true, nil
}

// Reconcile makes the Certificates match what the latest facts want.
func (r *CertificateReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	r.init()
	r.mu.Lock()
	own, shards := r.own, r.shards
	r.mu.Unlock()
	if own == nil {
		return reconcile.Result{}, nil // no translation yet
	}
	now := r.Now()
	if wait := CertificateSpacing - now.Sub(r.last); !r.last.IsZero() && wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	r.last = now
	desired := autotls.DesiredFrom(heldOf(own), own.Holders, shards)
	holders, err := r.holders(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	installed, err := r.certManagerInstalled()
	if err != nil {
		return reconcile.Result{}, err
	}
	if !installed {
		next := map[autotls.Key]autotls.State{}
		for k := range desired.Wants {
			next[k] = autotls.State{Status: metav1.ConditionFalse, Reason: shardgatev1alpha1.ReasonCertManagerNotInstalled,
				Message: "the cluster serves no cert-manager.io/v1 Certificate: install cert-manager to issue certificates"}
		}
		r.publish(next, desired, holders)
		certificateQueue.Set(0)
		if len(desired.Wants) == 0 {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{RequeueAfter: CertManagerRecheck}, nil
	}

	certs, err := r.certificates(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !r.rebuilt {
		r.rebuild(certs)
		r.rebuilt = true
	}
	next := map[autotls.Key]autotls.State{}
	var pending []*autotls.Want
	var errs []error
	for _, k := range sortedKeys(desired.Wants) {
		w := desired.Wants[k]
		name := autotls.SecretName(k.Host)
		existing := certs[types.NamespacedName{Namespace: k.Namespace, Name: name}]
		if existing == nil {
			if at, ok := r.created[k]; ok && now.Sub(at) < time.Minute {
				next[k] = autotls.StateOf(autotls.CertificateStatus{}, name)
				continue
			}
			delete(r.created, k)
			if conflict, err := r.secretConflict(ctx, k.Namespace, name); err != nil {
				errs = append(errs, err)
				continue
			} else if conflict {
				next[k] = conflictState("Secret", name)
				continue
			}
			pending = append(pending, w)
			continue
		}
		delete(r.created, k)
		if !managed(existing) {
			next[k] = conflictState("Certificate", name)
			continue
		}
		st, err := r.reconcileExisting(ctx, w, existing, holders, now)
		if err != nil {
			// Retried with the error; meanwhile what cert-manager says.
			errs = append(errs, err)
			st = autotls.StateOf(autotls.ReadStatus(existing), name)
		}
		next[k] = st
	}

	for k := range r.created {
		if desired.Wants[k] == nil {
			delete(r.created, k)
		}
	}
	live := map[types.UID]bool{}
	for _, c := range certs {
		live[c.GetUID()] = true
	}
	for uid := range r.failedSeen {
		if !live[uid] {
			delete(r.failedSeen, uid)
		}
	}

	plan := r.pacer.Plan(now, pending)
	for _, w := range plan.Admit {
		if err := r.create(ctx, w, holders); err != nil {
			errs = append(errs, err)
			next[w.Key] = autotls.State{Status: metav1.ConditionFalse, Reason: shardgatev1alpha1.ReasonCertificateQueued,
				Message: "writing the Certificate failed; retrying: " + err.Error()}
			continue
		}
		certificatesCreated.Inc()
		r.created[w.Key] = now
		next[w.Key] = autotls.StateOf(autotls.CertificateStatus{}, autotls.SecretName(w.Host))
	}
	for k, wt := range plan.Wait {
		next[k] = autotls.WaitState(wt)
	}
	certificateQueue.Set(float64(len(plan.Wait)))

	if err := r.deleteUnwanted(ctx, desired, certs, holders); err != nil {
		errs = append(errs, err)
	}
	r.publish(next, desired, holders)

	res := reconcile.Result{}
	if !plan.Next.IsZero() {
		res.RequeueAfter = max(plan.Next.Sub(now), time.Second)
	}
	if len(r.created) > 0 {
		res.RequeueAfter = min(cmp.Or(res.RequeueAfter, time.Minute), time.Minute)
	}
	return res, errors.Join(errs...)
}

// reconcileExisting brings a managed Certificate's spec to the wanted one
// and reads its state; a failed one is deleted and backs off.
func (r *CertificateReconciler) reconcileExisting(ctx context.Context, w *autotls.Want, existing *unstructured.Unstructured, holders map[types.UID]client.Object, now time.Time) (autotls.State, error) {
	st := autotls.ReadStatus(existing)
	if st.Failed() {
		if !r.failedSeen[existing.GetUID()] {
			at := st.LastFailureTime
			if at.IsZero() {
				at = now
			}
			r.pacer.Failed(w.Key, at, st.FailureMessage())
			r.failedSeen[existing.GetUID()] = true
			certificatesFailed.Inc()
		}
		uid := existing.GetUID()
		if err := r.Client.Delete(ctx, existing, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return autotls.State{}, fmt.Errorf("delete failed Certificate %s/%s: %w", existing.GetNamespace(), existing.GetName(), err)
		}
		if wt, backing := r.pacer.Backoff(w.Key, now); backing {
			return autotls.WaitState(wt), nil
		}
		return autotls.StateOf(st, existing.GetName()), nil
	}
	if st.Issued() {
		r.pacer.Succeeded(w.Key)
	}
	desired := r.certificate(w, holders)
	if !autotls.SpecEqual(existing, desired) {
		patch := existing.DeepCopy()
		patch.Object["spec"] = desired.Object["spec"]
		if err := r.Client.Update(ctx, patch); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return autotls.State{}, fmt.Errorf("update Certificate %s/%s: %w", existing.GetNamespace(), existing.GetName(), err)
		}
	}
	return autotls.StateOf(st, existing.GetName()), nil
}

// deleteUnwanted deletes the managed Certificates no name wants any more,
// and the managed Secrets of names no longer wanted.
func (r *CertificateReconciler) deleteUnwanted(ctx context.Context, desired autotls.Desired, certs map[types.NamespacedName]*unstructured.Unstructured, holders map[types.UID]client.Object) error {
	wanted := map[types.NamespacedName]bool{}
	for k := range desired.Wants {
		wanted[types.NamespacedName{Namespace: k.Namespace, Name: autotls.SecretName(k.Host)}] = true
	}
	var errs []error
	for _, nn := range slices.SortedFunc(maps.Keys(certs), cmpNN) {
		c := certs[nn]
		if wanted[nn] || !managed(c) {
			continue
		}
		uid := c.GetUID()
		if err := r.Client.Delete(ctx, c, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete Certificate %s: %w", nn, err))
			continue
		}
		host := c.GetAnnotations()[autotls.AnnotationHostname]
		r.pacer.Forget(autotls.Key{Namespace: nn.Namespace, Host: host})
		certificatesRevoked.Inc()
		if h := holderOf(c, holders); h != nil {
			r.event(h, host, corev1.EventTypeNormal, shardgatev1alpha1.ReasonCertificateRevoked,
				fmt.Sprintf("%s is no longer held on a shard with automatic HTTPS; its Certificate and Secret %s are deleted", host, nn.Name))
		}
	}
	var secrets corev1.SecretList
	if err := r.Cache.List(ctx, &secrets, client.MatchingLabels{autotls.LabelManaged: "true"}); err != nil {
		return errors.Join(append(errs, fmt.Errorf("list managed Secrets: %w", err))...)
	}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		nn := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
		if wanted[nn] || !autotls.IsSecretName(s.Name) {
			continue
		}
		if c := certs[nn]; c != nil && !managed(c) {
			continue // the tenant's own Certificate issues into it now
		}
		uid := s.UID
		if err := r.Client.Delete(ctx, s, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete Secret %s: %w", nn, err))
		}
	}
	return errors.Join(errs...)
}

// create writes w's Certificate.
func (r *CertificateReconciler) create(ctx context.Context, w *autotls.Want, holders map[types.UID]client.Object) error {
	c := r.certificate(w, holders)
	if err := r.Client.Create(ctx, c); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache has not seen it yet; the next reconcile reads it
		}
		return fmt.Errorf("create Certificate %s/%s: %w", c.GetNamespace(), c.GetName(), err)
	}
	if h := holders[w.Holder]; h != nil {
		r.event(h, w.Host, corev1.EventTypeNormal, shardgatev1alpha1.ReasonCertificateIssuing,
			fmt.Sprintf("Certificate %s written for %s (issuer %s %s)", c.GetName(), w.Host, w.Issuer.Kind, w.Issuer.Name))
	}
	return nil
}

// certificate is the Certificate shardgate writes for w
// (autotls.CertificateFor), with its holder's lease labels and, for a
// LeaseHost, owned by it.
func (r *CertificateReconciler) certificate(w *autotls.Want, holders map[types.UID]client.Object) *unstructured.Unstructured {
	var labels map[string]string
	var owner *metav1.OwnerReference
	switch h := holders[w.Holder].(type) {
	case *shardgatev1alpha1.LeaseHost:
		labels = leasehosts.LeaseLabels(h.Spec.Lease)
		if !w.Unowned {
			owner = &metav1.OwnerReference{APIVersion: shardgatev1alpha1.GroupVersion.String(), Kind: "LeaseHost",
				Name: h.Name, UID: h.UID, Controller: new(true), BlockOwnerDeletion: new(false)}
		}
	case *akashv1.ProviderHost:
		labels = leasehosts.LeaseLabels(shardgatev1alpha1.LeaseRef{Owner: h.Spec.Owner, DSeq: h.Spec.Dseq,
			GSeq: h.Spec.Gseq, OSeq: h.Spec.Oseq, Provider: h.Spec.Provider})
	}
	return autotls.CertificateFor(w, labels, owner)
}

// rebuild counts the managed Certificates in the pacer's windows by their
// creationTimestamp, so that a restart does not reset the budgets.
func (r *CertificateReconciler) rebuild(certs map[types.NamespacedName]*unstructured.Unstructured) {
	for _, c := range certs {
		if rec, ok := autotls.RecordOf(c); ok {
			r.pacer.Record(rec.Issuer, rec.Host, rec.Owner, rec.Created)
		}
	}
}

// publish makes next the states the LeaseHost controller reads, emits the
// Events of the names whose state changed and tells the LeaseHost
// controller which LeaseHosts to reconcile.
func (r *CertificateReconciler) publish(next map[autotls.Key]autotls.State, desired autotls.Desired, holders map[types.UID]client.Object) {
	r.mu.Lock()
	prev := r.states
	r.states = next
	r.mu.Unlock()
	changed := map[types.NamespacedName]bool{}
	for k, s := range next {
		old, had := prev[k]
		if had && old == s {
			continue
		}
		w := desired.Wants[k]
		h := holders[w.Holder]
		if h == nil {
			continue
		}
		if _, lh := h.(*shardgatev1alpha1.LeaseHost); lh {
			changed[types.NamespacedName{Namespace: h.GetNamespace(), Name: h.GetName()}] = true
		}
		if had && old.Reason == s.Reason && old.Status == s.Status {
			continue // a new message only
		}
		switch {
		case s.Reason == shardgatev1alpha1.ReasonCertificateIssuing:
			// The Event of the write says it (create).
		case s.Status == metav1.ConditionTrue:
			r.event(h, k.Host, corev1.EventTypeNormal, s.Reason, s.Message)
		case s.Reason == shardgatev1alpha1.ReasonCertificateQueued:
			r.event(h, k.Host, corev1.EventTypeNormal, s.Reason, s.Message)
		default:
			r.event(h, k.Host, corev1.EventTypeWarning, s.Reason, s.Message)
		}
	}
	for k := range prev {
		if _, still := next[k]; still {
			continue
		}
		// No longer wanted: the LeaseHost's entry loses its condition.
		for _, h := range holders {
			if lh, ok := h.(*shardgatev1alpha1.LeaseHost); ok && lh.Namespace == k.Namespace && slices.Contains(lh.Status.ReservedHosts, k.Host) {
				changed[types.NamespacedName{Namespace: lh.Namespace, Name: lh.Name}] = true
			}
		}
	}
	if r.Changed != nil && len(changed) > 0 {
		r.Changed(slices.SortedFunc(maps.Keys(changed), cmpNN))
	}
}

// event emits an Event about host on its holder, once per holder, host,
// reason and message.
func (r *CertificateReconciler) event(h client.Object, host, typ, reason, msg string) {
	ev := shardgateevents.Event{Type: typ, Reason: reason, Action: ActionCertify, Message: msg, Subject: host}
	if r.Recorder == nil || !r.emitted.First(string(h.GetUID()), ev) {
		return
	}
	r.Recorder.Eventf(h, nil, typ, reason, ActionCertify, "%s: %s", host, msg)
}

// holders are the LeaseHosts, and in Akash mode the ProviderHosts, by UID.
func (r *CertificateReconciler) holders(ctx context.Context) (map[types.UID]client.Object, error) {
	out := map[types.UID]client.Object{}
	var lhs shardgatev1alpha1.LeaseHostList
	if err := r.Cache.List(ctx, &lhs, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list LeaseHosts: %w", err)
	}
	for i := range lhs.Items {
		out[lhs.Items[i].UID] = &lhs.Items[i]
	}
	if r.AkashNamespace != "" {
		var phs akashv1.ProviderHostList
		if err := r.Cache.List(ctx, &phs, client.InNamespace(r.AkashNamespace), client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("list ProviderHosts: %w", err)
		}
		for i := range phs.Items {
			out[phs.Items[i].UID] = &phs.Items[i]
		}
	}
	return out, nil
}

// certificates are the Certificates named like shardgate's, by namespace
// and name (managed or not: a tenant's of that name is a conflict).
func (r *CertificateReconciler) certificates(ctx context.Context) (map[types.NamespacedName]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(autotls.CertificateGVK.GroupVersion().WithKind(autotls.CertificateGVK.Kind + "List"))
	// The cache's own objects, not copies: nothing here modifies them (an
	// update works on a copy).
	if err := r.Cache.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list Certificates: %w", err)
	}
	out := map[types.NamespacedName]*unstructured.Unstructured{}
	for i := range list.Items {
		c := &list.Items[i]
		if autotls.IsSecretName(c.GetName()) && c.GetDeletionTimestamp() == nil {
			out[types.NamespacedName{Namespace: c.GetNamespace(), Name: c.GetName()}] = c
		}
	}
	return out, nil
}

// secretConflict: a Secret of that name exists that shardgate's
// Certificate did not make (cert-manager would take it over).
func (r *CertificateReconciler) secretConflict(ctx context.Context, namespace, name string) (bool, error) {
	var s corev1.Secret
	if err := r.Cache.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("get Secret %s/%s: %w", namespace, name, err)
	}
	return s.Labels[autotls.LabelManaged] != "true", nil
}

func conflictState(kind, name string) autotls.State {
	return autotls.State{Status: metav1.ConditionFalse, Reason: shardgatev1alpha1.ReasonCertificateConflict,
		Message: fmt.Sprintf("a %s named %s that shardgate did not write is in the namespace; it is left alone and no certificate is requested for the name", kind, name)}
}

func managed(o metav1.Object) bool { return autotls.Managed(o) }

// holderOf is the Certificate's LeaseHost, or (Akash) the ProviderHost of
// its name.
func holderOf(c *unstructured.Unstructured, holders map[types.UID]client.Object) client.Object {
	for _, ref := range c.GetOwnerReferences() {
		if h := holders[ref.UID]; h != nil {
			return h
		}
	}
	host := c.GetAnnotations()[autotls.AnnotationHostname]
	for _, h := range holders {
		if ph, ok := h.(*akashv1.ProviderHost); ok && ph.Spec.Hostname == host {
			return ph
		}
	}
	return nil
}

// heldOf are the names the facts' generated routes hold, per shard.
func heldOf(o *gatewayapi.Ownership) func(func(autotls.Held) bool) {
	return func(yield func(autotls.Held) bool) {
		for route, g := range o.Generated {
			for gw, hosts := range g.Hosts {
				for _, h := range hosts {
					if !yield(autotls.Held{Route: route, Holder: g.LeaseHost, Unowned: g.Unowned, Shard: gw, Host: h}) {
						return
					}
				}
			}
		}
	}
}

func sortedKeys[V any](m map[autotls.Key]V) []autotls.Key {
	return slices.SortedFunc(maps.Keys(m), func(a, b autotls.Key) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Host, b.Host))
	})
}

func cmpNN(a, b types.NamespacedName) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}
