/*
Copyright The shardgate Authors.
*/

package build

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/xds/translate"
)

// Digest identifies a resource's content (translate.Digest). A route
// configuration that passed a Checker is identified by the content
// generation of its table instead (see Checker).
type Digest = translate.Digest

// Checker is Validate with a memory, for a config that is published again
// and again with small changes. It checks what changed since its last
// successful check and keeps the rest, so a one-route change costs one
// virtual host's validation and serialization, whatever the size of the
// config:
//
//   - Each resource is validated once per content: a message whose
//     serialization passed before is not validated again.
//   - Route configurations are checked per virtual host. A table's virtual
//     hosts are compared with the previous check's by identity (in order,
//     as the IR sorts them; Memo returns the very same message
//     for an unchanged host), and only new ones are serialized, validated
//     and indexed.
//   - The referential checks are kept incrementally: route references to
//     clusters are counted, so a new reference is looked up once and a
//     changed cluster list is checked against the referenced names; the
//     duplicate-name and duplicate-domain checks keep counts per table.
//     Listeners (few) are checked in full.
//
// A check that passes replaces each route configuration in the Resources
// with its wire form (WireRouteConfiguration): the checked serialization of
// its virtual hosts, concatenated, so that publishing never serializes a
// table again and the bytes sent are the bytes checked. Clusters and load
// assignments are replaced by theirs too (wire.go): a response that carries
// every one of them copies their checked bytes.
//
// A refused check forgets the incremental state: the next check is a full
// one. A Checker is not safe for concurrent use.
type Checker struct {
	epoch uint64
	// passed: digests that passed validation, with the check that last
	// saw them.
	passed map[Digest]uint64
	// known is the digest of every message (other than route tables)
	// seen, by message: messages are never modified once built
	// (translate.Memo shares them between translations). A message that
	// has a wire form (wire) is known by its wire form alone.
	known map[proto.Message]knownDigest
	// tables: the state of each route configuration, by name.
	tables map[string]*tableState
	// refs counts, per cluster name, the route references to it.
	refs map[string]int
	// clusterSet is the names of the last check's clusters;
	// sortedClusters, whether that check's clusters were sorted by name
	// (their names then strictly increase: a check that passed found them
	// unique).
	clusterSet     map[string]bool
	sortedClusters bool
	// wires: the digest of each wire route configuration published.
	wires map[*routev3.RouteConfiguration]Digest
	// wire: the wire form of each checked cluster (wire.go), by message,
	// until the memo that built the message adopts the wire form
	// (Memo.adopt); known holds each wire form's digest.
	wire map[proto.Message]proto.Message
	// wireGrown: wire took entries since it was last made (see adopted).
	wireGrown bool
	// facts: the facts of each wire cluster, read from its message when
	// it was checked (a wire form shows only its name).
	facts map[proto.Message]translate.ClusterFacts
	// sockets: the clusters of the last check whose transport sockets
	// name secrets or cannot be read (few), by name, kept with the
	// cluster set, so that secret references are checked without a walk
	// of every cluster.
	sockets map[string]translate.ClusterFacts

	// Validated is how many messages the last check validated (the rest
	// passed before).
	Validated int
	// Encoded is how many bytes the last check serialized.
	Encoded int

	// The clusters of the last check, when it passed: the same list
	// again is not walked message by message; and their wire forms,
	// published for them.
	lastClusters     []*clusterv3.Cluster
	lastWireClusters []*clusterv3.Cluster
	// lastClusterDigests are the digests of lastWireClusters, in order
	// (nil when one is not known), so that versioning the cluster list
	// looks up no message.
	lastClusterDigests []Digest
	// lastBuilt: the virtual hosts the last check that passed serialized
	// (see wireVhosts).
	lastBuilt []builtVhost
	// The listeners the last check that passed found referring to what
	// exists, by name, and the route configuration and secret names it
	// checked them against: a listener that is the same message again
	// cannot refer to anything missing unless one of those names went (or
	// a cluster). An HTTPS listener of a shard with automatic HTTPS has a
	// filter chain per name, which a route change leaves alone.
	lastListeners               map[string]*listenerv3.Listener
	lastRouteNames, lastSecrets map[string]bool
	// The route tables the last check that passed was given, and their
	// wire forms, in order; routeSet, their names (lastRouteNames),
	// updated in place by the next check (checker_tables.go). The
	// secrets that check was given.
	lastRoutesIn, lastRoutesWire []*routev3.RouteConfiguration
	routeSet                     map[string]bool
	// lastRouteDigests are the digests of lastRoutesWire, in order (nil
	// when one is not known); routesSorted, whether their names strictly
	// increase.
	lastRouteDigests []Digest
	routesSorted     bool
	lastSecretList   []*tlsv3.Secret
	// vhosts counts the virtual hosts of tables; looked, the route
	// tables the last check looked at.
	vhosts, looked int
}

