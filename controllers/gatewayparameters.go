package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	gwparams "github.com/shardgate/shardgate/internal/params"
	"github.com/shardgate/shardgate/internal/status"
	"github.com/shardgate/shardgate/sharding"
)

// GatewayParametersReconciler reports on each GatewayParameters whether its
// shard can serve tenants (condition Valid).
type GatewayParametersReconciler struct {
	Client         client.Client
	ControllerName string
	// Tenancy says where shards may live (nil: the safe defaults).
	Tenancy *Tenancy
	// Recorder, when set, gets a Warning Event on each Gateway refused as a
	// shard because of its namespace, when the Valid condition changes.
	Recorder events.EventRecorder

	// status writes every GatewayParameters status (internal/status).
	status *status.ObjectWriter[*shardgatev1alpha1.GatewayParameters]
}

// SetupWithManager registers the controller.
func (r *GatewayParametersReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.status = status.NewObjectWriter("GatewayParameters", mgr.GetClient(), mgr.GetAPIReader(),
		func() *shardgatev1alpha1.GatewayParameters { return &shardgatev1alpha1.GatewayParameters{} },
		status.ObjectWriterOptions{Workers: 2})
	if err := mgr.Add(r.status); err != nil {
		return fmt.Errorf("add GatewayParameters status writer: %w", err)
	}
	all := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list shardgatev1alpha1.GatewayParametersList
		if err := r.Client.List(ctx, &list); err != nil {
			return nil
		}
		out := make([]reconcile.Request, len(list.Items))
		for i := range list.Items {
			out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}}
		}
		return out
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("gatewayparameters").
		For(&shardgatev1alpha1.GatewayParameters{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&gatewayv1.Gateway{}, all, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&gatewayv1.GatewayClass{}, all, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A namespace's owner marking decides whether its Gateways may be shards.
		Watches(&corev1.Namespace{}, all, builder.WithPredicates(predicate.Or(predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Complete(r)
}

// Reconcile writes the Valid condition of one GatewayParameters.
func (r *GatewayParametersReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var p shardgatev1alpha1.GatewayParameters
	if err := r.Client.Get(ctx, req.NamespacedName, &p); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var classes gatewayv1.GatewayClassList
	var gws gatewayv1.GatewayList
	var params shardgatev1alpha1.GatewayParametersList
	var namespaces corev1.NamespaceList
	for _, l := range []client.ObjectList{&classes, &gws, &params, &namespaces} {
		if err := r.Client.List(ctx, l); err != nil {
			return reconcile.Result{}, fmt.Errorf("list: %w", err)
		}
	}
	placement := r.Tenancy.Placement(ptrs(namespaces.Items))
	conds := sharding.ValidCondition(r.ControllerName, ptrs(classes.Items), ptrs(gws.Items), ptrs(params.Items), placement)
	c, ok := conds[req.NamespacedName]
	// Valid is the one condition this controller owns: set (or remove)
	// it on the stored status, keeping the rest as it is.
	setValid := func(stored *shardgatev1alpha1.GatewayParameters) {
		if ok {
			meta.SetStatusCondition(&stored.Status.Conditions, c)
		} else {
			meta.RemoveStatusCondition(&stored.Status.Conditions, shardgatev1alpha1.ConditionValid)
		}
	}
	next := p.DeepCopy()
	setValid(next)
	if equality.Semantic.DeepEqual(next.Status, p.Status) {
		return reconcile.Result{}, nil
	}
	r.status.Write(&p, setValid)
	r.warnRefusedShards(ctx, ptrs(classes.Items), ptrs(gws.Items), ptrs(params.Items), placement, req.NamespacedName)
	return reconcile.Result{}, nil
}

// warnRefusedShards records a Warning Event on every Gateway using params
// that may not be a shard because of where it lives.
func (r *GatewayParametersReconciler) warnRefusedShards(ctx context.Context, classes []*gatewayv1.GatewayClass, gws []*gatewayv1.Gateway, params []*shardgatev1alpha1.GatewayParameters, placement sharding.Placement, key types.NamespacedName) {
	if r.Recorder == nil {
		return
	}
	_, problems := sharding.Discover(r.ControllerName, classes, gws, params, placement)
	for _, pr := range problems {
		if pr.Reason != sharding.ReasonShardInTenantNamespace && pr.Reason != sharding.ReasonShardNamespaceNotAllowed {
			continue
		}
		for _, gw := range gws {
			if gw.Namespace != pr.Gateway.Namespace || gw.Name != pr.Gateway.Name || !usesParameters(gw, key) {
				continue
			}
			r.Recorder.Eventf(gw, nil, corev1.EventTypeWarning, pr.Reason, "Shard", "%s", pr.Message)
		}
	}
}

// usesParameters: gw's own parametersRef names key (a class default is
// reported on the GatewayParameters only).
func usesParameters(gw *gatewayv1.Gateway, key types.NamespacedName) bool {
	own, ok, _ := gwparams.GatewayKey(gw)
	return ok && own == key
}
