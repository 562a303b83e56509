package metricsauth

import (
	"fmt"
	"testing"
	"time"
)

// A full cache drops expired entries before live ones, and never holds
// more than its bound.
func TestTTLCacheBound(t *testing.T) {
	c := newTTLCache[int](3)
	t0 := time.Unix(0, 0)
	c.put("old", 1, t0, time.Second)
	c.put("a", 2, t0, time.Minute)
	c.put("b", 3, t0, time.Minute)
	later := t0.Add(2 * time.Second)
	if _, ok := c.get("old", later); ok {
		t.Fatal("an expired entry was returned")
	}
	c.put("c", 4, later, time.Minute)
	for k, want := range map[string]int{"a": 2, "b": 3, "c": 4} {
		if v, ok := c.get(k, later); !ok || v != want {
			t.Errorf("%s: %d, %t; want %d: a live entry went while an expired one could", k, v, ok, want)
		}
	}
	for i := range 10 {
		c.put(fmt.Sprint(i), i, later, time.Minute)
		if c.len() > 3 {
			t.Fatalf("%d entries, bound 3", c.len())
		}
	}
	// Overwriting a present key in a full cache drops nothing.
	c.put("9", 99, later, time.Minute)
	if v, ok := c.get("9", later); !ok || v != 99 || c.len() != 3 {
		t.Fatalf("overwrite: %d, %t, %d entries", v, ok, c.len())
	}
}