type knownDigest struct {
	d     Digest
	epoch uint64
}

// generation numbers every content of every route table of the process, so
// that a table's version changes exactly when its content does; nonce sets
// this process apart from others serving the same Gateway.
var (
	generation atomic.Uint64
	nonce      = func() (b [8]byte) {
		_, _ = rand.Read(b[:])
		return b
	}()
)

// Check validates r like Validate. On success each route configuration of
// r is replaced by its wire form, and Digest gives the digest of every
// resource in r.
func (c *Checker) Check(r *translate.Resources) error {
	if c.known == nil || c.tables == nil {
		c.reset()
	}
	c.epoch++
	c.Validated, c.Encoded, c.looked = 0, 0, 0
	c.lastBuilt = nil
	e := &checkRun{c: c, opts: proto.MarshalOptions{Deterministic: true}}
	for _, l := range r.Listeners {
		e.listener(l)
	}
	// Clusters: only the messages that are not the last check's, at their
	// place, are checked; the name checks run again only when the names
	// changed.
	clusterNames := c.lastClusters != nil && SameList(r.Clusters, c.lastClusters)
	if !clusterNames {
		clusterNames = walkChanged(r.Clusters, c.lastClusters, (*clusterv3.Cluster).GetName, func(cl *clusterv3.Cluster) {
			e.one("cluster", cl.GetName(), cl)
			c.indexSockets(cl)
		})
	}
	secrets, sameSecrets := e.secretList(r)
	var removedClusters []string
	sameClusters := clusterNames // the names routes refer to
	if !clusterNames {
		var ok bool
		if removedClusters, ok = c.clusterIndex(r); ok {
			c.sortedClusters = true
			// The set was updated in place: only references to the
			// removed names can have broken.
			sameClusters = true
			e.newRefs = append(e.newRefs, removedClusters...)
		} else {
			c.clusterSet = translate.UniqueNames("cluster", len(r.Clusters), func(i int) string { return r.Clusters[i].GetName() }, e.fail)
			clear(c.sockets)
			for _, cl := range r.Clusters {
				c.indexSockets(cl)
			}
			c.sortedClusters = slices.IsSortedFunc(r.Clusters, func(a, b *clusterv3.Cluster) int { return strings.Compare(a.GetName(), b.GetName()) })
		}
	}
	// Route tables, virtual host by virtual host: those that changed.
	wires, routes, routesRemoved := e.routeTables(r)
	// Route references to clusters: every newly referenced name, or all
	// of them when the clusters changed.
	if !sameClusters {
		for name, n := range c.refs {
			if n > 0 && !translate.ClusterExists(c.clusterSet, name) {
				e.fail("%s: cluster %q not found", c.referrer(name), name)
			}
		}
	} else {
		for _, name := range e.newRefs {
			if c.refs[name] > 0 && !translate.ClusterExists(c.clusterSet, name) {
				e.fail("%s: cluster %q not found", c.referrer(name), name)
			}
		}
	}
	// Listeners, in full: they are few.
	translate.UniqueNames("listener", len(r.Listeners), func(i int) string { return r.Listeners[i].GetName() }, e.fail)
	kept := (clusterNames || sameClusters && len(removedClusters) == 0) && c.lastListeners != nil &&
		!routesRemoved && (sameSecrets || noneRemoved(c.lastSecrets, secrets))
	for _, l := range r.Listeners {
		last := c.lastListeners[l.GetName()]
		if kept && last == l {
			continue
		}
		var known func(*listenerv3.FilterChain) bool
		if kept && last != nil && len(l.GetFilterChains()) >= chainwiseListener {
			// The chains of the listener that passed last resolved
			// then, and nothing they may name went.
			old := chainSet(last)
			known = func(fc *listenerv3.FilterChain) bool { return old[fc] }
		}
		e.errs = append(e.errs, translate.ListenerReferencesBut(l, c.clusterSet, routes, secrets, known)...)
	}
	for _, name := range slices.Sorted(maps.Keys(c.sockets)) {
		e.errs = append(e.errs, translate.SocketErrors(name, c.sockets[name], secrets)...)
	}
	c.prune(r, e.touched+2*len(r.Clusters)) // each with its wire form
	if len(e.errs) > 0 {
		c.reset()
		return errors.Join(e.errs...)
	}
	c.lastRoutesIn = append(c.lastRoutesIn[:0:0], r.Routes...)
	c.lastRouteDigests = c.routeDigests(wires)
	c.lastRoutesWire = wires
	c.routesSorted = e.routesSorted
	c.routeSet = routes
	c.lastSecretList = r.Secrets
	copy(r.Routes, wires)
	c.lastBuilt = e.built
	c.lastListeners = make(map[string]*listenerv3.Listener, len(r.Listeners))
	for _, l := range r.Listeners {
		c.lastListeners[l.GetName()] = l
	}
	c.lastRouteNames, c.lastSecrets = routes, secrets
	clusters := r.Clusters
	if !SameList(clusters, c.lastClusters) || c.lastWireClusters == nil {
		c.lastWireClusters, c.lastClusterDigests = wireList(c, clusters, c.lastClusters, c.lastWireClusters, c.lastClusterDigests, (*clusterv3.Cluster).GetName, true)
	}
	c.lastClusters = clusters
	r.Clusters = c.lastWireClusters
	return nil
}

