package controllers

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/addresses"
	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/infra"
	gwparams "github.com/shardgate/shardgate/internal/params"
)

// GatewayRuntimeSource is the RuntimeSource of Gateway addresses: for
// every Gateway of our classes, the addresses of its Envoy
// Service (status.loadBalancer) and, when there are none or a requested IP
// cannot be had, the Programmed reason AddressNotAssigned or
// AddressNotUsable (internal/addresses); and, for an Envoy DaemonSet that
// should run somewhere but has no available pod, NoResources
// (infra.DaemonSetUnavailable). It reads the informer cache, so it
// runs on every replica, like the translation it feeds. Changes to the
// Envoy Services' status and to IPAddressPools call Trigger.
type GatewayRuntimeSource struct {
	Client         client.Client
	ControllerName string
	// Trigger asks for a new translation (GatewayAPIReconciler.Trigger).
	Trigger func()
	Log     logr.Logger

	metallb bool
}

var _ RuntimeSource = (*GatewayRuntimeSource)(nil)

// SetupWithManager registers the watches that call Trigger. It needs no
// leadership.
func (s *GatewayRuntimeSource) SetupWithManager(mgr ctrl.Manager) error {
	if _, err := mgr.GetRESTMapper().RESTMapping(ipAddressPoolGK, metallbv1beta1.GroupVersion.Version); err == nil {
		s.metallb = true
	} else if meta.IsNoMatchError(err) {
		s.Log.Info("MetalLB's IPAddressPool CRD is not installed; requested Gateway addresses cannot be checked against pools")
	} else {
		return fmt.Errorf("look up IPAddressPool: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("gateway-runtime").
		Watches(&corev1.Service{}, handler.Funcs{
			CreateFunc: func(_ context.Context, e event.CreateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if isEnvoyService(e.Object) {
					s.trigger()
				}
			},
			UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				o, n := e.ObjectOld.(*corev1.Service), e.ObjectNew.(*corev1.Service)
				if isEnvoyService(n) && !equality.Semantic.DeepEqual(o.Status, n.Status) {
					s.trigger()
				}
			},
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if isEnvoyService(e.Object) {
					s.trigger()
				}
			},
		}).
		// A DaemonSet's available pods decide Programmed (Runtime).
		Watches(&appsv1.DaemonSet{}, handler.Funcs{
			CreateFunc: func(context.Context, event.CreateEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				s.trigger()
			},
			UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				o, n := e.ObjectOld.(*appsv1.DaemonSet), e.ObjectNew.(*appsv1.DaemonSet)
				if !equality.Semantic.DeepEqual(o.Status, n.Status) {
					s.trigger()
				}
			},
			DeleteFunc: func(context.Context, event.DeleteEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				s.trigger()
			},
		}).
		WithOptions(controller.Options{NeedLeaderElection: new(false)})
	if s.metallb {
		b = b.Watches(&metallbv1beta1.IPAddressPool{}, handler.Funcs{
			CreateFunc: func(context.Context, event.CreateEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				s.trigger()
			},
			UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				o, n := e.ObjectOld.(*metallbv1beta1.IPAddressPool), e.ObjectNew.(*metallbv1beta1.IPAddressPool)
				if !equality.Semantic.DeepEqual(o.Spec, n.Spec) {
					s.trigger()
				}
			},
			DeleteFunc: func(context.Context, event.DeleteEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				s.trigger()
			},
		})
	}
	// Nothing is ever queued: the handlers only call Trigger.
	return b.Complete(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}))
}

func (s *GatewayRuntimeSource) trigger() {
	if s.Trigger != nil {
		s.Trigger()
	}
}

// isEnvoyService: o carries shardgate's labels of an Envoy Service, those
// of this version (shardgate.io/gateway) or of earlier ones.
func isEnvoyService(o client.Object) bool {
	l := o.GetLabels()
	if _, ok := l[infra.LabelOwnGateway]; ok {
		return true
	}
	return l[infra.LabelManagedBy] == infra.LabelManagedByValue && l[infra.LabelName] == infra.LabelNameValue
}

// Runtime computes every Gateway's address facts from the cache.
func (s *GatewayRuntimeSource) Runtime() map[types.NamespacedName]gatewayapi.GatewayRuntime {
	ctx := context.Background()
	out := map[types.NamespacedName]gatewayapi.GatewayRuntime{}
	nocopy := client.UnsafeDisableDeepCopy
	var (
		classes gatewayv1.GatewayClassList
		gws     gatewayv1.GatewayList
		params  shardgatev1alpha1.GatewayParametersList
		pools   metallbv1beta1.IPAddressPoolList
	)
	for _, l := range []client.ObjectList{&classes, &gws, &params} {
		if err := s.Client.List(ctx, l, nocopy); err != nil {
			s.Log.Error(err, "list for Gateway runtime")
			return out
		}
	}
	checkPools := s.metallb
	if checkPools {
		if err := s.Client.List(ctx, &pools, nocopy); err != nil {
			s.Log.Error(err, "list IPAddressPools for Gateway runtime")
			checkPools = false
		}
	}
	ours := map[string]*gatewayv1.GatewayClass{}
	for i := range classes.Items {
		if string(classes.Items[i].Spec.ControllerName) == s.ControllerName {
			ours[classes.Items[i].Name] = &classes.Items[i]
		}
	}
	paramsByKey := map[types.NamespacedName]*shardgatev1alpha1.GatewayParameters{}
	for i := range params.Items {
		paramsByKey[client.ObjectKeyFromObject(&params.Items[i])] = &params.Items[i]
	}
	for i := range gws.Items {
		gw := &gws.Items[i]
		class := ours[string(gw.Spec.GatewayClassName)]
		if class == nil {
			continue
		}
		// Parameters that do not resolve make the Gateway not Accepted;
		// the addresses are then read without a pool.
		p, _ := gwparams.Resolve(gw, class, func(k types.NamespacedName) *shardgatev1alpha1.GatewayParameters { return paramsByKey[k] })
		// The Envoy Service by its name: a lookup, where a list by label
		// would walk every Service in the cache.
		svc := &corev1.Service{}
		switch err := s.Client.Get(ctx, types.NamespacedName{Namespace: gw.Namespace, Name: infra.Name(gw.Name)}, svc); {
		case apierrors.IsNotFound(err):
			svc = nil
		case err != nil:
			s.Log.Error(err, "get Envoy Service for Gateway runtime", "gateway", client.ObjectKeyFromObject(gw))
			svc = nil
		case !isEnvoyService(svc) || !infra.ControlledBy(svc, string(gw.UID)):
			svc = nil
		}
		st := addresses.GatewayAddresses(gw, p, svc, pools.Items, checkPools)
		if st.Reason == "" && infra.Kind(p) == shardgatev1alpha1.EnvoyKindDaemonSet {
			// An address alone does not make a DaemonSet that runs no pod
			// Programmed.
			ds := &appsv1.DaemonSet{}
			if err := s.Client.Get(ctx, types.NamespacedName{Namespace: gw.Namespace, Name: infra.Name(gw.Name)}, ds); err == nil && infra.ControlledBy(ds, string(gw.UID)) {
				if msg := infra.DaemonSetUnavailable(ds); msg != "" {
					st.Reason, st.Message = infra.ReasonNoResources, msg
				}
			}
		}
		out[client.ObjectKeyFromObject(gw)] = gatewayapi.GatewayRuntime{
			Addresses:      st.Addresses,
			AddressReason:  st.Reason,
			AddressMessage: st.Message,
		}
	}
	return out
}
