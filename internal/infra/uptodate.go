package infra

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ControlledBy says whether obj's controller reference names the object
// with uid.
func ControlledBy(obj metav1.Object, uid string) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && string(ref.UID) == uid
}

// UpToDate says whether existing (as read from the apiserver or the cache)
// already has every field desired (as built here) sets, so that applying
// desired would change nothing of ours:
//   - the desired-hash annotations are equal (a field the builder stopped
//     setting changes the hash);
//   - desired's labels, annotations and owner references are present with
//     the same values;
//   - every other field desired sets (spec, data, type, ...) has the same
//     value in existing. Fields desired leaves unset (the apiserver's
//     defaults, for example a Service's clusterIP and nodePorts) are not
//     compared; lists must have the same length and are compared element
//     by element the same way.
//
// Status, TypeMeta and server-set metadata are ignored.
func UpToDate(existing, desired client.Object) bool {
	if existing == nil || desired == nil {
		return false
	}
	if existing.GetAnnotations()[AnnotationDesiredHash] != desired.GetAnnotations()[AnnotationDesiredHash] {
		return false
	}
	if !subsetStrings(desired.GetLabels(), existing.GetLabels()) || !subsetStrings(desired.GetAnnotations(), existing.GetAnnotations()) {
		return false
	}
	for _, want := range desired.GetOwnerReferences() {
		found := false
		for _, got := range existing.GetOwnerReferences() {
			if reflect.DeepEqual(want, got) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	d, err := runtime.DefaultUnstructuredConverter.ToUnstructured(desired)
	if err != nil {
		return false
	}
	e, err := runtime.DefaultUnstructuredConverter.ToUnstructured(existing)
	if err != nil {
		return false
	}
	for k, v := range d {
		switch k {
		case "metadata", "status", "apiVersion", "kind":
			continue
		}
		if !subset(v, e[k]) {
			return false
		}
	}
	return true
}

func subsetStrings(want, got map[string]string) bool {
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			return false
		}
	}
	return true
}

// subset says whether got has every value want sets.
func subset(want, got any) bool {
	switch w := want.(type) {
	case nil:
		return true
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return len(w) == 0 && got == nil
		}
		for k, v := range w {
			if !subset(v, g[k]) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok {
			return len(w) == 0 && got == nil
		}
		if len(w) != len(g) {
			return false
		}
		for i := range w {
			if !subset(w[i], g[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(want, got)
	}
}
