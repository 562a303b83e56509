/*
Copyright The shardgate Authors.
*/

package endpoints

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/ir"
)

// Sink takes each node group's load assignments: the xDS server's EDS
// cache. Its methods are called one at a time, in order.
type Sink interface {
	// SetAssignments sets group's load assignments of the clusters in
	// list, replacing those of the same names.
	SetAssignments(group string, list []*endpointv3.ClusterLoadAssignment)
	// RemoveAssignments removes group's load assignments of names.
	RemoveAssignments(group string, names []string)
}

// EDS holds the clusters each node group serves and their load
// assignments, built from its Table, and hands them to a Sink (see the
// package documentation). It is safe for concurrent use.
type EDS struct {
	sink  Sink
	table *Table

	mu     sync.Mutex
	groups map[string]*group
	// users: per Service, the served clusters (of every group) that send
	// to it.
	users map[types.NamespacedName][]*entry
}

// group is one node group's clusters.
type group struct {
	name string
	// list are the clusters of the group's IR, sorted by name; kept, the
	// clusters the caller keeps serving after they left the IR (few),
	// sorted by name. No name is in both.
	list, kept []*entry
	// leaving are names whose load assignments the sink holds that left
	// the group; the function Serve returns removes them.
	leaving []string
	// errs: per cluster, why its latest load assignment was refused.
	errs map[string]error
}

// entry is one cluster served, with its load assignment.
type entry struct {
	g *group
	// src is the IR cluster it serves (nil for a kept cluster): an IR
	// cluster is never modified once built, so the same one is the same
	// Cluster.
	src *ir.Cluster
	c   Cluster
	// eps are the endpoints the load assignment was last built from (or
	// refused for); served, whether the sink was handed one (it holds the
	// load assignment: the list is what it is made of).
	eps    []Endpoint
	served bool
}

// New returns an EDS that hands load assignments to sink.
func New(sink Sink) *EDS {
	return &EDS{sink: sink, table: NewTable(), groups: map[string]*group{}, users: map[types.NamespacedName][]*entry{}}
}

// Update records an EndpointSlice change in the table (old nil: a new
// slice; obj nil: a deleted one) and hands the sink the load assignments
// it changes, of every group whose clusters send to the slice's Service;
// nothing else is built. It returns the groups whose Err changed.
func (e *EDS) Update(old, obj *discoveryv1.EndpointSlice) (errChanged []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	svcs := e.table.Set(old, obj)
	var set map[*group][]*endpointv3.ClusterLoadAssignment
	for _, svc := range svcs {
		for _, en := range e.users[svc] {
			if en.c.NoEndpoints {
				continue // empty whatever the Service lists
			}
			eps := e.table.For(en.c.Service)
			if slices.Equal(eps, en.eps) {
				continue
			}
			hadErr := en.g.errs[en.c.Name] != nil
			cla := e.build(en, eps)
			if hadErr != (en.g.errs[en.c.Name] != nil) && !slices.Contains(errChanged, en.g.name) {
				errChanged = append(errChanged, en.g.name)
			}
			if cla == nil {
				continue
			}
			if set == nil {
				set = map[*group][]*endpointv3.ClusterLoadAssignment{}
			}
			set[en.g] = append(set[en.g], cla)
		}
	}
	for g, list := range set {
		e.sink.SetAssignments(g.name, list)
	}
	return errChanged
}

// build makes en's load assignment from eps and validates it. It returns
// the load assignment to hand the sink, nil when there is none: one that
// fails validation is recorded in the group's errs and not handed over (the
// sink keeps the entry's last one; a new entry gets an empty one). The
// entry keeps no load assignment: the sink holds it.
func (e *EDS) build(en *entry, eps []Endpoint) *endpointv3.ClusterLoadAssignment {
	en.eps = eps
	cla := Assignment(en.c.Name, eps, en.c.NoEndpoints)
	if err := cla.ValidateAll(); err != nil {
		if en.g.errs == nil {
			en.g.errs = map[string]error{}
		}
		en.g.errs[en.c.Name] = err
		if en.served {
			return nil
		}
		cla = Assignment(en.c.Name, nil, true)
	} else {
		delete(en.g.errs, en.c.Name)
	}
	en.served = true
	return cla
}

// endpointsOf lists c's Service port's endpoints (none without a Service
// or with NoEndpoints).
func (e *EDS) endpointsOf(c Cluster) []Endpoint {
	if c.NoEndpoints || c.Service.Name == "" {
		return nil
	}
	return e.table.For(c.Service)
}

