package leasehosts

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/sharding"
)

// TestTrackerMatchesOwnership: LeaseHosts and provider's claims in a few
// namespaces compete for a few names (explicit hostnames and subdomains on
// two shards, invalid and blocked names among them); each step creates,
// edits (hostname, subdomain, takeover, status hints, lease owner, label,
// deletion), deletes, re-creates objects, relabels or deletes namespaces,
// and now and then changes the shards, the block list or the policy.
// After every step the Tracker's result equals Ownership over the same
// input, and an Update with nothing changed returns the same Ownership.
func TestTrackerMatchesOwnership(t *testing.T) {
	owners := []string{"akash1alice", "akash1bob", "akash1carol"}
	hosts := []string{"shop.example.test", "Shop.Example.Test", "blog.example.test", "x.blocked.test", "bad_name!", "web.a.example.test", "a.example.test"}
	subs := []string{"", "", "web", "api", "WEB"}
	nsNames := []string{"t-0", "t-1", "t-2", "t-3"}
	shardSets := [][]sharding.Shard{{shardA, shardB}, {shardA}, {shardA, shardB, shardFor("shard-c", "c.example.test")}}
	blockLists := []*hostnames.BlockList{nil, hostnames.MustBlockList(".blocked.test"), hostnames.MustBlockList(".blocked.test", "blog.example.test")}
	seeds, steps := 60, 60
	if testing.Short() {
		seeds = 10
	}
	seen := map[string]int{}
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 3))
		uid := 0
		newLH := func(provider bool) *shardgatev1alpha1.LeaseHost {
			uid++
			ns := nsNames[r.IntN(len(nsNames))]
			lh := hostLH(ns, fmt.Sprintf("lh-%d", r.IntN(6)), fmt.Sprintf("uid-%d", uid), owners[r.IntN(len(owners))],
				uint64(1+r.IntN(3)), hosts[r.IntN(len(hosts))], int64(r.IntN(4)))
			if provider {
				lh.UID = types.UID(fmt.Sprintf("uid-p-%d", uid))
			}
			if r.IntN(2) == 0 {
				lh.Spec.Hostname, lh.Spec.Subdomain = "", subs[2+r.IntN(3)]
			}
			return lh
		}
		var nss []*corev1.Namespace
		for _, n := range nsNames {
			if r.IntN(4) > 0 {
				nss = append(nss, ownedNS(n, owners[r.IntN(len(owners))]))
			}
		}
		in := OwnershipInput{Shards: shardSets[0], Policy: tenancy.DefaultPolicy(), Blocked: blockLists[1], Namespaces: nss}
		// An informer holds one object per namespace/name.
		put := func(list []*shardgatev1alpha1.LeaseHost, lh *shardgatev1alpha1.LeaseHost) []*shardgatev1alpha1.LeaseHost {
			list = slices.DeleteFunc(slices.Clone(list), func(o *shardgatev1alpha1.LeaseHost) bool {
				return o.Namespace == lh.Namespace && o.Name == lh.Name
			})
			return append(list, lh)
		}
		tr := NewTracker()
		var last *gatewayapi.Ownership
		var lastLHs []*shardgatev1alpha1.LeaseHost
		for step := range steps {
			got, ch := tr.Update(in)
			want := Ownership(in)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d step %d: the Tracker differs from Ownership (blocked lists equal: %v):\n%s", seed, step,
					reflect.DeepEqual(want.Blocked, got.Blocked), cmp.Diff(ownershipMaps(want), ownershipMaps(got)))
			}
			checkChange(t, fmt.Sprintf("seed %d step %d", seed, step), last, got, ch, lastLHs, in.LeaseHosts)
			if again, ch := tr.Update(in); again != got || !reflect.DeepEqual(ch, Change{}) {
				t.Fatalf("seed %d step %d: an Update with nothing changed made a new Ownership, or a change %+v", seed, step, ch)
			}
			// A status update of a LeaseHost's conditions (a new object,
			// the same facts) changes no fact: the same Ownership.
			if len(in.LeaseHosts) > 0 {
				j := r.IntN(len(in.LeaseHosts))
				lh := in.LeaseHosts[j].DeepCopy()
				lh.Status.Conditions = append(lh.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: fmt.Sprint("Step", step)})
				in.LeaseHosts = slices.Clone(in.LeaseHosts)
				in.LeaseHosts[j] = lh
				if again, ch := tr.Update(in); again != got || len(ch.Routes) > 0 || ch.All {
					t.Fatalf("seed %d step %d: a conditions-only update made a new Ownership, or a change %+v", seed, step, ch)
				}
			}
			last, lastLHs = got, in.LeaseHosts
			if ch.All {
				seen["all"]++
			} else {
				seen["changed routes"] += len(ch.Routes)
				seen["gone"] += len(ch.Gone)
			}
			seen["generated"] += len(want.Generated)
			seen["retiring"] += len(want.Retiring)
			seen["holders"] += len(want.Holders)
			for _, g := range want.Generated {
				if g.Unowned {
					seen["provider generated"]++
				}
			}
			for i := range 1 + r.IntN(3) {
				_ = i
				list := &in.LeaseHosts
				provider := r.IntN(5) == 0
				if provider {
					list = &in.ProviderHosts
				}
				switch k := r.IntN(12); {
				case k < 4 || len(*list) == 0:
					*list = put(*list, newLH(provider))
				case k < 9:
					j := r.IntN(len(*list))
					lh := (*list)[j].DeepCopy()
					switch r.IntN(8) {
					case 0:
						lh.Spec.Hostname, lh.Spec.Subdomain = hosts[r.IntN(len(hosts))], ""
					case 1:
						lh.Spec.Hostname, lh.Spec.Subdomain = "", subs[r.IntN(len(subs))]
					case 2:
						lh.Spec.Takeover = !lh.Spec.Takeover
					case 3, 4:
						// The status hint the LeaseHost controller
						// writes, or a forged one.
						lh.Status.ReservedHosts = nil
						for _, h := range hosts {
							if r.IntN(3) == 0 {
								lh.Status.ReservedHosts = append(lh.Status.ReservedHosts, h)
							}
						}
					case 5:
						lh.Spec.Lease.Owner = owners[r.IntN(len(owners))]
					case 6:
						lh.Labels = map[string]string{shardgatev1alpha1.LabelLeaseOwner: owners[r.IntN(len(owners))]}
					case 7:
						lh.DeletionTimestamp = &metav1.Time{}
					}
					*list = slices.Clone(*list)
					(*list)[j] = lh
				case k < 11:
					j := r.IntN(len(*list))
					*list = slices.Delete(slices.Clone(*list), j, j+1)
				default:
					// Deleted and created again by the same name.
					j := r.IntN(len(*list))
					lh := (*list)[j].DeepCopy()
					uid++
					lh.UID = types.UID(fmt.Sprintf("uid-%d", uid))
					*list = slices.Clone(*list)
					(*list)[j] = lh
				}
			}
			switch r.IntN(10) {
			case 0:
				// A namespace relabelled, created or deleted.
				n := nsNames[r.IntN(len(nsNames))]
				nss := slices.DeleteFunc(slices.Clone(in.Namespaces), func(ns *corev1.Namespace) bool { return ns.Name == n })
				if r.IntN(3) > 0 {
					owner := ""
					if r.IntN(4) > 0 {
						owner = owners[r.IntN(len(owners))]
					}
					nss = append(nss, ownedNS(n, owner))
				}
				in.Namespaces = nss
			case 1:
				switch r.IntN(3) {
				case 0:
					in.Shards = shardSets[r.IntN(len(shardSets))]
				case 1:
					in.Blocked = blockLists[r.IntN(len(blockLists))]
				default:
					in.Policy.RequireOwner = !in.Policy.RequireOwner
				}
			}
		}
	}
	t.Logf("summed over the steps: %v", seen)
	for _, k := range []string{"generated", "retiring", "holders", "provider generated", "all", "changed routes", "gone"} {
		if seen[k] == 0 {
			t.Errorf("the steps never produced %s entries", k)
		}
	}
}

