/*
Copyright The shardgate Authors.
*/

package endpoints

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/translate"
)

// fillFresh is what a Fill must return: every cluster with its Service
// port's endpoints, as listed now.
func fillFresh(src []*ir.Cluster, t *Table) []*ir.Cluster {
	out := make([]*ir.Cluster, len(src))
	for i, c := range src {
		d := *c
		d.Endpoints = nil
		if c.Service.Name != "" {
			d.Endpoints = ForPort(t.slicesOf(svcOf(c)), c.Service.Port)
		}
		out[i] = &d
	}
	return out
}

// slicesOf lists a Service's slices (tests only).
func (t *Table) slicesOf(svc types.NamespacedName) []*discoveryv1.EndpointSlice {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.slices[svc]
}

func sameClusters(a, b []*ir.Cluster) bool {
	return slices.EqualFunc(a, b, func(x, y *ir.Cluster) bool {
		return x.Name == y.Name && x.Protocol == y.Protocol && x.Service == y.Service && slices.Equal(x.Endpoints, y.Endpoints) &&
			len(x.Endpoints) == len(y.Endpoints)
	})
}

// TestFillerMatchesFreshFill: a Gateway's cluster list changes as the Gateway
// API translation changes it (clusters added, removed and replaced, the
// others keeping their pointers, sometimes the very same list), while
// EndpointSlices change under it, reported through Changed as the server
// reports them. After every step the filled list equals a fill from
// scratch; a cluster whose IR and endpoints did not change keeps its
// filled pointer, and an unchanged list its array.
func TestFillerMatchesFreshFill(t *testing.T) {
	for seed := range 40 {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		tb := NewTable()
		var f Filler
		svcs := 12
		sl := map[string]*discoveryv1.EndpointSlice{}
		var src []*ir.Cluster
		var last []*ir.Cluster
		rv := 0
		for step := range 120 {
			var changedSvcs []types.NamespacedName
			sameList := false
			switch r.IntN(4) {
			case 0, 1:
				// Slice churn.
				for n := 1 + r.IntN(3); n > 0; n-- {
					svc := fmt.Sprintf("s%d", r.IntN(svcs))
					name := fmt.Sprintf("%s-%d", svc, r.IntN(2))
					old := sl[name]
					var obj *discoveryv1.EndpointSlice
					if r.IntN(5) > 0 {
						obj = slice("t", svc, name, r.IntN(50), r.IntN(3))
						rv++
						obj.ResourceVersion = fmt.Sprint(rv)
						if r.IntN(3) == 0 {
							obj.Ports[0].Name = ptrTo("other")
						}
						sl[name] = obj
					} else {
						delete(sl, name)
					}
					if old == nil && obj == nil {
						continue
					}
					changedSvcs = append(changedSvcs, tb.Set(old, obj)...)
				}
				sameList = r.IntN(2) == 0
			}
			if !sameList {
				src = editClusters(r, src, svcs)
			}
			if len(changedSvcs) > 0 {
				uses := f.Changed(changedSvcs)
				want := false
				for _, c := range last {
					if slices.Contains(changedSvcs, svcOf(c)) {
						want = true
					}
				}
				if uses != want {
					t.Fatalf("seed %d step %d: Changed = %v, want %v", seed, step, uses, want)
				}
			}
			got := f.Fill(&ir.Gateway{Clusters: src}, tb).Clusters
			if want := fillFresh(src, tb); !sameClusters(got, want) {
				t.Fatalf("seed %d step %d: the fill differs from a fresh one", seed, step)
			}
			// Pointers kept: with the same IR list, a cluster whose
			// Service did not change keeps its filled form, and with no
			// change at all the list keeps its array.
			if sameList && len(last) == len(got) {
				for i, c := range got {
					if !slices.Contains(changedSvcs, svcOf(c)) && c != last[i] {
						t.Fatalf("seed %d step %d: an unchanged cluster got a new pointer", seed, step)
					}
				}
				if len(changedSvcs) == 0 && len(got) > 0 && &got[0] != &last[0] {
					t.Fatalf("seed %d step %d: nothing changed, yet the filled list is new", seed, step)
				}
			}
			last = got
		}
	}
}

// editClusters changes a sorted cluster list as the Gateway API
// translation does: a new list with some clusters added, removed or
// replaced by new pointers, the rest shared.
func editClusters(r *rand.Rand, src []*ir.Cluster, svcs int) []*ir.Cluster {
	next := slices.Clone(src)
	for n := r.IntN(4); n > 0; n-- {
		svc := fmt.Sprintf("s%d", r.IntN(svcs))
		name := "t/" + svc + "/80"
		c := &ir.Cluster{Name: name, Protocol: ir.ClusterHTTP1, Service: ir.ServicePort{Namespace: "t", Name: svc, Port: "http"}}
		if r.IntN(4) == 0 {
			c.Service.Port = "other"
		}
		i, found := slices.BinarySearchFunc(next, name, func(c *ir.Cluster, n string) int { return strings.Compare(c.Name, n) })
		switch {
		case found && r.IntN(2) == 0:
			next = slices.Delete(next, i, i+1)
		case found:
			next[i] = c
		default:
			next = slices.Insert(next, i, c)
		}
	}
	if len(next) == 0 {
		return nil
	}
	return next
}

func ptrTo[T any](v T) *T { return &v }

// TestFillHugeSlices: a Service with 5000 ready endpoints, in one slice
// (the apiserver allows 1000 per slice, but the table must not care) or in
// five, fills its cluster with all of them, and the xDS translation of the
// result passes validation with all of them in its load assignment.
func TestFillHugeSlices(t *testing.T) {
	for _, c := range []struct {
		name   string
		slices []*discoveryv1.EndpointSlice
	}{
		{"one slice of 5000", []*discoveryv1.EndpointSlice{slice("default", "web", "web-0", 0, 5000)}},
		{"five slices of 1000", func() []*discoveryv1.EndpointSlice {
			var out []*discoveryv1.EndpointSlice
			for i := range 5 {
				out = append(out, slice("default", "web", fmt.Sprintf("web-%d", i), i*1000, 1000))
			}
			return out
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb := NewTable()
			for _, s := range c.slices {
				tb.Set(nil, s)
			}
			gw := &ir.Gateway{Namespace: "default", Name: "gw", Clusters: []*ir.Cluster{{Name: "default/web/80", Protocol: ir.ClusterHTTP1,
				Service: ir.ServicePort{Namespace: "default", Name: "web", Port: "http"}}}}
			var f Filler
			filled := f.Fill(gw, tb)
			if n := len(filled.Clusters[0].Endpoints); n != 5000 {
				t.Fatalf("the cluster has %d endpoints; want 5000", n)
			}
			if gw.Clusters[0].Endpoints != nil {
				t.Fatal("the fill modified the IR it was given")
			}
			res, err := translate.Translate(filled)
			if err != nil {
				t.Fatal(err)
			}
			if err := translate.Validate(res); err != nil {
				t.Fatal(err)
			}
			got := 0
			for _, le := range res.Endpoints[0].GetEndpoints() {
				got += len(le.GetLbEndpoints())
			}
			if got != 5000 {
				t.Fatalf("the load assignment has %d endpoints; want 5000", got)
			}
		})
	}
}