// Serve makes clusters (sorted by name, as the IR sorts them) and kept
// (clusters that left the IR and stay served a while) the clusters of the
// group named name.
// The load assignments of the new and changed ones go to the sink before
// Serve returns, so that the caller can then publish the clusters that use
// them; remove, called once those are published, takes away the load
// assignments of the clusters that left (until it is called, the sink
// keeps them, as a publish that keeps the previous clusters needs).
//
// A cluster whose Cluster is the same as before keeps its load assignment,
// which Update keeps current: a walk of the list, comparing the IR cluster
// at each place with the one served there, costs what changed.
func (e *EDS) Serve(name string, clusters []*ir.Cluster, kept []Cluster) (remove func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := e.groups[name]
	if g == nil {
		g = &group{name: name}
		e.groups[name] = g
	}
	next, added, left, ok := diff(g.list, clusters, false)
	if !ok {
		sorted := slices.Clone(clusters)
		slices.SortStableFunc(sorted, func(a, b *ir.Cluster) int { return strings.Compare(a.Name, b.Name) })
		next, added, left, _ = diff(g.list, sorted, true)
	}
	if len(added) == 0 && len(left) == 0 && sameKept(g.kept, kept) {
		return func() { e.removeLeaving(g) }
	}
	// Entries that left one list may go on in the other (a cluster that
	// became a kept one, or came back): they keep their load assignment.
	pool := map[string]*entry{}
	for _, en := range left {
		pool[en.c.Name] = en
	}
	for _, en := range g.kept {
		pool[en.c.Name] = en
	}
	var set []*endpointv3.ClusterLoadAssignment
	place := func(en *entry) *entry {
		if o := pool[en.c.Name]; o != nil && o.c == en.c {
			delete(pool, en.c.Name)
			o.src = en.src
			return o
		}
		en.g = g
		set = append(set, e.build(en, e.endpointsOf(en.c)))
		e.index(en)
		return en
	}
	for _, i := range added {
		next[i] = place(next[i])
	}
	kept = slices.Clone(kept)
	slices.SortFunc(kept, func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) })
	nextKept := make([]*entry, 0, len(kept))
	for _, c := range kept {
		nextKept = append(nextKept, place(&entry{c: c}))
	}
	for name, en := range pool {
		e.unindex(en)
		delete(g.errs, name)
		g.leaving = append(g.leaving, name)
	}
	g.list, g.kept = next, nextKept
	if len(set) > 0 {
		e.sink.SetAssignments(name, set)
	}
	return func() { e.removeLeaving(g) }
}

// removeLeaving removes from the sink the load assignments of g's clusters
// that left, unless they came back meanwhile.
func (e *EDS) removeLeaving(g *group) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(g.leaving) == 0 || e.groups[g.name] != g {
		return
	}
	var gone []string
	for _, name := range g.leaving {
		if !g.has(name) && !slices.Contains(gone, name) {
			gone = append(gone, name)
		}
	}
	g.leaving = nil
	if len(gone) > 0 {
		slices.Sort(gone)
		e.sink.RemoveAssignments(g.name, gone)
	}
}

// has reports whether g serves a cluster named name.
func (g *group) has(name string) bool {
	if _, ok := slices.BinarySearchFunc(g.list, name, func(en *entry, n string) int { return strings.Compare(en.c.Name, n) }); ok {
		return true
	}
	return slices.ContainsFunc(g.kept, func(en *entry) bool { return en.c.Name == name })
}

// diff walks clusters alongside old, the entries served, both sorted by
// name. It returns the next list (old itself when nothing changed), with new
// entries, not yet built, at the places added; and the old entries that
// are not in it. An IR cluster that is old's very one at its place costs a
// comparison; another with the same Cluster keeps its entry. ok is false
// when clusters is not sorted by name (dedupe: a name repeated is skipped
// instead).
func diff(old []*entry, clusters []*ir.Cluster, dedupe bool) (next []*entry, added []int, left []*entry, ok bool) {
	j := 0
	for _, c := range clusters {
		if next == nil && j < len(old) && old[j].src == c {
			j++ // the same list so far
			continue
		}
		if next == nil {
			next = make([]*entry, j, len(clusters))
			copy(next, old[:j])
		}
		if n := len(next); n > 0 && next[n-1].c.Name >= c.Name {
			if dedupe && next[n-1].c.Name == c.Name {
				continue
			}
			return nil, nil, nil, false
		}
		if j < len(old) && old[j].src == c {
			next = append(next, old[j])
			j++
			continue
		}
		for j < len(old) && old[j].c.Name < c.Name {
			left = append(left, old[j])
			j++
		}
		cl := ClusterOf(c)
		if j < len(old) && old[j].c.Name == c.Name {
			o := old[j]
			j++
			if o.c == cl {
				o.src = c
				next = append(next, o)
				continue
			}
			left = append(left, o)
		}
		added = append(added, len(next))
		next = append(next, &entry{src: c, c: cl})
	}
	left = append(left, old[j:]...)
	if next == nil {
		next = old[:j:j]
	}
	return next, added, left, true
}

func sameKept(have []*entry, want []Cluster) bool {
	if len(have) != len(want) {
		return false
	}
	for _, c := range want {
		if !slices.ContainsFunc(have, func(en *entry) bool { return en.c == c }) {
			return false
		}
	}
	return true
}

func serviceOf(c Cluster) types.NamespacedName {
	return types.NamespacedName{Namespace: c.Service.Namespace, Name: c.Service.Name}
}

func (e *EDS) index(en *entry) {
	if en.c.Service.Name == "" {
		return
	}
	svc := serviceOf(en.c)
	e.users[svc] = append(e.users[svc], en)
}

func (e *EDS) unindex(en *entry) {
	if en.c.Service.Name == "" {
		return
	}
	svc := serviceOf(en.c)
	list := slices.DeleteFunc(slices.Clone(e.users[svc]), func(o *entry) bool { return o == en })
	if len(list) == 0 {
		delete(e.users, svc)
		return
	}
	e.users[svc] = list
}

// Forget stops serving group: its clusters leave the index, and nothing
// more goes to the sink for it.
func (e *EDS) Forget(group string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := e.groups[group]
	if g == nil {
		return
	}
	for _, en := range g.list {
		e.unindex(en)
	}
	for _, en := range g.kept {
		e.unindex(en)
	}
	delete(e.groups, group)
}

// Err says why load assignments of group were refused ("" when none is):
// the clusters keep their last good ones meanwhile.
func (e *EDS) Err(group string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := e.groups[group]
	if g == nil || len(g.errs) == 0 {
		return ""
	}
	names := make([]string, 0, len(g.errs))
	for name := range g.errs {
		names = append(names, name)
	}
	slices.Sort(names)
	errs := make([]error, len(names))
	for i, name := range names {
		errs[i] = fmt.Errorf("cluster load assignment %q: %w", name, g.errs[name])
	}
	return errors.Join(errs...).Error()
}
