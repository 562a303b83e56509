/*
Copyright The shardgate Authors.
*/

package params

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

func TestResolve(t *testing.T) {
	stored := map[types.NamespacedName]*shardgatev1alpha1.GatewayParameters{
		{Namespace: "infra", Name: "own"}:      {ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "own"}},
		{Namespace: "defaults", Name: "class"}: {ObjectMeta: metav1.ObjectMeta{Namespace: "defaults", Name: "class"}},
	}
	get := func(k types.NamespacedName) *shardgatev1alpha1.GatewayParameters { return stored[k] }
	ns := gatewayv1.Namespace("defaults")
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "sg"}, Spec: gatewayv1.GatewayClassSpec{
		ParametersRef: &gatewayv1.ParametersReference{Group: "shardgate.io", Kind: "GatewayParameters", Name: "class", Namespace: &ns},
	}}
	classWith := func(f func(*gatewayv1.ParametersReference)) *gatewayv1.GatewayClass {
		c := class.DeepCopy()
		f(c.Spec.ParametersRef)
		return c
	}
	gw := func(group, kind, name string) *gatewayv1.Gateway {
		g := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "gw"}}
		if kind != "" {
			g.Spec.Infrastructure = &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{
				Group: gatewayv1.Group(group), Kind: gatewayv1.Kind(kind), Name: name,
			}}
		}
		return g
	}
	for _, tc := range []struct {
		name  string
		gw    *gatewayv1.Gateway
		class *gatewayv1.GatewayClass
		want  string // the GatewayParameters' name, "" for none
		err   string
	}{
		{name: "the Gateway's own", gw: gw("shardgate.io", "GatewayParameters", "own"), class: class, want: "own"},
		{name: "the class default", gw: gw("", "", ""), class: class, want: "class"},
		{name: "none", gw: gw("", "", ""), class: &gatewayv1.GatewayClass{}},
		{name: "no class", gw: gw("", "", "")},
		{name: "the Gateway's own is missing, no fallback", gw: gw("shardgate.io", "GatewayParameters", "gone"), class: class,
			err: "spec.infrastructure.parametersRef: GatewayParameters infra/gone not found"},
		{name: "the Gateway's own is another kind", gw: gw("", "ConfigMap", "own"), class: class,
			err: "spec.infrastructure.parametersRef must name a shardgate.io/GatewayParameters, not ConfigMap"},
		{name: "the Gateway's own is another group", gw: gw("invalid.io", "GatewayParameters", "own"), class: class,
			err: "spec.infrastructure.parametersRef must name a shardgate.io/GatewayParameters, not invalid.io/GatewayParameters"},
		{name: "the class's is missing", gw: gw("", "", ""), class: classWith(func(r *gatewayv1.ParametersReference) { r.Name = "gone" }),
			err: "GatewayClass sg spec.parametersRef: GatewayParameters defaults/gone not found"},
		{name: "the class's has no namespace", gw: gw("", "", ""), class: classWith(func(r *gatewayv1.ParametersReference) { r.Namespace = nil }),
			err: "GatewayClass sg spec.parametersRef has no namespace; GatewayParameters is namespaced"},
		{name: "the class's is another kind", gw: gw("", "", ""), class: classWith(func(r *gatewayv1.ParametersReference) { r.Group, r.Kind = "", "ConfigMap" }),
			err: "GatewayClass sg spec.parametersRef must name a shardgate.io/GatewayParameters, not ConfigMap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Resolve(tc.gw, tc.class, get)
			switch {
			case tc.err != "":
				if err == nil || err.Error() != tc.err || p != nil {
					t.Fatalf("got %v, %v; want error %q", p, err, tc.err)
				}
			case err != nil:
				t.Fatalf("error %v", err)
			case tc.want == "" && p != nil, tc.want != "" && (p == nil || p.Name != tc.want):
				t.Fatalf("got %v, want %q", p, tc.want)
			}
			// Key agrees with Resolve on which object and on the
			// reference errors.
			key, ok, kerr := Key(tc.gw, tc.class)
			if (kerr != nil) != (tc.err != "" && err != nil && !containsNotFound(tc.err)) {
				t.Errorf("Key error %v, Resolve error %v", kerr, err)
			}
			if p != nil && (!ok || key != (types.NamespacedName{Namespace: p.Namespace, Name: p.Name})) {
				t.Errorf("Key %v %v, resolved %s/%s", key, ok, p.Namespace, p.Name)
			}
		})
	}
}

func containsNotFound(s string) bool {
	return len(s) > len("not found") && s[len(s)-len("not found"):] == "not found"
}

// The class's own condition carries the resolver's message without the
// class's name (the condition is on the class).
func TestResolveClass(t *testing.T) {
	get := func(types.NamespacedName) *shardgatev1alpha1.GatewayParameters { return nil }
	ns := gatewayv1.Namespace("infra")
	c := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "sg"}, Spec: gatewayv1.GatewayClassSpec{
		ParametersRef: &gatewayv1.ParametersReference{Group: "shardgate.io", Kind: "GatewayParameters", Name: "nope", Namespace: &ns},
	}}
	if _, err := ResolveClass(c, get); err == nil || err.Error() != "spec.parametersRef: GatewayParameters infra/nope not found" {
		t.Errorf("ResolveClass: %v", err)
	}
	if p, err := ResolveClass(&gatewayv1.GatewayClass{}, get); p != nil || err != nil {
		t.Errorf("no reference: %v %v", p, err)
	}
}
