package server

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr"

	"github.com/shardgate/shardgate/xds/translate"
)

// typeCache serves ClusterLoadAssignments apart from the rest of a
// Gateway's config: each node group has a go-control-plane LinearCache of
// its load assignments, and every other type comes from the snapshot cache.
//
// A snapshot answers a state-of-the-world request with every resource the
// client asked for, so with the load assignments in the snapshot one
// endpoint change sent all of a Gateway's load assignments (10k at 10k
// routes) to every proxy, each response building and marshalling them all.
// A LinearCache sends a state-of-the-world EDS client only the load
// assignments that changed (the protocol lets EDS and RDS responses carry a
// subset; only listeners and clusters must be complete), and a delta client
// the same, with removals; each load assignment is serialized once for all
// clients. The snapshot's content versions no longer hash every load
// assignment either.
//
// Each group has its own LinearCache, so a stream sees only its own
// Gateway's load assignments: the watch goes to the cache of the request's
// node.cluster, which the stream callbacks have already checked against the
// client certificate's Gateway.
type typeCache struct {
	cachev3.SnapshotCache
	log logr.Logger

	mu   sync.Mutex
	eds  map[string]*groupEndpoints
	made uint64 // caches made
}

// groupEndpoints is one node group's load assignments.
type groupEndpoints struct {
	cache *cachev3.LinearCache
	// prefix starts the cache's versions: edsPrefix and a number of its
	// own, so that no two caches (a Gateway deleted and created again)
	// serve the same version.
	prefix string
	// updates counts the cache's updates: its version is prefix and this
	// count (each UpdateResources adds one).
	updates uint64
	// applied is the list last applied, sorted by cluster name.
	applied []*endpointv3.ClusterLoadAssignment
}

// edsPrefix starts every load-assignment version of this process, so that a
// state-of-the-world client reconnecting from another process (or an
// earlier run) is answered in full.
var edsPrefix = func() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "eds-" + hex.EncodeToString(b[:]) + "-"
}()

func newTypeCache(snapshots cachev3.SnapshotCache, log logr.Logger) *typeCache {
	return &typeCache{SnapshotCache: snapshots, log: log, eds: map[string]*groupEndpoints{}}
}

// endpoints returns group's load assignments, creating them.
func (c *typeCache) endpoints(group string) *groupEndpoints {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.eds[group]
	if g == nil {
		c.made++
		prefix := edsPrefix + strconv.FormatUint(c.made, 10) + "-"
		g = &groupEndpoints{prefix: prefix, cache: cachev3.NewLinearCache(resourcev3.EndpointType, cachev3.WithVersionPrefix(prefix), cachev3.WithLogger(edsLog{c.log}))}
		c.eds[group] = g
	}
	return g
}

// version is the cache's current version.
func (g *groupEndpoints) version() string {
	return g.prefix + strconv.FormatUint(g.updates, 10)
}

func (c *typeCache) CreateWatch(req *cachev3.Request, sub cachev3.Subscription, out chan cachev3.Response) (func(), error) {
	if req.GetTypeUrl() == resourcev3.EndpointType {
		return c.endpoints(clusterHash{}.ID(req.GetNode())).cache.CreateWatch(req, sub, out)
	}
	return c.SnapshotCache.CreateWatch(req, sub, out)
}

func (c *typeCache) CreateDeltaWatch(req *cachev3.DeltaRequest, sub cachev3.Subscription, out chan cachev3.DeltaResponse) (func(), error) {
	if req.GetTypeUrl() == resourcev3.EndpointType {
		return c.endpoints(clusterHash{}.ID(req.GetNode())).cache.CreateDeltaWatch(req, sub, out)
	}
	return c.SnapshotCache.CreateDeltaWatch(req, sub, out)
}

// ClearSnapshot forgets a group's snapshot and load assignments.
func (c *typeCache) ClearSnapshot(group string) {
	c.SnapshotCache.ClearSnapshot(group)
	c.mu.Lock()
	g := c.eds[group]
	delete(c.eds, group)
	c.mu.Unlock()
	if g != nil && len(g.applied) > 0 {
		// Open watches on it see the load assignments go (delta clients
		// are told; state-of-the-world EDS has no removals).
		_ = g.cache.UpdateResources(nil, names(g.applied))
	}
}