// clusterIndex is the cluster name check for a check whose cluster names
// changed, done from the last check's list, which passed: sorted by name
// (so its names strictly increase). It walks the new list alongside the
// last (sortedChanges), comparing names only at the elements that are not
// the last check's very messages. The cluster set is updated in place. It
// returns the names that left the set, and false, having changed nothing,
// when the list is not sorted (or nothing was checked before): the caller
// then checks every name, and reports what is wrong.
func (c *Checker) clusterIndex(r *translate.Resources) (removed []string, ok bool) {
	if c.lastClusters == nil || c.clusterSet == nil || !c.sortedClusters {
		return nil, false
	}
	clusters, ok := sortedChanges(c.lastClusters, r.Clusters, (*clusterv3.Cluster).GetName)
	if !ok {
		return nil, false
	}
	for _, name := range clusters.gone {
		delete(c.clusterSet, name)
		delete(c.sockets, name)
	}
	for _, i := range clusters.changed {
		c.clusterSet[r.Clusters[i].GetName()] = true
	}
	return clusters.gone, true
}

// sortedDiff is what a list changed from the last: the places in the new
// list of the elements that are not the last list's very messages (new
// ones, and replacements under a name the last list had), in order, and
// the names of the last list that the new one lacks.
type sortedDiff struct {
	changed []int
	gone    []string
}

// sortedChanges walks next alongside prev, whose names strictly increase,
// and reports what changed, and whether next's names strictly increase
// too. Names are compared only at the elements that are not prev's very
// messages at the walk's place; each of those must be greater than the
// element before it. That covers every neighbouring pair: two of prev's
// messages come in prev's order (the walk only goes forward), and one of
// prev's that follows another element is either at the walk's place,
// beyond every name the walk skipped and so greater than that element, or
// no longer at the walk's place and compared as any other.
func sortedChanges[T comparable](prev, next []T, name func(T) string) (d sortedDiff, ok bool) {
	i := 0
	for j, m := range next {
		if i < len(prev) && m == prev[i] {
			i++
			continue
		}
		n := name(m)
		for i < len(prev) && name(prev[i]) < n {
			d.gone = append(d.gone, name(prev[i]))
			i++
		}
		if i < len(prev) && m == prev[i] {
			i++
			continue // prev's, after some that are gone
		}
		if n == "" || j > 0 && name(next[j-1]) >= n {
			return sortedDiff{}, false
		}
		if i < len(prev) && name(prev[i]) == n {
			i++ // replaced
		}
		d.changed = append(d.changed, j)
	}
	for ; i < len(prev); i++ {
		d.gone = append(d.gone, name(prev[i]))
	}
	return d, true
}

