package controllers

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/infra"
	gwparams "github.com/shardgate/shardgate/internal/params"
	"github.com/shardgate/shardgate/internal/pki"
)

// InfraReconciler provisions each Gateway's Envoy data plane
// (internal/infra): ServiceAccount, client certificate Secret, bootstrap
// ConfigMap, LoadBalancer Service, the Deployment or DaemonSet, and the
// PodDisruptionBudget when asked for. It runs on the leader only and
// writes an object only when it differs from the cached one. It deletes
// only objects it controls that the parameters no longer want (the other
// workload kind, once the new one has an available pod; an unwanted
// PodDisruptionBudget) and a Deployment whose immutable selector the pods
// no longer match; the rest is owned by the Gateway and the garbage
// collector removes it with it.
//
// A Gateway in a tenant's namespace (one with an owner marking, see
// tenancy.Policy.TenantNamespace), or one whose class takes its
// GatewayParameters from a tenant's namespace, gets no provider resources:
// nothing is provisioned for it (no pool or addresses on a Service, no
// image or replica count, no xDS client certificate), and what was
// provisioned before its namespace was marked is deleted. Its status says
// so (GatewayInTenantNamespace, or InvalidParameters for the class).
type InfraReconciler struct {
	Client client.Client
	// APIReader reads from the apiserver (mgr.GetAPIReader()). Before a
	// certificate is issued, the client certificate Secret is read through
	// it: the cache may not have seen a Secret written moments ago, and a
	// needless reissue would roll the Envoy pods. Nil means Client.
	APIReader      client.Reader
	ControllerName string
	Options        infra.Options
	// Tenancy reads namespaces' owner markings (nil: the default policy).
	Tenancy *Tenancy
	// CA issues the client certificates. When nil, LoadCA is called (until
	// it succeeds) on the first reconcile that needs it: the CA Secret's
	// namespace may not exist yet when the process starts.
	CA     *pki.CA
	LoadCA func(context.Context) (*pki.CA, error)
	Log    logr.Logger
	// Now is the clock for certificate expiry (time.Now when nil).
	Now func() time.Time

	// live reads the apiserver directly for object writes (see write).
	live client.Reader

	mu sync.Mutex

	// tenancyChanged brings every Gateway back after a config reload
	// changed how owner markings are read (TenancyChanged).
	once           sync.Once
	tenancyChanged chan event.GenericEvent
}

// TenancyChanged re-examines every Gateway: a reloaded owner key can make
// a provider namespace a tenant's, whose Gateways then lose what was
// provisioned for them.
func (r *InfraReconciler) TenancyChanged() {
	r.once.Do(func() { r.tenancyChanged = make(chan event.GenericEvent, 1) })
	select {
	case r.tenancyChanged <- event.GenericEvent{Object: &corev1.Namespace{}}:
	default:
	}
}

