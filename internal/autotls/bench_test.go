/*
Copyright The shardgate Authors.
*/

package autotls

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/sharding"
)

// BenchmarkDesiredAndPlan10k: what the certificate controller computes per
// pass at 10k held names on one tls shard: the wanted Certificates, and
// the pacer's plan when none is written yet (the worst case: every name
// pending).
func BenchmarkDesiredAndPlan10k(b *testing.B) {
	gw := types.NamespacedName{Namespace: "sys", Name: "edge"}
	shards := []sharding.Shard{{Name: "edge", Gateway: gw, Domain: "edge.provider.example",
		TLS: &shardgatev1alpha1.ShardTLS{IssuerRef: shardgatev1alpha1.IssuerReference{Name: "le"}}}}
	var held []Held
	owners := map[string]string{}
	for i := range 10000 {
		h := fmt.Sprintf("app%d.tenant%d.example", i, i%500)
		held = append(held, Held{Route: types.NamespacedName{Namespace: fmt.Sprintf("t%d", i%500), Name: fmt.Sprint(i)}, Holder: types.UID(fmt.Sprint(i)), Shard: gw, Host: h})
		owners[h] = fmt.Sprintf("akash1owner%d", i%500)
	}
	b.ReportAllocs()
	for b.Loop() {
		d := DesiredFrom(seq(held...), owners, shards)
		pending := make([]*Want, 0, len(d.Wants))
		for _, w := range d.Wants {
			pending = append(pending, w)
		}
		NewPacer(DefaultLimits()).Plan(t0, pending)
	}
}
