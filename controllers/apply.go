package controllers

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/controller-runtime/pkg/client"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// upgradeAttempts bounds how often create re-reads an object another
// writer changed while its fields were handed to the apply entry.
const upgradeAttempts = 5

// write makes desired, an object shardgate controls, exist as it is.
// existing is what the caller read under desired's name and found to be
// ours, or nil when it found none.
//
// A name the caller found free is created, never applied: its cache may
// not have seen an object someone else made under the name yet, and a
// forced apply would take that object over. The apiserver refuses to
// create a name that exists (an AlreadyExists error); the caller's next
// pass sees the object and judges it. An existing object is applied with
// its UID, so an object deleted and made again by someone else since the
// caller read it is refused too (metadata.uid is immutable).
//
// live reads the apiserver directly; create uses it when it must read the
// object's managed fields again.
func write(ctx context.Context, c client.Client, live client.Reader, desired, existing client.Object) error {
	if existing == nil {
		return create(ctx, c, live, desired)
	}
	desired.SetUID(existing.GetUID())
	return apply(ctx, c, desired)
}

// create creates obj with field owner "shardgate" and then hands the
// fields the Create recorded to shardgate's apply entry. A Create records
// its fields under an Update entry; a later apply that drops one of them
// (a label, a port) would leave it in place while that entry holds it.
func create(ctx context.Context, c client.Client, live client.Reader, obj client.Object) error {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	key := client.ObjectKeyFromObject(obj)
	if err := c.Create(ctx, obj, client.FieldOwner(shardgatev1alpha1.FieldOwner)); err != nil {
		return fmt.Errorf("create %s %s: %w", kind, key, err)
	}
	owner := sets.New(shardgatev1alpha1.FieldOwner)
	for attempt := 1; ; attempt++ {
		patch, err := csaupgrade.UpgradeManagedFieldsPatch(obj, owner, shardgatev1alpha1.FieldOwner)
		if err != nil {
			return fmt.Errorf("hand the fields of %s %s to apply: %w", kind, key, err)
		}
		if patch == nil {
			return nil
		}
		// The patch tests the resourceVersion it was made from: another
		// writer (MetalLB writing a Service's status) makes it fail, and
		// it is made again from a fresh read.
		err = c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch))
		if err == nil {
			return nil
		}
		if attempt == upgradeAttempts || !(apierrors.IsConflict(err) || apierrors.IsInvalid(err)) {
			return fmt.Errorf("hand the fields of %s %s to apply: %w", kind, key, err)
		}
		if err := live.Get(ctx, key, obj); err != nil {
			return fmt.Errorf("read %s %s again: %w", kind, key, err)
		}
	}
}

// apply writes obj with server-side apply as field owner "shardgate". obj
// must carry its TypeMeta. Status is never applied through the main resource.
func apply(ctx context.Context, c client.Client, obj client.Object) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("apply %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	delete(u, "status")
	if m, ok := u["metadata"].(map[string]any); ok {
		delete(m, "creationTimestamp")
	}
	ac := client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u})
	if err := c.Apply(ctx, ac, client.FieldOwner(shardgatev1alpha1.FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
