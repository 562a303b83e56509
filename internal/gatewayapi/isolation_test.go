/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
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
