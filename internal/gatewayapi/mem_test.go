/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
)

// BenchmarkTranslatorMemory measures what a Store and a Translator holding
// 10k routes (each on its own Service and EndpointSlice) keep alive besides
// the objects themselves, which are the informers': the Store's indexes,
// the compilations, the Gateway state and the Output. With HEAPPROFILE set,
// it writes a heap profile there while all of it is alive.
func BenchmarkTranslatorMemory(b *testing.B) {
	const n = 10000
	for b.Loop() {
		in := benchInput(n)
		rv := 0
		stamp(in, &rv)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		st := NewStore(testController)
		st.Load(in)
		tr := NewTranslator(st)
		out := tr.Translate(FactsOf(in))
		runtime.GC()
		runtime.ReadMemStats(&after)
		if p := os.Getenv("HEAPPROFILE"); p != "" {
			f, err := os.Create(p)
			if err != nil {
				b.Fatal(err)
			}
			if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
				b.Fatal(err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
		}
		if out.HTTPRouteStatus.Len() != n {
			b.Fatalf("%d route statuses", out.HTTPRouteStatus.Len())
		}
		runtime.KeepAlive(in)
		runtime.KeepAlive(tr)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/route")
	}
}
