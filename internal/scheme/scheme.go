// Package scheme owns the one runtime.Scheme that the controller, the CLI
// and every test use, so that a type registered for one is registered for all.
package scheme

import (
	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gatewayv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	akashv2beta2 "github.com/shardgate/shardgate/internal/akash/v2beta2"
)

// New returns a scheme with the Kubernetes groups shardgate uses
// (kubernetesGroups), CRDs, the Gateway API
// (every served version), MetalLB's v1beta1 types, shardgate's own API and
// the Akash provider's objects that Akash mode reads.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range kubernetesGroups {
		utilruntime.Must(add(s))
	}
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(gatewayv1.Install(s))
	utilruntime.Must(gatewayv1beta1.Install(s))
	utilruntime.Must(gatewayv1alpha2.Install(s))
	utilruntime.Must(gatewayv1alpha3.Install(s))
	utilruntime.Must(metallbv1beta1.AddToScheme(s))
	utilruntime.Must(shardgatev1alpha1.AddToScheme(s))
	utilruntime.Must(akashv2beta2.AddToScheme(s))
	return s
}

// kubernetesGroups are the Kubernetes API groups shardgate's code and tests
// read or write with typed objects: not all of client-go's (some sixty
// group versions), whose registrations every scheme would otherwise hold.
// A typed object of another group gets "no kind is registered" from the
// client: add its group here first.
var kubernetesGroups = []func(*runtime.Scheme) error{
	corev1.AddToScheme,
	appsv1.AddToScheme,
	discoveryv1.AddToScheme,
	eventsv1.AddToScheme,
	policyv1.AddToScheme,
	coordinationv1.AddToScheme,
	authenticationv1.AddToScheme,
	authorizationv1.AddToScheme,
	rbacv1.AddToScheme,
	networkingv1.AddToScheme,
	admissionregistrationv1.AddToScheme,
}
