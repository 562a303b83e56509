package logging

import (
	"io"
	"runtime"
	"testing"
)

// constructionBytes is the heap a logger built by NewTo allocates, the
// least over a few builds (TotalAlloc counts every goroutine's allocations).
func constructionBytes(t *testing.T, level, format string) uint64 {
	t.Helper()
	least := ^uint64(0)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		log, err := NewTo(io.Discard, level, format)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		runtime.KeepAlive(log)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

func TestNewAllocatesLittle(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		got := constructionBytes(t, "info", format)
		t.Logf("%s logger at info: %d bytes allocated to build", format, got)
		if got > 64<<10 {
			t.Errorf("%s logger at info: building it allocated %d bytes, want at most 64 KiB", format, got)
		}
	}
}