// SetupWithManager registers the controller: Gateways, what they resolve
// (classes, parameters), and the five owned kinds so that drift is
// repaired.
func (r *InfraReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.live = mgr.GetAPIReader()
	r.once.Do(func() { r.tenancyChanged = make(chan event.GenericEvent, 1) })
	return ctrl.NewControllerManagedBy(mgr).
		Named("infra").
		For(&gatewayv1.Gateway{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&gatewayv1.GatewayClass{}, handler.EnqueueRequestsFromMapFunc(r.classGateways), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&shardgatev1alpha1.GatewayParameters{}, handler.EnqueueRequestsFromMapFunc(r.paramsGateways), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A namespace marked as a tenant's later takes its Gateways'
		// objects away (and the Gateways of classes configured from it).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceGateways), builder.WithPredicates(predicate.Or(predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WatchesRawSource(source.Channel(r.tenancyChanged, handler.EnqueueRequestsFromMapFunc(r.allGateways))).
		Owns(&corev1.ServiceAccount{}).
		Owns(&corev1.Secret{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.Deployment{}).
		Owns(&appsv1.DaemonSet{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Complete(r)
}

func (r *InfraReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *InfraReconciler) ca(ctx context.Context) (*pki.CA, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.CA != nil {
		return r.CA, nil
	}
	if r.LoadCA == nil {
		return nil, fmt.Errorf("no xDS CA configured")
	}
	ca, err := r.LoadCA(ctx)
	if err != nil {
		return nil, fmt.Errorf("load the xDS CA: %w", err)
	}
	r.CA = ca
	return ca, nil
}

// Reconcile brings one Gateway's objects in line with Build.
func (r *InfraReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := r.Log.WithValues("gateway", req.NamespacedName)
	var gw gatewayv1.Gateway
	if err := r.Client.Get(ctx, req.NamespacedName, &gw); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if gw.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	class, ok, err := r.ourClass(ctx, string(gw.Spec.GatewayClassName))
	if err != nil || !ok {
		return reconcile.Result{}, err
	}
	if why, refused, err := r.tenantRefusal(ctx, &gw, class); err != nil || refused {
		if err != nil {
			return reconcile.Result{}, err
		}
		log.Info("a tenant's Gateway gets no provider resources; removing any it has", "reason", why)
		return reconcile.Result{}, r.deprovision(ctx, log, &gw)
	}
	params, err := gwparams.Resolve(&gw, class, func(k types.NamespacedName) *shardgatev1alpha1.GatewayParameters {
		var p shardgatev1alpha1.GatewayParameters
		if err := r.Client.Get(ctx, k, &p); err != nil {
			return nil
		}
		return &p
	})
	if err != nil {
		// The Gateway is Accepted=False (InvalidParameters); provision
		// nothing from guessed settings and keep what exists. A
		// GatewayParameters event brings the Gateway back.
		log.V(1).Info("parameters do not resolve; not provisioning", "reason", err.Error())
		return reconcile.Result{}, nil
	}

	cert, requeue, err := r.clientCert(ctx, &gw)
	if err != nil {
		return reconcile.Result{}, err
	}
	objs, err := infra.Build(&gw, params, r.Options, cert)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("build the objects of Gateway %s: %w", req.NamespacedName, err)
	}
	if replaced, err := r.adoptSelector(ctx, log, &gw, objs); err != nil || replaced {
		// A replaced Deployment is created anew once the deletion is seen.
		return reconcile.Result{RequeueAfter: time.Second}, err
	}
	for _, desired := range objs.All() {
		if err := r.ensure(ctx, log, &gw, desired); err != nil {
			return reconcile.Result{}, err
		}
	}
	wait, err := r.removeAbsent(ctx, log, &gw, objs)
	if err != nil {
		return reconcile.Result{}, err
	}
	if wait && (requeue == 0 || requeue > 5*time.Second) {
		requeue = 5 * time.Second
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// tenantRefusal says why gw gets no provider resources, if it does not: it
// lives in a tenant's namespace, or its class takes its GatewayParameters
// from one (a Gateway's own parametersRef is in its own namespace). A
// namespace that cannot be read counts as a tenant's, except that an error
// other than NotFound is returned, to be retried.
func (r *InfraReconciler) tenantRefusal(ctx context.Context, gw *gatewayv1.Gateway, class *gatewayv1.GatewayClass) (string, bool, error) {
	check := func(name string) (string, bool, error) {
		var ns corev1.Namespace
		if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, &ns); err != nil {
			if !apierrors.IsNotFound(err) {
				return "", false, fmt.Errorf("read namespace %s: %w", name, err)
			}
			why, tenant := r.Tenancy.Policy().TenantNamespace(name, nil)
			return why, tenant, nil
		}
		why, tenant := r.Tenancy.Policy().TenantNamespace(name, &ns)
		return why, tenant, nil
	}
	if why, tenant, err := check(gw.Namespace); err != nil || tenant {
		return why, tenant, err
	}
	key, ok, err := gwparams.Key(gw, class)
	if err != nil || !ok || key.Namespace == gw.Namespace {
		// A reference that cannot name parameters is refused later
		// (gwparams.Resolve).
		return "", false, nil
	}
	why, tenant, err := check(key.Namespace)
	if tenant {
		why = fmt.Sprintf("GatewayClass %s takes its GatewayParameters from %s: %s", class.Name, key, why)
	}
	return why, tenant, err
}

// deprovision deletes the objects provisioned for gw that gw controls (by
// UID, so an object of the same name someone else controls is left
// alone): the client certificate Secret, the Service with its addresses,
// the Deployment or DaemonSet, the PodDisruptionBudget, the bootstrap and
// the ServiceAccount. It reads through
// the cache only: shardgate may read single objects only in the shard
// namespaces (the chart's Roles), and a tenant's Gateway elsewhere never
// had any. A delete RBAC forbids is logged, not retried: the Gateway's
// config has left xDS already, so what stays serves nothing.
func (r *InfraReconciler) deprovision(ctx context.Context, log logr.Logger, gw *gatewayv1.Gateway) error {
	objs, err := infra.Build(gw, nil, r.Options, infra.ClientCert{})
	if err != nil {
		return fmt.Errorf("name the objects of Gateway %s/%s: %w", gw.Namespace, gw.Name, err)
	}
	// Whatever shape it had: the objects of the default shape and the
	// others (a DaemonSet, a PodDisruptionBudget).
	all := append(objs.All(), objs.Absent()...)
	// The certificate first: it is the one a tenant must never keep.
	slices.SortStableFunc(all, func(a, b client.Object) int {
		_, sa := a.(*corev1.Secret)
		_, sb := b.(*corev1.Secret)
		switch {
		case sa && !sb:
			return -1
		case sb && !sa:
			return 1
		}
		return 0
	})
	for _, desired := range all {
		existing, err := newLike(desired)
		if err != nil {
			return err
		}
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), existing); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("read %T %s/%s: %w", desired, desired.GetNamespace(), desired.GetName(), err)
		}
		if !infra.ControlledBy(existing, string(gw.UID)) {
			continue
		}
		uid := existing.GetUID()
		err = r.Client.Delete(ctx, existing, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if apierrors.IsForbidden(err) {
			log.Error(err, "not allowed to delete an object provisioned for a tenant's Gateway; it stays until the Gateway is deleted",
				"kind", fmt.Sprintf("%T", existing), "name", existing.GetName())
			continue
		}
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete %T %s/%s: %w", existing, existing.GetNamespace(), existing.GetName(), err)
		}
		log.Info("deleted an object provisioned for a tenant's Gateway", "kind", fmt.Sprintf("%T", existing), "name", existing.GetName())
	}
	return nil
}

// allGateways lists every Gateway.
func (r *InfraReconciler) allGateways(ctx context.Context, _ client.Object) []reconcile.Request {
	var gws gatewayv1.GatewayList
	if err := r.Client.List(ctx, &gws); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(gws.Items))
	for i := range gws.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&gws.Items[i])})
	}
	return out
}

