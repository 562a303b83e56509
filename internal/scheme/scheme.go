// Package scheme owns the one runtime.Scheme that the controller, the CLI
// and every test use, so that a type registered for one is registered for all.
package scheme

import (
	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gatewayv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	akashv2beta2 "github.com/shardgate/shardgate/internal/akash/v2beta2"
)

// New returns a scheme with the Kubernetes core types, CRDs, the Gateway API
// (every served version), MetalLB's v1beta1 types, shardgate's own API and
// the Akash provider's objects that Akash mode reads.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
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
