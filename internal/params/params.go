/*
Copyright The shardgate Authors.
*/

package params

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// Kind is the kind a parametersRef must name (in group
// shardgatev1alpha1.GroupVersion.Group).
const Kind = "GatewayParameters"

// The fields a reference comes from, as the messages name them.
const (
	gatewayField = "spec.infrastructure.parametersRef"
	classField   = "spec.parametersRef"
)

// Get looks up a GatewayParameters by key: nil when there is none.
type Get func(types.NamespacedName) *shardgatev1alpha1.GatewayParameters

// GatewayKey names the GatewayParameters gw's own
// spec.infrastructure.parametersRef references, in gw's namespace. ok is
// false when gw has none; err says why the reference cannot name one.
func GatewayKey(gw *gatewayv1.Gateway) (key types.NamespacedName, ok bool, err error) {
	if gw == nil || gw.Spec.Infrastructure == nil || gw.Spec.Infrastructure.ParametersRef == nil {
		return key, false, nil
	}
	ref := gw.Spec.Infrastructure.ParametersRef
	if err := checkKind(gatewayField, ref.Group, ref.Kind); err != nil {
		return key, false, err
	}
	return types.NamespacedName{Namespace: gw.Namespace, Name: ref.Name}, true, nil
}

// ClassKey names the GatewayParameters class's spec.parametersRef
// references. ok is false when it has none; err says why the reference
// cannot name one (another kind, or no namespace).
func ClassKey(class *gatewayv1.GatewayClass) (key types.NamespacedName, ok bool, err error) {
	if class == nil || class.Spec.ParametersRef == nil {
		return key, false, nil
	}
	ref := class.Spec.ParametersRef
	if err := checkKind(classField, ref.Group, ref.Kind); err != nil {
		return key, false, err
	}
	if ref.Namespace == nil || *ref.Namespace == "" {
		return key, false, fmt.Errorf("%s has no namespace; %s is namespaced", classField, Kind)
	}
	return types.NamespacedName{Namespace: string(*ref.Namespace), Name: ref.Name}, true, nil
}

// Key names the GatewayParameters that apply to gw: its own reference when
// set, else its class's (class may be nil). ok is false when neither
// references one. An error about the class's reference names the class.
func Key(gw *gatewayv1.Gateway, class *gatewayv1.GatewayClass) (key types.NamespacedName, ok bool, err error) {
	if gw != nil && gw.Spec.Infrastructure != nil && gw.Spec.Infrastructure.ParametersRef != nil {
		return GatewayKey(gw)
	}
	key, ok, err = ClassKey(class)
	if err != nil {
		err = fmt.Errorf("GatewayClass %s %w", class.Name, err)
	}
	return key, ok, err
}

// ResolveGateway returns the GatewayParameters gw's own reference names:
// nil, nil when it has none; an error when the reference does not resolve.
func ResolveGateway(gw *gatewayv1.Gateway, get Get) (*shardgatev1alpha1.GatewayParameters, error) {
	key, ok, err := GatewayKey(gw)
	if err != nil || !ok {
		return nil, err
	}
	return lookup(gatewayField, key, get)
}

// ResolveClass returns the GatewayParameters class's reference names: nil,
// nil when it has none; an error when the reference does not resolve.
func ResolveClass(class *gatewayv1.GatewayClass, get Get) (*shardgatev1alpha1.GatewayParameters, error) {
	key, ok, err := ClassKey(class)
	if err != nil || !ok {
		return nil, err
	}
	return lookup(classField, key, get)
}

// Resolve returns the GatewayParameters that apply to gw (see Key): nil,
// nil when none is referenced. A reference that does not resolve is an
// error: the Gateway is then Accepted=False (InvalidParameters), and
// nothing should be provisioned from guessed settings.
func Resolve(gw *gatewayv1.Gateway, class *gatewayv1.GatewayClass, get Get) (*shardgatev1alpha1.GatewayParameters, error) {
	if gw != nil && gw.Spec.Infrastructure != nil && gw.Spec.Infrastructure.ParametersRef != nil {
		return ResolveGateway(gw, get)
	}
	p, err := ResolveClass(class, get)
	if err != nil {
		return nil, fmt.Errorf("GatewayClass %s %w", class.Name, err)
	}
	return p, nil
}

func checkKind(field string, group gatewayv1.Group, kind gatewayv1.Kind) error {
	if string(group) == shardgatev1alpha1.GroupVersion.Group && kind == Kind {
		return nil
	}
	gk := string(kind)
	if group != "" {
		gk = string(group) + "/" + gk
	}
	return fmt.Errorf("%s must name a %s/%s, not %s", field, shardgatev1alpha1.GroupVersion.Group, Kind, gk)
}

func lookup(field string, key types.NamespacedName, get Get) (*shardgatev1alpha1.GatewayParameters, error) {
	if p := get(key); p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("%s: %s %s not found", field, Kind, key)
}