// namespaceGateways maps a Namespace to the Gateways in it and to those
// whose class takes its GatewayParameters from it.
func (r *InfraReconciler) namespaceGateways(ctx context.Context, o client.Object) []reconcile.Request {
	var gws gatewayv1.GatewayList
	var classes gatewayv1.GatewayClassList
	if err := r.Client.List(ctx, &gws); err != nil {
		return nil
	}
	if err := r.Client.List(ctx, &classes); err != nil {
		return nil
	}
	from := map[string]bool{}
	for i := range classes.Items {
		if key, ok, _ := gwparams.ClassKey(&classes.Items[i]); ok && key.Namespace == o.GetName() {
			from[classes.Items[i].Name] = true
		}
	}
	var out []reconcile.Request
	for i := range gws.Items {
		gw := &gws.Items[i]
		if gw.Namespace == o.GetName() || from[string(gw.Spec.GatewayClassName)] {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(gw)})
		}
	}
	return out
}

// get reads obj's kind and name into a new object: from the cache, then,
// when absent there (the cache holds only objects labelled
// shardgate.io/gateway), from the apiserver. nil when neither has it.
func (r *InfraReconciler) get(ctx context.Context, like client.Object) (client.Object, error) {
	existing, err := newLike(like)
	if err != nil {
		return nil, err
	}
	key := client.ObjectKeyFromObject(like)
	err = r.Client.Get(ctx, key, existing)
	if apierrors.IsNotFound(err) && r.APIReader != nil {
		err = r.APIReader.Get(ctx, key, existing)
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s %s: %w", like.GetObjectKind().GroupVersionKind().Kind, key, err)
	}
	return existing, nil
}

// adoptSelector settles the objects with the selector of the Gateway's
// existing Deployment, which is immutable (infra.AdoptSelector). On
// SelectorReplace it deletes the Deployment, orphaning its ReplicaSets so
// the pods keep serving, and replaced is true: the next reconcile creates
// the Deployment anew, and it adopts them.
func (r *InfraReconciler) adoptSelector(ctx context.Context, log logr.Logger, gw *gatewayv1.Gateway, objs *infra.Objects) (replaced bool, err error) {
	if objs.Deployment == nil {
		return false, nil
	}
	obj, err := r.get(ctx, objs.Deployment)
	if err != nil || obj == nil {
		return false, err
	}
	existing := obj.(*appsv1.Deployment)
	if !infra.ControlledBy(existing, string(gw.UID)) {
		return false, nil
	}
	if existing.DeletionTimestamp != nil {
		return true, nil
	}
	step, err := infra.AdoptSelector(objs, existing)
	if err != nil || step != infra.SelectorReplace {
		return false, err
	}
	log.Info("the Envoy pods no longer match the Deployment's immutable selector; replacing the Deployment, keeping its pods",
		"deployment", existing.Name, "selector", existing.Spec.Selector.MatchLabels)
	uid := existing.UID
	if err := r.Client.Delete(ctx, existing, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationOrphan)); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("replace Deployment %s/%s: %w", existing.Namespace, existing.Name, err)
	}
	return true, nil
}