// DiffSorted walks prev and next, both sorted by name, together: it calls
// gone for each element of prev whose name next lacks, and changed for each
// element of next that is not prev's very element under its name (replaced
// says prev had the name). An element that is prev's at the same place
// costs a comparison. It stops at changed's first error.
func DiffSorted[T comparable](prev, next []T, name func(T) string, gone func(T), changed func(e T, replaced bool) error) error {
	i, j := 0, 0
	for i < len(prev) || j < len(next) {
		if i < len(prev) && j < len(next) && prev[i] == next[j] {
			i++
			j++
			continue
		}
		cmp := 1 // only next left
		switch {
		case j == len(next):
			cmp = -1
		case i < len(prev):
			cmp = strings.Compare(name(prev[i]), name(next[j]))
		}
		if cmp < 0 {
			gone(prev[i])
			i++
			continue
		}
		if err := changed(next[j], cmp == 0); err != nil {
			return err
		}
		j++
		if cmp == 0 {
			i++
		}
	}
	return nil
}

// wireList returns the wire form of each message of list (the message
// itself where it has none), in order, and with digests set their digests
// (nil when one is not known). prevWire and prevDigests are those of prev:
// an entry that is one of prev's very messages keeps its wire form and
// digest, and only the others are looked up. Entries are matched by place
// when list has prev's length, and otherwise by a walk of both lists by
// name (the translation sorts them by name; were they not sorted, only
// fewer entries would be matched).
func wireList[T interface {
	comparable
	proto.Message
}](c *Checker, list, prev, prevWire []T, prevDigests []Digest, name func(T) string, digests bool) ([]T, []Digest) {
	if len(prevWire) != len(prev) || digests && len(prevDigests) != len(prev) {
		prev = nil // nothing to match against
	}
	out := make([]T, len(list))
	var ds []Digest
	if digests {
		ds = make([]Digest, len(list))
	}
	fresh := func(i int, m T) {
		w := wireFor(c, m)
		out[i] = w
		if ds == nil {
			return
		}
		k, ok := c.known[proto.Message(w)]
		if !ok {
			ds = nil
			return
		}
		ds[i] = k.d
	}
	if len(list) == len(prev) {
		copy(out, prevWire)
		if ds != nil {
			copy(ds, prevDigests)
		}
		for i, m := range list {
			if m != prev[i] {
				fresh(i, m)
			}
		}
		return out, ds
	}
	j := 0
	for i, m := range list {
		if j < len(prev) && m != prev[j] {
			for n := name(m); j < len(prev) && name(prev[j]) < n; j++ {
			}
		}
		if j < len(prev) && m == prev[j] {
			out[i] = prevWire[j]
			if ds != nil {
				ds[i] = prevDigests[j]
			}
			j++
			continue
		}
		fresh(i, m)
	}
	return out, ds
}

// wireFor is m's wire form, or m where it has none.
func wireFor[T proto.Message](c *Checker, m T) T {
	if w, ok := c.wire[m].(T); ok {
		return w
	}
	return m
}

// SameList reports whether a and b hold the same messages in the same
// order; the very same list is recognised without a walk.
func SameList[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	return slices.Equal(a, b)
}

// walkChanged calls changed for each element of next that is not prev's
// very message at its place (both lists sorted by name), and reports
// whether next has prev's names at the same places. A nil prev (nothing
// checked before) has no names.
func walkChanged[T comparable](next, prev []T, name func(T) string, changed func(T)) (sameNames bool) {
	if len(next) == len(prev) && prev != nil {
		sameNames = true
		for i := range next {
			if next[i] != prev[i] {
				changed(next[i])
				sameNames = sameNames && name(next[i]) == name(prev[i])
			}
		}
		return sameNames
	}
	j := 0
	for i := range next {
		if j < len(prev) && next[i] == prev[j] {
			j++
			continue
		}
		for j < len(prev) && name(prev[j]) < name(next[i]) {
			j++
		}
		if j < len(prev) && name(prev[j]) == name(next[i]) {
			j++
		}
		changed(next[i])
	}
	return false
}

