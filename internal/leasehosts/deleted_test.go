package leasehosts

import (
	"maps"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestFactsDeletedLeaseHosts: a LeaseHost seen and then gone is
// remembered as deleted for DeletedMemory; a UID never gone is not. The
// set is a new one exactly when it changed.
func TestFactsDeletedLeaseHosts(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := NewFacts()
	if got, changed := d.forget(nil, at); got != nil || changed {
		t.Fatalf("nothing gone: deleted %v (changed %v), want none", got, changed)
	}
	first, changed := d.forget([]types.UID{"b"}, at.Add(time.Second))
	if !maps.Equal(first, map[types.UID]bool{"b": true}) || !changed {
		t.Fatalf("b gone: deleted %v (changed %v), want b", first, changed)
	}
	if got, changed := d.forget(nil, at.Add(time.Minute)); !maps.Equal(got, first) || changed {
		t.Fatalf("nothing more gone: deleted %v (changed %v), want b unchanged", got, changed)
	}
	if got, changed := d.forget([]types.UID{"c"}, at.Add(time.Minute)); !maps.Equal(got, map[types.UID]bool{"b": true, "c": true}) || !changed {
		t.Fatalf("c gone: deleted %v (changed %v), want b and c", got, changed)
	}
	if !maps.Equal(first, map[types.UID]bool{"b": true}) {
		t.Fatalf("an earlier set was modified: %v", first)
	}
	if got, changed := d.forget(nil, at.Add(DeletedMemory+2*time.Second)); !maps.Equal(got, map[types.UID]bool{"c": true}) || !changed {
		t.Fatalf("after %s: deleted %v (changed %v), want c only", DeletedMemory, got, changed)
	}
	if got, changed := d.forget(nil, at.Add(time.Minute+DeletedMemory+time.Second)); got != nil || !changed {
		t.Fatalf("after %s more: deleted %v (changed %v), want none", DeletedMemory, got, changed)
	}
}
