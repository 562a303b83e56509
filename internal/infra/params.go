package infra

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// ParametersKey names the GatewayParameters that apply to gw: its
// spec.infrastructure.parametersRef (in the Gateway's namespace) when set,
// else the class's parametersRef. ok is false when neither references one.
// err reports a reference that cannot name a GatewayParameters (wrong group
// or kind, a class reference without a namespace).
func ParametersKey(gw *gatewayv1.Gateway, class *gatewayv1.GatewayClass) (key types.NamespacedName, ok bool, err error) {
	if gw.Spec.Infrastructure != nil && gw.Spec.Infrastructure.ParametersRef != nil {
		ref := gw.Spec.Infrastructure.ParametersRef
		if !isGatewayParameters(ref.Group, ref.Kind) {
			return key, false, fmt.Errorf("spec.infrastructure.parametersRef is %s/%s, not %s/GatewayParameters", ref.Group, ref.Kind, shardgatev1alpha1.GroupVersion.Group)
		}
		return types.NamespacedName{Namespace: gw.Namespace, Name: ref.Name}, true, nil
	}
	if class == nil || class.Spec.ParametersRef == nil {
		return key, false, nil
	}
	ref := class.Spec.ParametersRef
	if !isGatewayParameters(ref.Group, ref.Kind) {
		return key, false, fmt.Errorf("GatewayClass %s parametersRef is %s/%s, not %s/GatewayParameters", class.Name, ref.Group, ref.Kind, shardgatev1alpha1.GroupVersion.Group)
	}
	if ref.Namespace == nil || *ref.Namespace == "" {
		return key, false, fmt.Errorf("GatewayClass %s parametersRef has no namespace", class.Name)
	}
	return types.NamespacedName{Namespace: string(*ref.Namespace), Name: ref.Name}, true, nil
}

// ResolveParameters returns the GatewayParameters that apply to gw (nil
// when none is referenced), looking them up with get (nil when absent). A
// reference that does not resolve is an error: the Gateway is then
// Accepted=False (InvalidParameters) and nothing should be provisioned from
// guessed settings.
func ResolveParameters(gw *gatewayv1.Gateway, class *gatewayv1.GatewayClass, get func(types.NamespacedName) *shardgatev1alpha1.GatewayParameters) (*shardgatev1alpha1.GatewayParameters, error) {
	key, ok, err := ParametersKey(gw, class)
	if err != nil || !ok {
		return nil, err
	}
	p := get(key)
	if p == nil {
		return nil, fmt.Errorf("GatewayParameters %s not found", key)
	}
	return p, nil
}

func isGatewayParameters(group gatewayv1.Group, kind gatewayv1.Kind) bool {
	return string(group) == shardgatev1alpha1.GroupVersion.Group && kind == "GatewayParameters"
}
