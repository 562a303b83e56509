package server

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
	"time"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// typeCache serves ClusterLoadAssignments apart from the rest of a
// Gateway's config: each node group has a cache of its load assignments
// (assignments), which xds/endpoints feeds (it is the EDS's Sink), and every
// other type comes from the snapshot cache.
//
// A snapshot answers a state-of-the-world request with every resource the
// client asked for, so with the load assignments in the snapshot one
// endpoint change sent all of a Gateway's load assignments (10k at 10k
// routes) to every proxy, each response building and marshalling them all.
// The protocol lets EDS (and RDS) responses carry a subset (only listeners
// and clusters must be complete): assignments sends a state-of-the-world
// client only the load assignments that changed, and a delta client the
// same, with removals. Each load assignment is serialized once for all
// clients.
//
// Each group has its own cache, so a stream sees only its own Gateway's
// load assignments: the watch goes to the cache of the request's
// node.cluster, which the stream callbacks have already checked against the
// client certificate's Gateway.
type typeCache struct {
	cachev3.SnapshotCache
	// proxyless holds the snapshots of proxyless gRPC clients
	// (proxyless.go), by node group; it is not an ADS cache, so that it
	// answers a request for some of a type's resources.
	proxyless cachev3.SnapshotCache

	mu   sync.Mutex
	eds  map[string]*assignments
	made uint64 // caches made
}

// edsPrefix starts every load-assignment version of this process, so that a
// state-of-the-world client reconnecting from another process (or an
// earlier run) is answered in full.
var edsPrefix = func() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "eds-" + hex.EncodeToString(b[:]) + "-"
}()

func newTypeCache(snapshots cachev3.SnapshotCache) *typeCache {
	return &typeCache{SnapshotCache: snapshots, proxyless: cachev3.NewSnapshotCache(false, clusterHash{}, nil), eds: map[string]*assignments{}}
}

// endpoints returns group's load assignments, creating them.
func (c *typeCache) endpoints(group string) *assignments {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.eds[group]
	if a == nil {
		c.made++
		a = newAssignments(edsPrefix + strconv.FormatUint(c.made, 10) + "-")
		c.eds[group] = a
	}
	return a
}

func (c *typeCache) CreateWatch(req *cachev3.Request, sub cachev3.Subscription, out chan cachev3.Response) (func(), error) {
	if req.GetTypeUrl() == resourcev3.EndpointType {
		return c.endpoints(clusterHash{}.ID(req.GetNode())).createWatch(req, sub, out), nil
	}
	if isProxyless(req.GetNode().GetUserAgentName()) {
		return c.proxyless.CreateWatch(req, sub, out)
	}
	return c.SnapshotCache.CreateWatch(req, sub, out)
}

func (c *typeCache) CreateDeltaWatch(req *cachev3.DeltaRequest, sub cachev3.Subscription, out chan cachev3.DeltaResponse) (func(), error) {
	if req.GetTypeUrl() == resourcev3.EndpointType {
		return c.endpoints(clusterHash{}.ID(req.GetNode())).createDeltaWatch(req, sub, out), nil
	}
	if isProxyless(req.GetNode().GetUserAgentName()) {
		return c.proxyless.CreateDeltaWatch(req, sub, out)
	}
	return c.SnapshotCache.CreateDeltaWatch(req, sub, out)
}

// ClearSnapshot forgets a group's snapshots and load assignments.
func (c *typeCache) ClearSnapshot(group string) {
	c.SnapshotCache.ClearSnapshot(group)
	c.proxyless.ClearSnapshot(group)
	c.mu.Lock()
	a := c.eds[group]
	delete(c.eds, group)
	c.mu.Unlock()
	if a != nil {
		// Open watches on it see the load assignments go (delta clients
		// are told; state-of-the-world EDS has no removals).
		a.removeAll()
	}
}

// GetSnapshot returns group's snapshot with its load assignments, for
// reading (debugging, the config dump, a two-phase publish).
func (c *typeCache) GetSnapshot(group string) (cachev3.ResourceSnapshot, error) {
	return c.withEndpoints(c.SnapshotCache, group)
}

// proxylessSnapshot is GetSnapshot for group's proxyless clients.
func (c *typeCache) proxylessSnapshot(group string) (cachev3.ResourceSnapshot, error) {
	return c.withEndpoints(c.proxyless, group)
}

// withEndpoints returns group's snapshot in snapshots with its load
// assignments.
func (c *typeCache) withEndpoints(snapshots cachev3.SnapshotCache, group string) (cachev3.ResourceSnapshot, error) {
	snap, err := snapshots.GetSnapshot(group)
	if err != nil {
		return nil, err
	}
	s, ok := snap.(*cachev3.Snapshot)
	if !ok {
		return snap, nil
	}
	view := *s
	c.mu.Lock()
	a := c.eds[group]
	c.mu.Unlock()
	items := []types.Resource{}
	version := ""
	if a != nil {
		var list []*endpointv3.ClusterLoadAssignment
		list, version = a.current()
		for _, e := range list {
			items = append(items, e)
		}
	}
	view.Resources[cachev3.GetResponseType(resourcev3.EndpointType)] = cachev3.NewResources(version, items)
	return &view, nil
}

// watches counts the open EDS watches, over every group.
func (c *typeCache) watches() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, a := range c.eds {
		n += a.watches()
	}
	return n
}

// SetAssignments sets group's load assignments of the clusters in list
// (endpoints.Sink: xds/endpoints builds and validates them).
func (c *typeCache) SetAssignments(group string, list []*endpointv3.ClusterLoadAssignment) {
	c.endpoints(group).put(list)
}

// RemoveAssignments removes group's load assignments of names
// (endpoints.Sink).
func (c *typeCache) RemoveAssignments(group string, names []string) {
	c.endpoints(group).remove(names)
}

// edsVersion is the version group's load assignments are served at, and
// when they last changed.
func (c *typeCache) edsVersion(group string) (string, time.Time) {
	c.mu.Lock()
	a := c.eds[group]
	c.mu.Unlock()
	if a == nil {
		return "", time.Time{}
	}
	return a.versionAt()
}
