/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// TestShardRefusals: a Gateway the controller refused as a shard (its shard
// parameters live in a tenant's namespace, or outside shardNamespaces) is
// not Accepted, serves nothing, and accepts no route; the incremental
// Translator agrees with Translate when the refusal comes and goes.
func TestShardRefusals(t *testing.T) {
	gw := types.NamespacedName{Namespace: "default", Name: "gw"}
	in := hostileInput()
	in.HTTPRoutes = append(in.HTTPRoutes, route())
	tr := newLoaded()

	check := func(step string, in *Input, wantAccepted string, wantIR bool) {
		t.Helper()
		want := Translate(in)
		if got := tr.translate(in); !sameOutput(got, want) {
			t.Fatalf("%s: the Translator differs from Translate", step)
		}
		st := want.GatewayStatus[gw]
		c := meta.FindStatusCondition(st.Conditions, "Accepted")
		if c == nil || string(c.Status)+"/"+c.Reason != wantAccepted {
			t.Fatalf("%s: Gateway Accepted = %+v, want %s", step, c, wantAccepted)
		}
		if got := len(want.Gateways) > 0; got != wantIR {
			t.Fatalf("%s: IR present = %v, want %v (%+v)", step, got, wantIR, want.Gateways)
		}
		if wantIR {
			if r := routeCond(t, want, "default", "r", "Accepted"); r != "True/Accepted" {
				t.Fatalf("%s: route Accepted = %s", step, r)
			}
		}
	}

	check("plain", in, "True/Accepted", true)
	refused := *in
	refused.ShardRefusals = map[types.NamespacedName]string{gw: "ShardInTenantNamespace: namespace default carries an owner marking"}
	check("refused", &refused, "False/InvalidParameters", false)
	if c := meta.FindStatusCondition(Translate(&refused).GatewayStatus[gw].Conditions, "Accepted"); c == nil || c.Message == "" {
		t.Fatalf("the refusal says nothing: %+v", c)
	}
	check("allowed again", in, "True/Accepted", true)
}

// TestTenantGateways: a Gateway in a tenant's namespace
// (Input.TenantNamespaces) is Accepted=False GatewayInTenantNamespace and
// gets no IR, whatever it asks; a class whose parametersRef points into a
// tenant's namespace is not Accepted, nor are its Gateways. The
// incremental Translator agrees with Translate at every step, back and
// forth.
func TestTenantGateways(t *testing.T) {
	gw := types.NamespacedName{Namespace: "default", Name: "gw"}
	in := hostileInput()
	in.HTTPRoutes = append(in.HTTPRoutes, route())
	tr := newLoaded()

	check := func(step string, in *Input, wantClass, wantAccepted, wantMsg string, wantIR bool) {
		t.Helper()
		want := Translate(in)
		if got := tr.translate(in); !sameOutput(got, want) {
			t.Fatalf("%s: the Translator differs from Translate", step)
		}
		cc := meta.FindStatusCondition(want.GatewayClasses["shardgate"].Conditions, "Accepted")
		if cc == nil || string(cc.Status)+"/"+cc.Reason != wantClass {
			t.Fatalf("%s: GatewayClass Accepted = %+v, want %s", step, cc, wantClass)
		}
		c := meta.FindStatusCondition(want.GatewayStatus[gw].Conditions, "Accepted")
		if c == nil || string(c.Status)+"/"+c.Reason != wantAccepted || !strings.Contains(c.Message, wantMsg) {
			t.Fatalf("%s: Gateway Accepted = %+v, want %s with %q", step, c, wantAccepted, wantMsg)
		}
		if got := len(want.Gateways) > 0; got != wantIR {
			t.Fatalf("%s: IR present = %v, want %v (%+v)", step, got, wantIR, want.Gateways)
		}
	}

	check("provider namespace", in, "True/Accepted", "True/Accepted", "", true)
	tenant := *in
	tenant.TenantNamespaces = map[string]string{"default": "namespace default carries an owner marking (shardgate.io/owner), so it belongs to a tenant"}
	check("tenant namespace", &tenant, "True/Accepted", "False/"+shardgatev1alpha1.ReasonGatewayInTenantNamespace, "owner marking", false)
	other := *in
	other.TenantNamespaces = map[string]string{"other": "namespace other carries an owner marking"}
	check("another namespace is a tenant's", &other, "True/Accepted", "True/Accepted", "", true)
	check("provider namespace again", in, "True/Accepted", "True/Accepted", "", true)

	// The class takes its parameters from a tenant's namespace.
	classed := *in
	class := in.GatewayClasses[0].DeepCopy()
	class.Spec.ParametersRef = &gatewayv1.ParametersReference{Group: "shardgate.io", Kind: "GatewayParameters",
		Name: "defaults", Namespace: ptrTo(gatewayv1.Namespace("other"))}
	classed.GatewayClasses = []*gatewayv1.GatewayClass{class}
	classed.GatewayParameters = []*shardgatev1alpha1.GatewayParameters{{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "defaults"},
		Spec: shardgatev1alpha1.GatewayParametersSpec{Envoy: &shardgatev1alpha1.EnvoySpec{Image: "registry.attacker.example/miner:latest"}}}}
	check("class parameters in a provider namespace", &classed, "True/Accepted", "True/Accepted", "", true)
	classedTenant := classed
	classedTenant.TenantNamespaces = other.TenantNamespaces
	check("class parameters in a tenant namespace", &classedTenant, "False/InvalidParameters", "False/InvalidParameters", "may not configure a class", false)
}
