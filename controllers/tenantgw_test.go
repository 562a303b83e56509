package controllers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/tenancy"
)

// TestTenantNamespacesForTheTranslator: only the namespaces of Gateways and
// of classes' parameters are looked at; a marked one, and one the cache
// does not know, belong to a tenant; an unmarked one is the provider's.
func TestTenantNamespacesForTheTranslator(t *testing.T) {
	nsOf := func(name string, ann map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}}
	}
	namespaces := map[string]*corev1.Namespace{
		"provider":   nsOf("provider", nil),
		"tenant":     nsOf("tenant", map[string]string{tenancy.OwnerKey: "akash1bob"}),
		"params":     nsOf("params", map[string]string{tenancy.OwnerKey: "akash1bob"}),
		"unrelated":  nsOf("unrelated", map[string]string{tenancy.OwnerKey: "akash1alice"}),
		"class-prov": nsOf("class-prov", nil),
	}
	gw := func(ns string) *gatewayv1.Gateway {
		return &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw"}}
	}
	class := func(ns string) *gatewayv1.GatewayClass {
		return &gatewayv1.GatewayClass{Spec: gatewayv1.GatewayClassSpec{ParametersRef: &gatewayv1.ParametersReference{
			Group: "shardgate.io", Kind: "GatewayParameters", Name: "p", Namespace: new(gatewayv1.Namespace(ns))}}}
	}
	got := tenantNamespaces(tenancy.DefaultPolicy(), namespaces,
		[]*gatewayv1.Gateway{gw("provider"), gw("tenant"), gw("not-cached")},
		[]*gatewayv1.GatewayClass{class("params"), class("class-prov"), {}})
	want := map[string]string{"tenant": "owner marking", "not-cached": "not known yet", "params": "owner marking"}
	if len(got) != len(want) {
		t.Fatalf("tenantNamespaces = %v, want the keys of %v", got, want)
	}
	for ns, sub := range want {
		if !strings.Contains(got[ns], sub) {
			t.Errorf("%s: %q, want it to say %q", ns, got[ns], sub)
		}
	}
	if got := tenantNamespaces(tenancy.DefaultPolicy(), namespaces, []*gatewayv1.Gateway{gw("provider")}, nil); got != nil {
		t.Errorf("only provider namespaces: %v, want nil", got)
	}
}
