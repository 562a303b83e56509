package controllers

import (
	"maps"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// TestDeletedLeaseHosts: a LeaseHost seen and then gone is remembered as
// deleted for deletedMemory; a UID never seen is not.
func TestDeletedLeaseHosts(t *testing.T) {
	lh := func(uid types.UID) *shardgatev1alpha1.LeaseHost {
		return &shardgatev1alpha1.LeaseHost{ObjectMeta: metav1.ObjectMeta{UID: uid}}
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var d deletedLeaseHosts
	first := byUID([]*shardgatev1alpha1.LeaseHost{lh("a"), lh("b")})
	if got := d.update(nil, first, at); got != nil {
		t.Fatalf("first computation: deleted %v, want none", got)
	}
	second := byUID([]*shardgatev1alpha1.LeaseHost{lh("a")})
	if got := d.update(first, second, at.Add(time.Second)); !maps.Equal(got, map[types.UID]bool{"b": true}) {
		t.Fatalf("b gone: deleted %v, want b", got)
	}
	third := byUID([]*shardgatev1alpha1.LeaseHost{lh("a"), lh("c")})
	if got := d.update(second, third, at.Add(time.Minute)); !maps.Equal(got, map[types.UID]bool{"b": true}) {
		t.Fatalf("c added: deleted %v, want b still", got)
	}
	if got := d.update(third, third, at.Add(deletedMemory+2*time.Second)); got != nil {
		t.Fatalf("after %s: deleted %v, want none", deletedMemory, got)
	}
}