// reset forgets everything incremental: the next check is a full one.
func (c *Checker) reset() {
	if c.passed == nil {
		c.passed, c.known = map[Digest]uint64{}, map[proto.Message]knownDigest{}
	}
	c.tables, c.refs, c.clusterSet = map[string]*tableState{}, map[string]int{}, map[string]bool{}
	c.sockets = map[string]translate.ClusterFacts{}
	c.lastBuilt = nil
	c.lastListeners, c.lastRouteNames, c.lastSecrets = nil, nil, nil
	c.lastRoutesIn, c.lastRoutesWire, c.routeSet, c.lastSecretList = nil, nil, nil, nil
	c.lastRouteDigests, c.routesSorted = nil, false
	c.vhosts = 0
	c.sortedClusters = false
	c.wires = map[*routev3.RouteConfiguration]Digest{}
	c.lastClusters = nil
	c.lastWireClusters, c.lastClusterDigests = nil, nil
	if c.wire == nil {
		c.wire = map[proto.Message]proto.Message{}
		c.facts = map[proto.Message]translate.ClusterFacts{}
	}
}

// prune forgets, once the maps hold more than twice what this check used,
// what this check did not see. (After a refusal too: what passed stays
// known, and the caller sends the last good config or a fix next.)
func (c *Checker) prune(r *translate.Resources, used int) {
	used += c.vhosts
	if len(c.known)+len(c.wire) > 2*used+1024 { // the wire forms not adopted count too
		// The messages this check kept without looking at them are
		// still in use: their digests stay.
		for _, cl := range r.Clusters {
			c.touch(cl)
		}
		for _, s := range r.Secrets {
			c.touch(s)
		}
		for m, k := range c.known {
			if k.epoch != c.epoch {
				delete(c.known, m)
				delete(c.facts, m)
			}
		}
		for m, w := range c.wire {
			if _, ok := c.known[w]; !ok {
				delete(c.wire, m)
			}
		}
	}
	if len(c.passed) > 2*used+1024 {
		for d, ep := range c.passed {
			if ep != c.epoch {
				delete(c.passed, d)
			}
		}
	}
	if len(c.wires) > 2*len(c.tables)+16 {
		live := make(map[*routev3.RouteConfiguration]bool, len(c.tables))
		for _, ts := range c.tables {
			live[ts.wire] = true
		}
		for w := range c.wires {
			if !live[w] {
				delete(c.wires, w)
			}
		}
	}
}

// touch marks a known message as used by this check.
func (c *Checker) touch(m proto.Message) {
	if k, ok := c.known[m]; ok && k.epoch != c.epoch {
		c.known[m] = knownDigest{d: k.d, epoch: c.epoch}
	}
	if w := c.wire[m]; w != nil {
		if k, ok := c.known[w]; ok && k.epoch != c.epoch {
			c.known[w] = knownDigest{d: k.d, epoch: c.epoch}
		}
	}
}

// ClusterDigests returns the digests of the clusters of the last check
// that passed, in order, when list is that check's cluster list (its wire
// forms, as Check left them in Resources).
func (c *Checker) ClusterDigests(list []*clusterv3.Cluster) ([]Digest, bool) {
	if c.lastClusterDigests == nil || !SameList(list, c.lastWireClusters) {
		return nil, false
	}
	return c.lastClusterDigests, true
}

// ClustersSorted reports, when list is the cluster list of the last check
// that passed (known), whether its names strictly increase.
func (c *Checker) ClustersSorted(list []*clusterv3.Cluster) (sorted, known bool) {
	if c.lastWireClusters == nil || !SameList(list, c.lastWireClusters) {
		return false, false
	}
	return c.sortedClusters, true
}

// Digest returns the digest of a resource of the last check.
func (c *Checker) Digest(m proto.Message) (Digest, bool) {
	if rc, ok := m.(*routev3.RouteConfiguration); ok {
		d, ok := c.wires[rc]
		return d, ok // only the wire forms of checked tables are known
	}
	if w, ok := c.wire[m]; ok {
		m = w
	}
	k, ok := c.known[m]
	return k.d, ok
}

// adopted forgets the wire map once no message in it is left (the memo
// adopted every wire form): a map keeps its room, and the room a whole
// config's clusters took would stay.
func (c *Checker) adopted() {
	if c.wireGrown && len(c.wire) == 0 {
		c.wire, c.wireGrown = map[proto.Message]proto.Message{}, false
	}
}

// clusterFacts returns a cluster's facts: read from the message, or for a
// wire form those its message had when it was checked, or (forgotten)
// read from its decoded serialization.
func (c *Checker) clusterFacts(cl *clusterv3.Cluster) translate.ClusterFacts {
	if len(cl.ProtoReflect().GetUnknown()) == 0 {
		return translate.FactsOf(cl)
	}
	if f, ok := c.facts[cl]; ok {
		return f
	}
	full, err := translate.Decode(cl)
	if err != nil {
		return translate.ClusterFacts{Socket: err}
	}
	f := translate.FactsOf(full.(*clusterv3.Cluster))
	c.facts[cl] = f
	return f
}

