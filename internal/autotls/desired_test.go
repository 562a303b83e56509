/*
Copyright The shardgate Authors.
*/

package autotls

import (
	"iter"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/sharding"
)

func seq(h ...Held) iter.Seq[Held] { return slices.Values(h) }

func TestDesiredFrom(t *testing.T) {
	gwA := types.NamespacedName{Namespace: "sys", Name: "a"}
	gwB := types.NamespacedName{Namespace: "sys", Name: "b"}
	gwPlain := types.NamespacedName{Namespace: "sys", Name: "plain"}
	shards := []sharding.Shard{
		{Name: "b", Gateway: gwB, Domain: "b.provider.example", TLS: &shardgatev1alpha1.ShardTLS{IssuerRef: shardgatev1alpha1.IssuerReference{Name: "second"}}},
		{Name: "a", Gateway: gwA, Domain: "a.provider.example", TLS: &shardgatev1alpha1.ShardTLS{IssuerRef: shardgatev1alpha1.IssuerReference{Group: "cert-manager.io", Kind: "Issuer", Name: "first"}}},
		{Name: "plain", Gateway: gwPlain, Domain: "p.provider.example"},
	}
	r1 := types.NamespacedName{Namespace: "t1", Name: "lh1"}
	r2 := types.NamespacedName{Namespace: "t2", Name: "lh2"}
	d := DesiredFrom(seq(
		Held{Route: r1, Holder: "u1", Shard: gwB, Host: "App.Tenant.Example"},
		Held{Route: r1, Holder: "u1", Shard: gwA, Host: "app.tenant.example"},
		Held{Route: r1, Holder: "u1", Shard: gwPlain, Host: "plain-only.example"},
		Held{Route: r2, Holder: "u2", Shard: gwA, Host: "x.a.provider.example"},
		Held{Route: r2, Holder: "u2", Shard: gwB, Host: "x.a.provider.example"},
		Held{Route: r2, Holder: "u2", Unowned: true, Shard: gwB, Host: "akash.example"},
	), map[string]string{"app.tenant.example": "akash1one"}, shards)

	if len(d.Wants) != 3 {
		t.Fatalf("wants = %v, want app.tenant.example, x.a.provider.example (on b), akash.example", keys(d.Wants))
	}
	w := d.Wants[Key{"t1", "app.tenant.example"}]
	if w == nil || w.Issuer.Name != "first" || w.Issuer.Kind != "Issuer" || w.Owner != "akash1one" || w.Holder != "u1" || !slices.Equal(w.Shards, []types.NamespacedName{gwA, gwB}) {
		t.Fatalf("app.tenant.example: %+v", w)
	}
	// Covered on a, not on b: b wants a certificate (with b's issuer, defaults filled).
	w = d.Wants[Key{"t2", "x.a.provider.example"}]
	if w == nil || w.Issuer != (shardgatev1alpha1.IssuerReference{Group: "cert-manager.io", Kind: "ClusterIssuer", Name: "second"}) || w.Owner != "namespace:t2" {
		t.Fatalf("x.a.provider.example: %+v", w)
	}
	if got := d.ShardCertificate[Key{"t2", "x.a.provider.example"}]; !slices.Equal(got, []types.NamespacedName{gwA}) {
		t.Fatalf("ShardCertificate = %v", d.ShardCertificate)
	}
	if w := d.Wants[Key{"t2", "akash.example"}]; w == nil || !w.Unowned {
		t.Fatalf("akash.example: %+v", w)
	}
	if _, ok := d.Wants[Key{"t1", "plain-only.example"}]; ok {
		t.Fatal("a name held only on a shard without tls is wanted")
	}
	if d := DesiredFrom(seq(Held{Route: r1, Shard: gwPlain, Host: "x.example"}), nil, shards[2:]); len(d.Wants)+len(d.ShardCertificate) != 0 {
		t.Fatalf("no tls shard: %+v", d)
	}
}

func TestCovered(t *testing.T) {
	s := &sharding.Shard{Domain: "a.example"}
	for host, want := range map[string]bool{"x.a.example": true, "y.x.a.example": true, "a.example": true, "xa.example": false, "a.example.org": false, "X.A.Example": true} {
		if got := Covered(s, host); got != want {
			t.Errorf("Covered(%q) = %v", host, got)
		}
	}
}

func keys[V any](m map[Key]V) []Key {
	var out []Key
	for k := range m {
		out = append(out, k)
	}
	return out
}