// removeAbsent deletes the objects the Gateway controls that its
// parameters no longer want. The workload of the other kind goes only
// once the wanted one has an available pod (or is a Deployment of 0
// replicas), so that switching kind keeps Envoy serving; wait says one is
// still kept. DaemonSets and PodDisruptionBudgets are looked up in the
// cache alone: no version created them without the label it selects on.
func (r *InfraReconciler) removeAbsent(ctx context.Context, log logr.Logger, gw *gatewayv1.Gateway, objs *infra.Objects) (wait bool, err error) {
	for _, absent := range objs.Absent() {
		var existing client.Object
		if _, ok := absent.(*appsv1.Deployment); ok {
			existing, err = r.get(ctx, absent)
		} else {
			existing, err = newLike(absent)
			if err == nil {
				err = r.Client.Get(ctx, client.ObjectKeyFromObject(absent), existing)
				if apierrors.IsNotFound(err) {
					existing, err = nil, nil
				}
			}
		}
		if err != nil {
			return false, fmt.Errorf("get %s %s: %w", absent.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(absent), err)
		}
		if existing == nil || !infra.ControlledBy(existing, string(gw.UID)) || existing.GetDeletionTimestamp() != nil {
			continue
		}
		if _, isPDB := existing.(*policyv1.PodDisruptionBudget); !isPDB {
			ready, err := r.available(ctx, objs.Workload())
			if err != nil {
				return false, err
			}
			if !ready {
				wait = true
				continue
			}
		}
		kind := absent.GetObjectKind().GroupVersionKind().Kind
		log.Info("deleting an Envoy object the parameters no longer want", "kind", kind, "name", existing.GetName())
		uid := existing.GetUID()
		if err := r.Client.Delete(ctx, existing, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("delete %s %s/%s: %w", kind, existing.GetNamespace(), existing.GetName(), err)
		}
	}
	return wait, nil
}

// available says whether the wanted workload, as stored, has an available
// pod, or is a Deployment scaled to zero on purpose.
func (r *InfraReconciler) available(ctx context.Context, workload client.Object) (bool, error) {
	obj, err := r.get(ctx, workload)
	if err != nil || obj == nil {
		return false, err
	}
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return w.Status.ObservedGeneration >= w.Generation &&
			(w.Status.AvailableReplicas > 0 || (w.Spec.Replicas != nil && *w.Spec.Replicas == 0)), nil
	case *appsv1.DaemonSet:
		// A DaemonSet no node admits runs nothing: the old workload stays.
		return w.Status.ObservedGeneration >= w.Generation && w.Status.NumberAvailable > 0, nil
	}
	return false, nil
}

// ourClass reads the GatewayClass and says whether it is ours.
func (r *InfraReconciler) ourClass(ctx context.Context, name string) (*gatewayv1.GatewayClass, bool, error) {
	var class gatewayv1.GatewayClass
	if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, &class); err != nil {
		return nil, false, client.IgnoreNotFound(err)
	}
	return &class, string(class.Spec.ControllerName) == r.ControllerName, nil
}

// clientCert keeps the Gateway's client certificate: the existing one
// unless NeedsReissue, else a new one from the CA. requeue is when the kept
// certificate becomes due (capped at a day).
func (r *InfraReconciler) clientCert(ctx context.Context, gw *gatewayv1.Gateway) (infra.ClientCert, time.Duration, error) {
	ca, err := r.ca(ctx)
	if err != nil {
		return infra.ClientCert{}, 0, err
	}
	key := types.NamespacedName{Namespace: gw.Namespace, Name: infra.ClientCertName(gw.Name)}
	now := r.now()
	keep := func(reader client.Reader) (infra.ClientCert, time.Duration, bool, error) {
		var existing corev1.Secret
		if err := reader.Get(ctx, key, &existing); err != nil {
			return infra.ClientCert{}, 0, false, client.IgnoreNotFound(err)
		}
		if !infra.ControlledBy(&existing, string(gw.UID)) || infra.NeedsReissue(&existing, ca.CertPEM(), now) {
			return infra.ClientCert{}, 0, false, nil
		}
		requeue := 24 * time.Hour
		if at, ok := infra.ReissueAt(&existing); ok && at.Sub(now) < requeue {
			requeue = max(at.Sub(now), time.Second)
		}
		return infra.ClientCert{Cert: existing.Data[pki.KeyCert], Key: existing.Data[pki.KeyKey], CA: existing.Data[pki.KeyCA]}, requeue, true, nil
	}
	cert, requeue, ok, err := keep(r.Client)
	if err == nil && !ok {
		var live client.Reader = r.Client
		if r.APIReader != nil {
			live = r.APIReader
		}
		cert, requeue, ok, err = keep(live)
	}
	if err != nil || ok {
		return cert, requeue, err
	}
	certPEM, keyPEM, err := ca.IssueGateway(types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name})
	if err != nil {
		return infra.ClientCert{}, 0, err
	}
	r.Log.Info("issued xDS client certificate", "gateway", key.Namespace+"/"+gw.Name, "secret", key.Name)
	return infra.ClientCert{Cert: certPEM, Key: keyPEM, CA: ca.CertPEM()}, 24 * time.Hour, nil
}

