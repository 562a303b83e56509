package controllers

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/akash"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
	shardgateevents "github.com/shardgate/shardgate/internal/events"
)

// ReasonRetryAsAnnotation is the Event on a ProviderHost whose route
// carries its retry policy in the annotation shardgate.io/retry, because
// the cluster's HTTPRoute CRD has no rules[].retry (emitted once per
// process).
const ReasonRetryAsAnnotation = "RetryAsAnnotation"

// How generated routes express retries (retryMode).
const (
	retryUnknown int32 = iota
	retryField
	retryAnnotation
)

// retryState is what the ProviderHost controller knows of the HTTPRoute
// CRD's rules[].retry: unknown until it first writes a route with a retry
// policy, then found by a dry-run create (nothing is stored), and set to
// retryAnnotation when a write shows the field dropped (the CRD changed).
type retryState struct {
	mode      atomic.Int32
	announced atomic.Bool
}

// retryKept says whether the cluster's HTTPRoute CRD keeps rules[].retry,
// asking the apiserver once: a dry-run create, with unknown fields
// ignored, of a route with a retry policy in ns. If the dry run fails, it
// answers true (and logs why): the write path then finds out.
func (r *ProviderHostReconciler) retryKept(ctx context.Context, ns string) (bool, error) {
	switch r.retry.mode.Load() {
	case retryField:
		return true, nil
	case retryAnnotation:
		return false, nil
	}
	probe := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "shardgate-retry-probe-", Namespace: ns},
		Spec: gatewayv1.HTTPRouteSpec{Rules: []gatewayv1.HTTPRouteRule{{
			BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
				Name: "probe", Port: new(gatewayv1.PortNumber(80))}}}},
			Retry: &gatewayv1.HTTPRouteRetry{Attempts: new(1)},
		}}},
	}
	if err := r.Client.Create(ctx, probe, client.DryRunAll, client.FieldValidation(metav1.FieldValidationIgnore)); err != nil {
		// An admission webhook that cannot take dry runs, say: write the
		// field, and let the read-back or a refused write tell.
		r.Log.Error(fmt.Errorf("probe whether HTTPRoutes keep rules[].retry (dry-run create in %s): %w", ns, err),
			"writing rules[].retry; a route that reads back without it moves the policy to the annotation "+shardgatev1alpha1.AnnotationRetry)
		r.retry.mode.CompareAndSwap(retryUnknown, retryField)
		return true, nil
	}
	kept := len(probe.Spec.Rules) == 1 && probe.Spec.Rules[0].Retry != nil
	if kept {
		r.retry.mode.CompareAndSwap(retryUnknown, retryField)
	} else {
		r.retry.mode.Store(retryAnnotation)
	}
	return kept, nil
}

// retryDropped: the CRD drops rules[].retry, as a write just showed.
func (r *ProviderHostReconciler) retryDropped() { r.retry.mode.Store(retryAnnotation) }

// desiredRetryForm is desired as it must be written: with its retry policy
// in the annotation when the CRD has no rules[].retry (and the Event and
// log line, once, saying so).
func (r *ProviderHostReconciler) desiredRetryForm(ctx context.Context, ph *akashv1.ProviderHost, desired *gatewayv1.HTTPRoute) (*gatewayv1.HTTPRoute, error) {
	if !hasRetry(desired) {
		return desired, nil
	}
	kept, err := r.retryKept(ctx, desired.Namespace)
	if err != nil {
		return nil, err
	}
	if kept {
		return desired, nil
	}
	if r.retry.announced.CompareAndSwap(false, true) {
		msg := "the cluster's HTTPRoute CRD has no rules[].retry (a Standard-channel Gateway API CRD older than v1.7): generated routes carry their retry policy in the annotation " +
			shardgatev1alpha1.AnnotationRetry + ", which shardgate honours"
		r.Log.Info(msg)
		r.event(ph, corev1.EventTypeNormal, ReasonRetryAsAnnotation, shardgateevents.ActionRoute, msg)
	}
	return akash.RetryAsAnnotation(desired), nil
}

func hasRetry(rt *gatewayv1.HTTPRoute) bool {
	for i := range rt.Spec.Rules {
		if rt.Spec.Rules[i].Retry != nil {
			return true
		}
	}
	return false
}

// retryPruned: existing is what desired (written with rules[].retry) reads
// back as on a CRD without the field.
func retryPruned(existing, desired *gatewayv1.HTTPRoute) bool {
	return hasRetry(desired) && !hasRetry(existing) && existing.Annotations[shardgatev1alpha1.AnnotationRetry] == "" &&
		akash.HostKind.RouteUpToDate(existing, akash.WithoutRetry(desired))
}

// isRetrySchemaError: the apiserver refused a write because rules[].retry
// is not in the CRD's schema.
func isRetrySchemaError(err error) bool {
	s := err.Error()
	return strings.Contains(s, "retry") && (strings.Contains(s, "not declared in schema") || strings.Contains(s, "unknown field"))
}

// writeRoute writes desired (existing: the route read under its name, or
// nil) unless existing already is it, in the retry form the CRD keeps. A
// route that reads back without the retry field it was written with, or a
// write refused for that field, switches to the annotation form: one more
// write, never a loop.
func (r *ProviderHostReconciler) writeRoute(ctx context.Context, ph *akashv1.ProviderHost, desired, existing *gatewayv1.HTTPRoute) error {
	form, err := r.desiredRetryForm(ctx, ph, desired)
	if err != nil {
		return err
	}
	if existing != nil && akash.HostKind.RouteUpToDate(existing, form) {
		return nil
	}
	if existing != nil && form == desired && retryPruned(existing, desired) {
		r.retryDropped()
		if form, err = r.desiredRetryForm(ctx, ph, desired); err != nil {
			return err
		}
		if akash.HostKind.RouteUpToDate(existing, form) {
			return nil
		}
	}
	// write takes an interface: a nil *HTTPRoute must stay a nil one.
	var current client.Object
	if existing != nil {
		current = existing
	}
	err = write(ctx, r.Client, r.live, form, current)
	if err != nil && form == desired && isRetrySchemaError(err) {
		r.retryDropped()
		if form, err = r.desiredRetryForm(ctx, ph, desired); err != nil {
			return err
		}
		err = write(ctx, r.Client, r.live, form, current)
	}
	return err
}
