package controllers_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardgate/shardgate/controllers"
	"github.com/shardgate/shardgate/internal/akash"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
)

// TestIPServicePoolChange: a leased-IP Service is rewritten when
// akash.metalLBPool changes, including back to "default" (the pool
// annotation must go), and not otherwise.
func TestIPServicePoolChange(t *testing.T) {
	lip := &akashv1.ProviderLeasedIP{Spec: akashv1.ProviderLeasedIPSpec{
		LeaseID:     akashv1.LeaseID{Owner: akashAlice, DSeq: "1", GSeq: 1, OSeq: 1, Provider: akashProvider},
		ServiceName: "web", Port: 8080, ExternalPort: 80, Protocol: "TCP", SharingKey: akashAlice + "-ip-x",
	}}
	l, proto, err := akash.IPLease(lip)
	if err != nil {
		t.Fatal(err)
	}
	svc := func(pool string) *corev1.Service { return akash.IPServiceFor(lip, l, proto, pool) }
	for _, tc := range []struct {
		existing, desired string
		want              bool
	}{
		{"leased", "leased", true},
		{"default", "default", true},
		{"", "default", true},
		{"default", "leased", false},
		{"leased", "other", false},
		{"leased", "default", false},
	} {
		if got := controllers.IPServiceUpToDate(svc(tc.existing), svc(tc.desired)); got != tc.want {
			t.Errorf("pool %q written, %q configured: up to date %v, want %v", tc.existing, tc.desired, got, tc.want)
		}
	}
}