// checkChange: ch, the Change of the Update that turned prev into got,
// names exactly the routes whose Generated entry differs (unless it says
// All, or this is the first Update) and the LeaseHosts of before that now
// lacks.
func checkChange(t *testing.T, at string, prev, got *gatewayapi.Ownership, ch Change, before, now []*shardgatev1alpha1.LeaseHost) {
	t.Helper()
	if prev == nil {
		if !ch.All {
			t.Fatalf("%s: the first Update does not say All", at)
		}
		return
	}
	var gone []types.UID
	for _, lh := range before {
		if !slices.ContainsFunc(now, func(o *shardgatev1alpha1.LeaseHost) bool { return o.UID == lh.UID }) {
			gone = append(gone, lh.UID)
		}
	}
	slices.Sort(gone)
	gotGone := slices.Sorted(slices.Values(ch.Gone))
	if !slices.Equal(gone, gotGone) {
		t.Fatalf("%s: Gone = %v, want %v", at, gotGone, gone)
	}
	if ch.All {
		if len(ch.Routes) > 0 {
			t.Fatalf("%s: All with routes %v", at, ch.Routes)
		}
		return
	}
	var differ []types.NamespacedName
	for k, g := range prev.Generated {
		if n, ok := got.Generated[k]; !ok || !reflect.DeepEqual(n, g) {
			differ = append(differ, k)
		}
	}
	for k := range got.Generated {
		if _, ok := prev.Generated[k]; !ok {
			differ = append(differ, k)
		}
	}
	cmpNN := func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) }
	slices.SortFunc(differ, cmpNN)
	routes := slices.SortedFunc(slices.Values(ch.Routes), cmpNN)
	if !slices.Equal(differ, routes) {
		t.Fatalf("%s: changed routes %v, want %v", at, routes, differ)
	}
	if owners := !maps.Equal(prev.Holders, got.Holders) || !maps.Equal(prev.NamespaceOwners, got.NamespaceOwners); owners != ch.Owners {
		t.Fatalf("%s: Owners = %v, want %v", at, ch.Owners, owners)
	}
}

