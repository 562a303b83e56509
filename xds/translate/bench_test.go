/*
Copyright The shardgate Authors.
*/

package translate

import (
	"testing"

	"github.com/shardgate/shardgate/internal/irtest"
)

func BenchmarkTranslate(b *testing.B) {
	gw := irtest.LargeGateway(10_000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Translate(gw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	r, err := Translate(irtest.LargeGateway(10_000))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := Validate(r); err != nil {
			b.Fatal(err)
		}
	}
}

func TestLargeGatewayValidates(t *testing.T) {
	r, err := Translate(irtest.LargeGateway(2_000))
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(r); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, vh := range r.Routes[0].VirtualHosts {
		n += len(vh.Routes)
	}
	if n != 4_000 {
		t.Errorf("want 4000 Envoy routes (each prefix is two), got %d", n)
	}
}