// GetSnapshot returns group's snapshot with its load assignments, for
// reading (debugging, the config dump, a two-phase publish).
func (c *typeCache) GetSnapshot(group string) (cachev3.ResourceSnapshot, error) {
	snap, err := c.SnapshotCache.GetSnapshot(group)
	if err != nil {
		return nil, err
	}
	s, ok := snap.(*cachev3.Snapshot)
	if !ok {
		return snap, nil
	}
	view := *s
	c.mu.Lock()
	g := c.eds[group]
	c.mu.Unlock()
	items := []types.Resource{}
	version := ""
	if g != nil {
		for _, e := range g.applied {
			items = append(items, e)
		}
		version = g.version()
	}
	view.Resources[cachev3.GetResponseType(resourcev3.EndpointType)] = cachev3.NewResources(version, items)
	return &view, nil
}

// watches counts the open EDS watches, over every group.
func (c *typeCache) watches() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, g := range c.eds {
		n += g.cache.NumCacheWatches()
	}
	return n
}

// applyEndpoints makes next, sorted by cluster name, group's load
// assignments, and returns the version they are served at. The load
// assignments that are not the last applied list's very messages are
// updated at once, before the caller publishes the clusters that use them;
// remove, called after, takes away those next lacks (the clusters that used
// them are gone by then). Publishes of a group are serialized by the
// caller.
func (c *typeCache) applyEndpoints(group string, next []*endpointv3.ClusterLoadAssignment) (version string, remove func()) {
	g := c.endpoints(group)
	if g.applied != nil && translate.SameList(g.applied, next) {
		return g.version(), func() {}
	}
	update, gone := diffAssignments(g.applied, next)
	g.applied = next
	if len(update) > 0 {
		g.updates++
		// It fails only to compute a version, which it does lazily.
		if err := g.cache.UpdateResources(update, nil); err != nil {
			c.log.Error(err, "update load assignments", "group", group)
		}
	}
	return g.version(), func() {
		if len(gone) == 0 {
			return
		}
		g.updates++
		if err := g.cache.UpdateResources(nil, gone); err != nil {
			c.log.Error(err, "remove load assignments", "group", group)
		}
	}
}

// diffAssignments returns the load assignments of next that are not prev's
// very message under the same name, and the names prev has and next lacks.
// Both lists sorted by cluster name (as translation sorts them) are walked
// together, so an unchanged entry costs a pointer comparison; unsorted
// lists are compared through maps.
func diffAssignments(prev, next []*endpointv3.ClusterLoadAssignment) (update map[string]types.Resource, gone []string) {
	update = map[string]types.Resource{}
	byName := func(a, b *endpointv3.ClusterLoadAssignment) int {
		return strings.Compare(a.GetClusterName(), b.GetClusterName())
	}
	if !slices.IsSortedFunc(prev, byName) || !slices.IsSortedFunc(next, byName) {
		old := make(map[string]*endpointv3.ClusterLoadAssignment, len(prev))
		for _, e := range prev {
			old[e.GetClusterName()] = e
		}
		for _, e := range next {
			if old[e.GetClusterName()] != e {
				update[e.GetClusterName()] = e
			}
			delete(old, e.GetClusterName())
		}
		for name := range old {
			gone = append(gone, name)
		}
		slices.Sort(gone)
		return update, gone
	}
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
			cmp = byName(prev[i], next[j])
		}
		switch {
		case cmp < 0:
			gone = append(gone, prev[i].GetClusterName())
			i++
		default:
			update[next[j].GetClusterName()] = next[j]
			j++
			if cmp == 0 {
				i++
			}
		}
	}
	return update, gone
}

func names(list []*endpointv3.ClusterLoadAssignment) []string {
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.GetClusterName()
	}
	return out
}

// edsLog passes on a LinearCache's warnings and errors; its Debug and Info
// lines (every watch it answers, every wake-up with nothing to send) are
// dropped.
type edsLog struct{ log logr.Logger }

func (edsLog) Debugf(string, ...any) {}
func (edsLog) Infof(string, ...any)  {}
func (l edsLog) Warnf(format string, args ...any) {
	l.log.Info(fmt.Sprintf(format, args...), "cache", "eds")
}
func (l edsLog) Errorf(format string, args ...any) {
	l.log.Error(fmt.Errorf(format, args...), "load assignment cache", "cache", "eds")
}