// ownershipMaps is o without its block list (which cmp cannot read).
func ownershipMaps(o *gatewayapi.Ownership) gatewayapi.Ownership {
	c := *o
	c.Blocked = nil
	return c
}

// BenchmarkTrackerNewLeaseHost: 10,000 LeaseHosts of 100 owners on two
// shards (BenchmarkOwnership's); per operation one more LeaseHost, in a
// new namespace, as a new lease brings them.
func BenchmarkTrackerNewLeaseHost(b *testing.B) {
	in := benchOwnershipInput()
	tr := NewTracker()
	tr.Update(in)
	b.ReportAllocs()
	i := 0
	var out *gatewayapi.Ownership
	for b.Loop() {
		i++
		ns := fmt.Sprintf("lease-%d", i)
		owner := fmt.Sprintf("akash1new%d", i)
		in.Namespaces = append(in.Namespaces, ownedNS(ns, owner))
		in.LeaseHosts = append(in.LeaseHosts, hostLH(ns, "web", fmt.Sprintf("uid-new-%d", i), owner, 1,
			fmt.Sprintf("new%d.example.test", i), 20000+int64(i)))
		out, _ = tr.Update(in)
	}
	if _, ok := out.Generated[types.NamespacedName{Namespace: fmt.Sprintf("lease-%d", i), Name: "web"}]; !ok {
		b.Fatal("the new LeaseHost's route is not generated")
	}
}
