/*
Copyright The shardgate Authors.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The scheme wiring uses apimachinery directly rather than
// controller-runtime's scheme.Builder: that helper is deprecated, and an API
// package should stay cheap to import for clients and tools.

var (
	// GroupVersion is the API group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "shardgate.io", Version: "v1alpha1"}

	// SchemeBuilder collects the registrations made by each kind's init().
	SchemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})

	// AddToScheme adds this package's types to a runtime.Scheme, for managers
	// and clients.
	AddToScheme = SchemeBuilder.AddToScheme
)

// register adds objs to SchemeBuilder under GroupVersion.
func register(objs ...runtime.Object) {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, objs...)
		return nil
	})
}
