package controllers

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
//
// An apply whose answer shows fields still held by shardgate's Update
// entry (a create whose hand-over lost to another writer every time) hands
// them over and applies again: until then, a field the apply drops would
// stay.
func write(ctx context.Context, c client.Client, live client.Reader, desired, existing client.Object) error {
	if existing == nil {
		return create(ctx, c, live, desired)
	}
	desired.SetUID(existing.GetUID())
	applied, err := apply(ctx, c, desired)
	if err != nil || !heldByUpdate(applied) {
		return err
	}
	if err := handOver(ctx, c, live, applied); err != nil {
		return err
	}
	_, err = apply(ctx, c, desired)
	return err
}

// heldByUpdate: some of obj's fields are held by shardgate's Update entry
// of the main resource (not of status).
func heldByUpdate(obj client.Object) bool {
	for _, m := range obj.GetManagedFields() {
		if m.Manager == shardgatev1alpha1.FieldOwner && m.Operation == metav1.ManagedFieldsOperationUpdate && m.Subresource == "" {
			return true
		}
	}
	return false
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
	return handOver(ctx, c, live, obj)
}

// handOver moves the fields of shardgate's Update entry of obj (as last
// read or written) to its apply entry, re-reading obj through live when
// another writer changed it first, up to upgradeAttempts times.
func handOver(ctx context.Context, c client.Client, live client.Reader, obj client.Object) error {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	key := client.ObjectKeyFromObject(obj)
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

// apply writes obj with server-side apply as field owner "shardgate" and
// returns the object as the apiserver answered. obj must carry its
// TypeMeta. Status is never applied through the main resource.
func apply(ctx context.Context, c client.Client, obj client.Object) (*unstructured.Unstructured, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("apply %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	delete(u, "status")
	if m, ok := u["metadata"].(map[string]any); ok {
		delete(m, "creationTimestamp")
	}
	applied := &unstructured.Unstructured{Object: u}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied), client.FieldOwner(shardgatev1alpha1.FieldOwner), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("apply %s %s/%s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return applied, nil
}
