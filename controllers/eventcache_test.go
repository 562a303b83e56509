package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// The Event cache holds only Events about Services, without managedFields.
func TestEventCacheOptions(t *testing.T) {
	opts := eventCacheOptions(nil, nil)
	var by cache.ByObject
	ok := false
	for o, b := range opts.ByObject {
		if _, isEvent := o.(*corev1.Event); isEvent {
			by, ok = b, true
		}
	}
	if !ok || by.Field == nil || by.Field.String() != "involvedObject.kind=Service" {
		t.Fatalf("Events are not selected by involvedObject.kind=Service: %+v", by)
	}
	got, err := opts.DefaultTransform(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "metallb-controller"}}}, Reason: "IPAllocated"})
	if err != nil {
		t.Fatal(err)
	}
	if e := got.(*corev1.Event); e.ManagedFields != nil || e.Reason != "IPAllocated" {
		t.Fatalf("cached Event: managedFields %v, reason %q", e.ManagedFields, e.Reason)
	}
}