// ClusterSecrets returns the SDS secrets a cluster's upstream TLS context
// names, or why its transport socket cannot be read; a wire form's facts
// are those its message had when it was checked.
func (c *Checker) ClusterSecrets(cl *clusterv3.Cluster) ([]string, error) {
	if c.facts == nil {
		c.reset()
	}
	f := c.clusterFacts(cl)
	if f.Socket != nil {
		return nil, fmt.Errorf("cluster %q: transport socket: %w", cl.GetName(), f.Socket)
	}
	return f.Secrets, nil
}

// indexSockets records whether a changed cluster's transport socket needs
// checking (see Checker.sockets).
func (c *Checker) indexSockets(cl *clusterv3.Cluster) {
	if f := c.clusterFacts(cl); f.Sockets() {
		c.sockets[cl.GetName()] = f
	} else {
		delete(c.sockets, cl.GetName())
	}
}

// checkRun is one Check's working state.
type checkRun struct {
	c       *Checker
	opts    proto.MarshalOptions
	buf     []byte
	errs    []error
	touched int
	newRefs []string
	// built: the virtual hosts this check serialized, by table and place.
	built []builtVhost
	// routesSorted: the route tables' names were found to strictly
	// increase (routeTables).
	routesSorted bool
}

// builtVhost is a virtual host a check serialized: messages[i] of table
// ts.
type builtVhost struct {
	ts *tableState
	i  int
}

func (e *checkRun) fail(format string, args ...any) {
	e.errs = append(e.errs, fmt.Errorf(format, args...))
}

// digest serializes m (unless it is known) and returns its digest.
func (e *checkRun) digest(m proto.Message) (Digest, error) {
	c := e.c
	e.touched++
	if w, ok := c.wire[m]; ok {
		m = w // known by its wire form
	}
	if k, ok := c.known[m]; ok {
		if k.epoch != c.epoch {
			c.known[m] = knownDigest{d: k.d, epoch: c.epoch}
		}
		return k.d, nil
	}
	var err error
	e.buf, err = e.opts.MarshalAppend(e.buf[:0], m)
	if err != nil {
		return Digest{}, err
	}
	c.Encoded += len(e.buf)
	d := sha256.Sum256(e.buf)
	if w := wireOf(m, e.buf); w != nil {
		c.wire[m] = w
		c.wireGrown = true
		c.known[w] = knownDigest{d: d, epoch: c.epoch}
		if cl, ok := m.(*clusterv3.Cluster); ok {
			c.facts[w] = translate.FactsOf(cl)
		}
		return d, nil
	}
	c.known[m] = knownDigest{d: d, epoch: c.epoch}
	return d, nil
}

// validate validates m, whose serialization has digest d, unless d passed
// before.
func (e *checkRun) validate(d Digest, m proto.Message) error {
	c := e.c
	if ep, ok := c.passed[d]; ok {
		if ep != c.epoch {
			c.passed[d] = c.epoch
		}
		return nil
	}
	c.Validated++
	if len(m.ProtoReflect().GetUnknown()) > 0 {
		// A wire form (a memo hands out those a check passed, see
		// Memo.adopt) whose digest was forgotten: its content is
		// validated, not the one field it knows.
		full, err := translate.Decode(m)
		if err != nil {
			return err
		}
		m = full
	}
	if err := translate.ValidateMessage(m); err != nil {
		return err
	}
	c.passed[d] = c.epoch
	return nil
}

func (e *checkRun) one(kind, name string, m proto.Message) {
	d, err := e.digest(m)
	if err != nil {
		e.fail("%s %q: serialize: %w", kind, name, err)
		return
	}
	if err := e.validate(d, m); err != nil {
		e.fail("%s %q: %w", kind, name, err)
	}
}

// wireDigest identifies a table content generation.
func wireDigest(gen uint64) Digest {
	var b [16]byte
	copy(b[:8], nonce[:])
	binary.BigEndian.PutUint64(b[8:], gen)
	return sha256.Sum256(b[:])
}

// DigestOf is translate.DigestOf (for a wire route configuration, the
// digest of what is sent).
func DigestOf(m proto.Message) (Digest, error) { return translate.DigestOf(m) }