// ensure applies desired unless the cached object already matches it. An
// object of the same name controlled by something else (for example a
// Gateway of the same name that was deleted and whose objects the garbage
// collector has not removed yet) is left alone; its deletion brings the
// Gateway back here.
func (r *InfraReconciler) ensure(ctx context.Context, log logr.Logger, gw *gatewayv1.Gateway, desired client.Object) error {
	existing, err := newLike(desired)
	if err != nil {
		return err
	}
	err = r.Client.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	if apierrors.IsNotFound(err) && r.APIReader != nil {
		// The cache holds only Deployments and ServiceAccounts with our
		// labels: one of the name without them is found only by asking
		// the apiserver. (ConfigMaps are all cached, but without our
		// labels only their ca.crt: such a one fails the checks below.)
		err = r.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	}
	switch {
	case apierrors.IsNotFound(err):
		return write(ctx, r.Client, r.live, desired, nil)
	case err != nil:
		return err
	case !infra.ControlledBy(existing, string(gw.UID)):
		log.Info("an object of the provisioned name is controlled by something else; leaving it alone",
			"kind", desired.GetObjectKind().GroupVersionKind().Kind, "name", desired.GetName())
		return nil
	case infra.UpToDate(existing, desired):
		return nil
	}
	return write(ctx, r.Client, r.live, desired, existing)
}

func newLike(obj client.Object) (client.Object, error) {
	switch obj.(type) {
	case *corev1.ServiceAccount:
		return &corev1.ServiceAccount{}, nil
	case *corev1.Secret:
		return &corev1.Secret{}, nil
	case *corev1.ConfigMap:
		return &corev1.ConfigMap{}, nil
	case *corev1.Service:
		return &corev1.Service{}, nil
	case *appsv1.Deployment:
		return &appsv1.Deployment{}, nil
	case *appsv1.DaemonSet:
		return &appsv1.DaemonSet{}, nil
	case *policyv1.PodDisruptionBudget:
		return &policyv1.PodDisruptionBudget{}, nil
	}
	return nil, fmt.Errorf("infra: unexpected object %T", obj)
}

// classGateways maps a GatewayClass to its Gateways.
func (r *InfraReconciler) classGateways(ctx context.Context, o client.Object) []reconcile.Request {
	var gws gatewayv1.GatewayList
	if err := r.Client.List(ctx, &gws); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range gws.Items {
		if string(gws.Items[i].Spec.GatewayClassName) == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&gws.Items[i])})
		}
	}
	return out
}

// paramsGateways maps a GatewayParameters to the Gateways it applies to,
// directly or as their class's default.
func (r *InfraReconciler) paramsGateways(ctx context.Context, o client.Object) []reconcile.Request {
	var gws gatewayv1.GatewayList
	var classes gatewayv1.GatewayClassList
	if err := r.Client.List(ctx, &gws); err != nil {
		return nil
	}
	if err := r.Client.List(ctx, &classes); err != nil {
		return nil
	}
	byName := map[string]*gatewayv1.GatewayClass{}
	for i := range classes.Items {
		byName[classes.Items[i].Name] = &classes.Items[i]
	}
	target := client.ObjectKeyFromObject(o)
	var out []reconcile.Request
	for i := range gws.Items {
		gw := &gws.Items[i]
		if key, ok, err := gwparams.Key(gw, byName[string(gw.Spec.GatewayClassName)]); err == nil && ok && key == target {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(gw)})
		}
	}
	return out
}
