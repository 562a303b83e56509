package main

import (
	"runtime"
	"testing"
)

// TestHeapProfileRate: heap profiles are sampled at Go's default rate when
// pprof is served, by either flag, and not at all when it is not.
func TestHeapProfileRate(t *testing.T) {
	def := runtime.MemProfileRate
	if def == 0 {
		t.Fatal("the test process does not sample heap profiles: nothing to compare with")
	}
	for _, c := range []struct {
		addr      string
		profiling bool
		want      int
	}{
		{"", false, 0},
		{"127.0.0.1:8082", false, def},
		{"", true, def},
		{"127.0.0.1:8082", true, def},
	} {
		if got := heapProfileRate(c.addr, c.profiling); got != c.want {
			t.Errorf("--pprof-address=%q --enable-profiling=%v: MemProfileRate %d, want %d", c.addr, c.profiling, got, c.want)
		}
	}
}
