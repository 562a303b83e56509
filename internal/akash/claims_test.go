package akash

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
)

// TestClaimsKeepsEachClaimByUID: a ProviderHost keeps its claim while its
// resourceVersion and hint are unchanged, whatever copy of it is listed
// (an informer may hand out another copy of the same version); a new
// version, a new hint, another namespace, a deletion or an invalid spec
// each change or drop it; and a claim is made from the object as it is.
func TestClaimsKeepsEachClaimByUID(t *testing.T) {
	ph := providerHost("web.example.com", "web", 80)
	ph.ResourceVersion = "1"
	var c Claims
	first := c.Of("lease", []*akashv1.ProviderHost{ph}, nil)
	if len(first) != 1 || first[0].UID != ph.UID || first[0].Spec.Hostname != "web.example.com" || len(first[0].Status.ReservedHosts) != 0 {
		t.Fatalf("claims of one ProviderHost without a route: %+v", first)
	}
	again := c.Of("lease", []*akashv1.ProviderHost{ph.DeepCopy()}, nil)
	if len(again) != 1 || again[0] != first[0] {
		t.Fatalf("a copy of the same version: a new claim %p, want the one it had %p", again[0], first[0])
	}

	// The generated route exists: the claim says it holds the name.
	rt := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: HostRoute(ph).Namespace, Name: HostRoute(ph).Name,
		Labels: map[string]string{LabelManaged: "true"}}, Spec: gatewayv1.HTTPRouteSpec{Hostnames: []gatewayv1.Hostname{"web.example.com"}}}
	for k, v := range HostLease(ph).Labels() {
		rt.Labels[k] = v
	}
	held := c.Of("lease", []*akashv1.ProviderHost{ph}, []*gatewayv1.HTTPRoute{rt})
	if len(held) != 1 || held[0] == first[0] || len(held[0].Status.ReservedHosts) != 1 {
		t.Fatalf("with its route: %+v, want a new claim holding the name", held)
	}
	if got := c.Of("lease", []*akashv1.ProviderHost{ph}, []*gatewayv1.HTTPRoute{rt}); got[0] != held[0] {
		t.Fatal("unchanged with its route: a new claim")
	}

	edited := ph.DeepCopy()
	edited.ResourceVersion = "2"
	edited.Spec.ServiceName = "api"
	got := c.Of("lease", []*akashv1.ProviderHost{edited}, []*gatewayv1.HTTPRoute{rt})
	if len(got) != 1 || got[0] == held[0] || got[0].Spec.Service.Name != "api" {
		t.Fatalf("a new version: %+v, want a new claim for service api", got)
	}
	unstored := edited.DeepCopy()
	unstored.ResourceVersion = ""
	a := c.Of("lease", []*akashv1.ProviderHost{unstored}, nil)
	if b := c.Of("lease", []*akashv1.ProviderHost{unstored}, nil); a[0] == b[0] {
		t.Fatal("a ProviderHost without a resourceVersion kept its claim")
	}

	deleting := edited.DeepCopy()
	deleting.DeletionTimestamp = new(metav1.Now())
	invalid := providerHost("bad.example.com", "web", 0)
	invalid.UID, invalid.ResourceVersion = "ph-2", "1"
	elsewhere := providerHost("other.example.com", "web", 80)
	elsewhere.UID, elsewhere.Namespace = "ph-3", "other"
	var none []*shardgatev1alpha1.LeaseHost = c.Of("lease", []*akashv1.ProviderHost{deleting, invalid, elsewhere}, nil)
	if len(none) != 0 {
		t.Fatalf("deleting, invalid (port 0) and another namespace's: claims %+v, want none", none)
	}
	if len(c.byUID) != 0 {
		t.Fatalf("claims remembered for ProviderHosts that make none: %d", len(c.byUID))
	}
}
