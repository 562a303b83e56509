/*
Copyright The shardgate Authors.
*/

package endpoints

import (
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/ir"
)

// Filler gives the clusters of one Gateway's IR their endpoints from a
// Table. Between calls it keeps the clusters it filled, so that a call
// costs the clusters that changed (their IR, or their Service's
// endpoints) plus a walk of the list: an unchanged cluster keeps its
// filled pointer, and an unchanged list its array, which the xDS
// translation's memo compares first. It is not safe for concurrent use.
type Filler struct {
	// src is the cluster list last filled and out its filled form, in
	// the same order; sorted: src is sorted by name (as the Gateway API
	// translation sorts it).
	src, out []*ir.Cluster
	sorted   bool
	// bySvc names, per Service, the clusters of src that send to it.
	bySvc map[types.NamespacedName][]string
	// stale: Services whose endpoints changed since the last Fill.
	stale map[types.NamespacedName]bool
}

// Changed records that the endpoints of svcs may have changed, and
// reports whether the last filled list uses any of them (the Gateway must
// then be filled and published again).
func (f *Filler) Changed(svcs []types.NamespacedName) bool {
	uses := false
	for _, svc := range svcs {
		if len(f.bySvc[svc]) == 0 {
			continue
		}
		uses = true
		if f.stale == nil {
			f.stale = map[types.NamespacedName]bool{}
		}
		f.stale[svc] = true
	}
	return uses
}

// Fill returns gw with every cluster's endpoints those the table lists
// for its Service port (a shallow copy: only the cluster list is new).
func (f *Filler) Fill(gw *ir.Gateway, t *Table) *ir.Gateway {
	if gw == nil {
		return nil
	}
	out := *gw
	out.Clusters = f.fill(gw.Clusters, t)
	return &out
}

func (f *Filler) fill(src []*ir.Cluster, t *Table) []*ir.Cluster {
	stale := f.stale
	f.stale = nil
	if len(src) == 0 {
		f.src, f.out, f.bySvc, f.sorted = nil, nil, nil, true
		return nil
	}
	if len(f.src) == len(src) && &f.src[0] == &src[0] && f.sorted {
		// The same IR list: only stale Services' clusters change.
		if len(stale) == 0 {
			return f.out
		}
		out := f.out
		cloned := false
		for svc := range stale {
			for _, name := range f.bySvc[svc] {
				i, found := sort.Find(len(src), func(i int) int { return strings.Compare(name, src[i].Name) })
				if !found {
					return f.full(src, t) // cannot happen: src is sorted
				}
				c := filled(src[i], t)
				if slices.Equal(c.Endpoints, out[i].Endpoints) {
					continue
				}
				if !cloned {
					out, cloned = slices.Clone(out), true
				}
				out[i] = c
			}
		}
		f.out = out
		return out
	}
	if !f.sorted {
		return f.full(src, t)
	}
	// A merge of the two lists by name: a cluster whose IR is the very
	// one filled last time, and whose Service is not stale, keeps its
	// filled form.
	out := make([]*ir.Cluster, len(src))
	j := 0
	for i, c := range src {
		if i > 0 && src[i-1].Name >= c.Name {
			return f.full(src, t)
		}
		for j < len(f.src) && f.src[j].Name < c.Name {
			f.unindex(f.src[j])
			j++
		}
		if j < len(f.src) && f.src[j].Name == c.Name {
			prev := f.src[j]
			j++
			if prev == c && !stale[svcOf(c)] {
				out[i] = f.out[j-1]
				continue
			}
			f.unindex(prev)
		}
		f.index(c)
		out[i] = filled(c, t)
	}
	for ; j < len(f.src); j++ {
		f.unindex(f.src[j])
	}
	f.src, f.out = src, out
	return out
}

// full fills every cluster of src.
func (f *Filler) full(src []*ir.Cluster, t *Table) []*ir.Cluster {
	f.bySvc = nil
	out := make([]*ir.Cluster, len(src))
	for i, c := range src {
		f.index(c)
		out[i] = filled(c, t)
	}
	f.src, f.out = src, out
	f.sorted = slices.IsSortedFunc(src, func(a, b *ir.Cluster) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (f *Filler) index(c *ir.Cluster) {
	if f.bySvc == nil {
		f.bySvc = map[types.NamespacedName][]string{}
	}
	svc := svcOf(c)
	f.bySvc[svc] = append(f.bySvc[svc], c.Name)
}

func (f *Filler) unindex(c *ir.Cluster) {
	svc := svcOf(c)
	names := f.bySvc[svc]
	if i := slices.Index(names, c.Name); i >= 0 {
		names = slices.Delete(slices.Clone(names), i, i+1)
	}
	if len(names) == 0 {
		delete(f.bySvc, svc)
		return
	}
	f.bySvc[svc] = names
}

// filled is c with its Service port's endpoints (c itself is never
// modified: IR lists are shared).
func filled(c *ir.Cluster, t *Table) *ir.Cluster {
	out := *c
	out.Endpoints = nil
	if c.Service.Name != "" {
		out.Endpoints = t.For(c.Service)
	}
	return &out
}

func svcOf(c *ir.Cluster) types.NamespacedName {
	return types.NamespacedName{Namespace: c.Service.Namespace, Name: c.Service.Name}
}
