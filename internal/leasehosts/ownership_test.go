package leasehosts

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/sharding"
)

func ownedNS(name, owner string) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if owner != "" {
		ns.Annotations = map[string]string{tenancy.OwnerKey: owner}
	}
	return ns
}

func hostLH(ns, name, uid, owner string, dseq uint64, host string, created int64) *shardgatev1alpha1.LeaseHost {
	return &shardgatev1alpha1.LeaseHost{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), CreationTimestamp: metav1.Unix(created, 0)},
		Spec: shardgatev1alpha1.LeaseHostSpec{
			Lease:    shardgatev1alpha1.LeaseRef{Owner: owner, DSeq: dseq, GSeq: 1},
			Hostname: host,
			Service:  shardgatev1alpha1.ServiceRef{Name: "web", Port: 80},
		},
	}
}

// TestOwnership: the facts the translator gets come from the engine and
// the namespaces' owner markings only; what a tenant writes in its own
// namespace (a LeaseHost naming another owner, with takeover; a forged
// lease-owner label; a LeaseHost status claiming a name) moves nothing.
func TestOwnership(t *testing.T) {
	alice := hostLH("tenant-a", "shop", "uid-a", "akash1alice", 1, "shop.example.test", 10)
	alice.Status.ReservedHosts = []string{"shop.example.test"}
	// B, in its own namespace, names A's owner and takes over.
	spoof := hostLH("tenant-b", "steal", "uid-b", "akash1alice", 2, "shop.example.test", 20)
	spoof.Spec.Takeover = true
	// B's own name, with a forged hint for A's other name in its status.
	own := hostLH("tenant-b", "own", "uid-b2", "akash1bob", 3, "bob.example.test", 30)
	own.Status.ReservedHosts = []string{"bob.example.test", "other.example.test"}
	// A LeaseHost in an unmarked namespace, and a blocked look-alike.
	stray := hostLH("stray", "free", "uid-c", "akash1carol", 4, "free.example.test", 40)
	homograph := hostLH("tenant-b", "apple", "uid-b3", "akash1bob", 5, "xn--80ak6aa92e.com", 50)
	sub := subdomainLH("web")
	sub.Namespace, sub.UID, sub.Spec.Lease.Owner = "tenant-a", "uid-a2", "akash1alice"

	got := Ownership(OwnershipInput{
		LeaseHosts: []*shardgatev1alpha1.LeaseHost{alice, spoof, own, stray, homograph, sub},
		Namespaces: []*corev1.Namespace{ownedNS("tenant-a", "akash1alice"), ownedNS("tenant-b", "akash1bob"), ownedNS("stray", "")},
		Shards:     []sharding.Shard{shardA, shardB},
		Routes:     map[types.NamespacedName]gatewayapi.ShardRoutes{shardB.Gateway: gatewayapi.RoutesOwned},
		Policy:     tenancy.DefaultPolicy(),
		Blocked:    hostnames.MustBlockList(".apple.com"),
	})
	want := &gatewayapi.Ownership{
		Shards: map[types.NamespacedName]gatewayapi.ShardRoutes{shardA.Gateway: gatewayapi.RoutesGenerated, shardB.Gateway: gatewayapi.RoutesOwned},
		Generated: map[types.NamespacedName]gatewayapi.GeneratedRoute{
			{Namespace: "tenant-a", Name: "shop"}: {LeaseHost: "uid-a", Hosts: map[types.NamespacedName][]string{
				shardA.Gateway: {"shop.example.test"}, shardB.Gateway: {"shop.example.test"}}},
			{Namespace: "tenant-b", Name: "own"}: {LeaseHost: "uid-b2", Hosts: map[types.NamespacedName][]string{
				shardA.Gateway: {"bob.example.test"}, shardB.Gateway: {"bob.example.test"}}},
			{Namespace: "tenant-a", Name: "web"}: {LeaseHost: "uid-a2", Hosts: map[types.NamespacedName][]string{
				shardA.Gateway: {"web.a.example.test"}, shardB.Gateway: {"web.b.example.test"}}},
		},
		NamespaceOwners: map[string]string{"tenant-a": "akash1alice", "tenant-b": "akash1bob"},
		Holders: map[string]string{"shop.example.test": "akash1alice", "bob.example.test": "akash1bob",
			"web.a.example.test": "akash1alice", "web.b.example.test": "akash1alice"},
		Blocked: hostnames.MustBlockList(".apple.com"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Ownership =\n%+v\nwant\n%+v", got, want)
	}
}
