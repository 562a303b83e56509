package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/build"
	"github.com/shardgate/shardgate/xds/endpoints"
	"github.com/shardgate/shardgate/xds/translate"
)

// gatewayState is everything the server keeps for one Gateway (node group).
//
// memo, checker, last, live and retired belong to the build lock
// (Server.build); published, refused and pending are read by the streams'
// callbacks too, and are guarded by Server.mu.
type gatewayState struct {
	group string
	// memo and checker remember the previous translation and validation,
	// so that a small change costs a small translation and check.
	memo    *build.Memo
	checker *build.Checker
	// last is the IR last published, built again when a retained cluster
	// expires.
	last *ir.Gateway
	// liveList are the clusters of the last config built (liveCluster
	// finds one); retired, those that left it less than RetainRemoved
	// ago. A retired cluster stays published, with its load assignment
	// (xds/endpoints keeps serving it), referenced by routes that never
	// match, so that no proxy sees a route still pointing at a deleted
	// cluster (clusters reach proxies before the routes that stop using
	// them) and proxyless clients keep its balancer.
	liveList []*clusterv3.Cluster
	retired  map[string]keptCluster
	built    bool // a config was built (remember)
	// irClusters is the IR cluster list the last config was built from.
	irClusters []*ir.Cluster
	// expiry calls onExpire when the first retired cluster expires.
	expiry   *time.Timer
	onExpire func()

	published *published      // the snapshot in force
	refused   string          // why the latest config was refused ("" if it was not)
	pending   *pendingPublish // phase two of a two-phase publish (twophase.go)
	stopped   bool            // the Gateway is no longer served
}

type keptCluster struct {
	cluster *clusterv3.Cluster
	// eds is what its load assignment is made of.
	eds   endpoints.Cluster
	until time.Time
	// secrets are the SDS secrets the cluster's upstream TLS context
	// names: it is retained only while the config has them.
	secrets []string
}

type published struct {
	res      *translate.Resources
	versions map[string]string // type URL → version (load assignments: eds.go)
	snap     *cachev3.Snapshot
	lists    typeLists
	eds      edsClusters
	at       time.Time
}

// edsClusters are the clusters whose load assignments a config needs, as
// xds/endpoints serves them: those of the IR, and the retained ones.
type edsClusters struct {
	ir   []*ir.Cluster
	kept []endpoints.Cluster
}

// same reports whether a and b need the same load assignments.
func (a edsClusters) same(b edsClusters) bool {
	return slices.Equal(a.kept, b.kept) && slices.EqualFunc(a.ir, b.ir, func(x, y *ir.Cluster) bool {
		return x == y || endpoints.ClusterOf(x) == endpoints.ClusterOf(y)
	})
}

// typeLists are a config's resources by type URL, in order, and which of
// those lists are sorted by name (sortedByName), so that the next config's
// lists can be compared with them by a walk.
type typeLists struct {
	byType map[string][]types.Resource
	sorted map[string]bool
}

// built is a validated config, ready to publish: its snapshot holds exactly
// the messages that were checked.
type built struct {
	snap       *cachev3.Snapshot
	versions   map[string]string
	lists      typeLists
	res        *translate.Resources
	eds        edsClusters
	introduced []string // clusters new to the Gateway's config
	// introducing: per route table, the virtual hosts that existed before
	// and now send to introduced clusters, with those clusters.
	introducing map[string]map[string][]string
}

// stop ends the state's timers; call with Server.mu held.
func (st *gatewayState) stop() {
	st.stopped = true
	st.pending = nil
	if st.expiry != nil {
		st.expiry.Stop()
	}
}

// publishGateway builds gw and sets its snapshot, or records why it cannot.
// Call with s.build held.
func (s *Server) publishGateway(st *gatewayState, gw *ir.Gateway) {
	st.last = gw
	b, err := s.buildGateway(st, gw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.stopped {
		return
	}
	if err != nil {
		publishErrors.Inc()
		// The next config is compared with no IR rather than this
		// refused one: it may introduce what this one did.
		st.irClusters = nil
		st.refused = err.Error()
		s.log.Error(err, "config refused; the last good config stays", "gateway", st.group)
		return
	}
	st.refused = ""
	if st.pending != nil {
		// Phase two is waiting for proxyless clients to acknowledge phase
		// one; it will publish this newer config instead.
		st.pending.next = b
		return
	}
	prev := st.published
	if prev != nil && equalVersions(prev.versions, b.versions) && prev.eds.same(b.eds) {
		return
	}
	if prev != nil && len(b.introduced) > 0 && s.hasProxyless(st.group) {
		if s.startTwoPhase(st, b) {
			return
		}
	}
	s.setSnapshot(st, b.res, b.snap, b.versions, b.lists, b.eds, false)
}

// setSnapshot publishes; call with s.mu held. The load assignments are
// xds/endpoints' (its EDS feeds their own cache, eds.go): those of eds's new
// and changed clusters go out before the snapshot, whose clusters use them,
// and those of the clusters that left after it, unless keepLeaving (phase
// one of a two-phase publish, which keeps the previous clusters).
func (s *Server) setSnapshot(st *gatewayState, res *translate.Resources, snap *cachev3.Snapshot, versions map[string]string, lists typeLists, eds edsClusters, keepLeaving bool) {
	removeLeaving := s.eds.Serve(st.group, eds.ir, eds.kept)
	if err := s.cache.SetSnapshot(context.Background(), st.group, snap); err != nil {
		st.refused = fmt.Sprintf("set snapshot: %v", err)
		return
	}
	if !keepLeaving {
		removeLeaving()
	}
	st.published = &published{res: res, versions: versions, snap: snap, lists: lists, eds: eds, at: time.Now()}
}

// buildGateway translates gw (with the retained clusters), validates the
// result and versions it. Everything that shapes the published config
// happens before the check, so the bytes sent are the bytes checked.
func (s *Server) buildGateway(st *gatewayState, gw *ir.Gateway) (*built, error) {
	kept, introduced := st.retention(gw, s.opts.RetainRemoved)
	res, err := st.memo.Translate(gw, kept...)
	if err != nil {
		return nil, fmt.Errorf("translate: %w", err)
	}
	st.addRetained(res, kept)
	var api []*listenerv3.Listener
	if s.opts.APIListeners != nil {
		api = s.opts.APIListeners(st.group)
	}
	checked := res
	if len(api) > 0 {
		// The translated listeners are checked too; the published ones
		// (the API listeners) are a part of what was checked.
		c := *res
		c.Listeners = append(slices.Clone(res.Listeners), api...)
		checked = &c
	}
	if err := st.checker.Check(checked); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	st.memo.Adopt(st.checker) // the memo keeps the checked bytes, not the messages
	if len(api) > 0 {
		c := *res
		c.Listeners = api
		res = &c
	}
	st.remember(res)
	s.mu.Lock()
	prev := st.published
	s.mu.Unlock()
	snap, versions, lists, err := snapshotOf(res, st.checker, prev)
	if err != nil {
		return nil, err
	}
	eds := edsClusters{ir: gw.Clusters}
	for _, name := range kept {
		eds.kept = append(eds.kept, st.retired[name].eds)
	}
	return &built{snap: snap, versions: versions, lists: lists, res: res, eds: eds, introduced: introduced,
		introducing: st.memo.Introducing(introduced)}, nil
}

// retention updates the retired clusters for gw's clusters (a removed one
// is retained for retainFor) and returns the
// names of those still retained and of the clusters gw introduces, both
// sorted. It schedules a re-publish for when the first retained cluster
// expires. Call with s.build held.
//
// The IR's cluster list is sorted by name and never modified once built:
// the very same list as last time changes nothing, and another is compared
// with the last one by a walk of both, not by a set of names.
func (st *gatewayState) retention(gw *ir.Gateway, retainFor time.Duration) (kept, introduced []string) {
	now := time.Now()
	sameIR := len(gw.Clusters) == len(st.irClusters) && (len(gw.Clusters) == 0 || &gw.Clusters[0] == &st.irClusters[0])
	if sameIR && len(st.retired) == 0 {
		return nil, nil
	}
	if st.retired == nil {
		st.retired = map[string]keptCluster{}
	}
	if !sameIR {
		var removed []string
		removed, introduced = diffNames(st.irClusters, gw.Clusters)
		if st.irClusters == nil && !st.built {
			introduced = nil // a first config introduces nothing
		}
		for _, name := range removed {
			if k, ok := st.liveCluster(name); ok {
				if _, already := st.retired[name]; !already {
					secrets, err := st.checker.ClusterSecrets(k.cluster)
					if err != nil {
						continue // the check would refuse it
					}
					k.until, k.secrets = now.Add(retainFor), secrets
					st.retired[name] = k
				}
			}
		}
		st.irClusters = gw.Clusters
	}
	var next time.Time
	for name, k := range st.retired {
		if !now.Before(k.until) || hasCluster(gw.Clusters, name) || !hasSecrets(gw.Secrets, k.secrets) {
			delete(st.retired, name)
			continue
		}
		kept = append(kept, name)
		if next.IsZero() || k.until.Before(next) {
			next = k.until
		}
	}
	sort.Strings(kept)
	if st.expiry != nil {
		st.expiry.Stop()
		st.expiry = nil
	}
	if !next.IsZero() {
		st.expiry = time.AfterFunc(time.Until(next)+10*time.Millisecond, st.expire)
	}
	return kept, introduced
}

// diffNames walks two cluster lists sorted by name and returns the names
// only in a (removed) and only in b (introduced).
func diffNames(a, b []*ir.Cluster) (removed, introduced []string) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i].Name == b[j].Name:
			i++
			j++
		case j == len(b) || i < len(a) && a[i].Name < b[j].Name:
			removed = append(removed, a[i].Name)
			i++
		default:
			introduced = append(introduced, b[j].Name)
			j++
		}
	}
	sort.Strings(removed)
	sort.Strings(introduced)
	return removed, introduced
}

// hasCluster reports whether the sorted list cs holds name.
func hasCluster(cs []*ir.Cluster, name string) bool {
	_, ok := slices.BinarySearchFunc(cs, name, func(c *ir.Cluster, n string) int { return compareStrings(c.Name, n) })
	return ok
}

// hasSecrets reports whether every one of names is among secrets: a
// retained cluster whose client certificate left the config would have
// Envoy wait for it.
func hasSecrets(secrets []ir.Secret, names []string) bool {
	for _, n := range names {
		if !slices.ContainsFunc(secrets, func(s ir.Secret) bool { return s.Name == n }) {
			return false
		}
	}
	return true
}

// expire runs when a retained cluster expires.
func (st *gatewayState) expire() {
	if st.onExpire != nil {
		st.onExpire()
	}
}

// addRetained adds the retained clusters to res, in name order.
func (st *gatewayState) addRetained(res *translate.Resources, kept []string) {
	if len(kept) == 0 {
		return
	}
	for _, name := range kept {
		k := st.retired[name]
		res.Clusters = append(res.Clusters, k.cluster)
	}
	slices.SortFunc(res.Clusters, func(a, b *clusterv3.Cluster) int { return compareStrings(a.GetName(), b.GetName()) })
}

// remember records the clusters of a validated config as live: the list
// itself, which is never modified once built.
func (st *gatewayState) remember(res *translate.Resources) {
	st.liveList, st.built = res.Clusters, true
}

// liveCluster finds a cluster of the last config built that is not a
// retained one, with what its load assignment is made of (from the IR the
// config was built from, st.irClusters): by binary search in the lists,
// which translation sorts by name (a walk if they are not).
func (st *gatewayState) liveCluster(name string) (keptCluster, bool) {
	if _, retained := st.retired[name]; retained {
		return keptCluster{}, false
	}
	c := find(st.liveList, name, (*clusterv3.Cluster).GetName)
	if c == nil {
		return keptCluster{}, false
	}
	src := find(st.irClusters, name, func(c *ir.Cluster) string { return c.Name })
	if src == nil {
		return keptCluster{}, false
	}
	return keptCluster{cluster: c, eds: endpoints.ClusterOf(src)}, true
}

// find returns the element of list named name, or nil.
func find[T comparable](list []T, name string, nameOf func(T) string) T {
	var zero T
	byName := func(a T, n string) int { return strings.Compare(nameOf(a), n) }
	if i, ok := slices.BinarySearchFunc(list, name, byName); ok {
		return list[i]
	}
	if slices.IsSortedFunc(list, func(a, b T) int { return strings.Compare(nameOf(a), nameOf(b)) }) {
		return zero
	}
	for _, e := range list {
		if nameOf(e) == name {
			return e
		}
	}
	return zero
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// snapshotOf turns resources into a snapshot whose per-type versions are
// content hashes. The load assignments are left out: they are served from
// their own cache (setSnapshot).
//
// A type whose version equals prev's keeps prev's resource set (the same
// content), sparing the index go-control-plane builds of it.
//
// A type whose resources are the very same messages, in the same order, as
// prev's keeps its version without hashing them again.
func snapshotOf(res *translate.Resources, checked digester, prev *published) (*cachev3.Snapshot, map[string]string, typeLists, error) {
	var digests func(proto.Message) (build.Digest, bool)
	if checked != nil {
		digests = checked.Digest
	}
	byType := map[string][]types.Resource{}
	// A list that is the very same as prev's (build.Memo hands out
	// the same cluster and endpoint lists while they do not change) keeps
	// prev's resource list.
	var same map[string]bool
	if prev != nil && prev.res != nil {
		same = map[string]bool{
			resourcev3.ClusterType: build.SameList(res.Clusters, prev.res.Clusters),
		}
	}
	sorted := map[string]bool{}
	list := func(typ string, n int, item func(int) types.Resource) {
		if same[typ] {
			byType[typ], sorted[typ] = prev.lists.byType[typ], prev.lists.sorted[typ]
			return
		}
		l := make([]types.Resource, n)
		for i := range l {
			l[i] = item(i)
		}
		byType[typ] = l
		// The checker knows whether the clusters it checked are sorted;
		// the other lists are short.
		if typ == resourcev3.ClusterType && checked != nil {
			if ok, known := checked.ClustersSorted(res.Clusters); known {
				sorted[typ] = ok
				return
			}
		}
		sorted[typ] = sortedByName(l)
	}
	list(resourcev3.ListenerType, len(res.Listeners), func(i int) types.Resource { return res.Listeners[i] })
	list(resourcev3.RouteType, len(res.Routes), func(i int) types.Resource { return res.Routes[i] })
	list(resourcev3.ClusterType, len(res.Clusters), func(i int) types.Resource { return res.Clusters[i] })
	list(resourcev3.SecretType, len(res.Secrets), func(i int) types.Resource { return res.Secrets[i] })
	snap := &cachev3.Snapshot{}
	versions := map[string]string{}
	// diffable: the types whose list and prev's are both sorted by name
	// (as the translation sorts them), so that prev's index and versions
	// can be updated by a walk of both instead of rebuilt.
	diffable := map[string]bool{}
	for _, typ := range typeOrder {
		if typ == resourcev3.EndpointType {
			continue
		}
		i := cachev3.GetResponseType(typ)
		if prev != nil && prev.snap != nil && prev.lists.byType != nil && (same[typ] || build.SameList(prev.lists.byType[typ], byType[typ])) {
			versions[typ] = prev.versions[typ]
			snap.Resources[i] = prev.snap.Resources[i]
			continue
		}
		var listDigests []build.Digest
		if typ == resourcev3.ClusterType && checked != nil {
			listDigests, _ = checked.ClusterDigests(res.Clusters)
		}
		v, err := contentVersion(byType[typ], digests, listDigests)
		if err != nil {
			return nil, nil, typeLists{}, err
		}
		versions[typ] = v
		if prev != nil && prev.snap != nil && prev.snap.Resources[i].Version == v {
			snap.Resources[i] = prev.snap.Resources[i]
			continue
		}
		if prev != nil && prev.snap != nil && prev.lists.sorted[typ] && sorted[typ] {
			diffable[typ] = true
			if old := prev.snap.Resources[i].Items; old != nil {
				snap.Resources[i] = cachev3.Resources{Version: v, Items: updatedItems(old, prev.lists.byType[typ], byType[typ])}
				continue
			}
		}
		snap.Resources[i] = cachev3.NewResources(v, byType[typ])
	}
	// No snap.Consistent(): the checker's referential checks are a
	// superset of it, and Consistent misses the route references of API
	// listeners, so it refuses configs for proxyless gRPC clients.
	if err := setVersionMap(snap, byType, digests, prev, diffable); err != nil {
		return nil, nil, typeLists{}, err
	}
	return snap, versions, typeLists{byType: byType, sorted: sorted}, nil
}

// setVersionMap gives snap the per-resource versions delta xDS compares,
// which go-control-plane would otherwise compute on the first delta request
// by serializing and hashing every resource of the snapshot, for every
// change. A type whose resources are prev's keeps prev's versions; in
// another, only the resources that are not prev's very messages at the
// same place get a version afresh, from the digest the checker computed.
// A resource's version is go-control-plane's own (the hex SHA-256 of its
// serialization), except a wire route table's, which is its checked
// content's generation.
func setVersionMap(snap *cachev3.Snapshot, byType map[string][]types.Resource, digests func(proto.Message) (build.Digest, bool), prev *published, diffable map[string]bool) error {
	snap.VersionMap = make(map[string]map[string]string, len(typeOrder))
	for _, typ := range typeOrder {
		if typ == resourcev3.EndpointType {
			continue // not in the snapshot
		}
		i := cachev3.GetResponseType(typ)
		list := byType[typ]
		var old []types.Resource
		var oldMap map[string]string
		if prev != nil && prev.snap != nil && prev.snap.VersionMap != nil {
			old, oldMap = prev.lists.byType[typ], prev.snap.VersionMap[typ]
			if oldMap != nil && prev.snap.Resources[i].Version == snap.Resources[i].Version {
				snap.VersionMap[typ] = oldMap
				continue
			}
		}
		version := func(r types.Resource) (string, error) {
			var d build.Digest
			ok := false
			if digests != nil {
				d, ok = digests(r)
			}
			if !ok {
				var err error
				if d, err = build.DigestOf(r); err != nil {
					return "", fmt.Errorf("version %s: %w", cachev3.GetResourceName(r), err)
				}
			}
			return hex.EncodeToString(d[:]), nil
		}
		// From prev's map, when both lists are sorted by name (as the
		// translation sorts them): a walk of both changes only the
		// entries of resources that are not prev's very messages, so a
		// new lease versions its own cluster and load assignment, not
		// every one.
		if oldMap != nil && diffable[typ] {
			m, err := updatedVersions(oldMap, old, list, version)
			if err != nil {
				return err
			}
			snap.VersionMap[typ] = m
			continue
		}
		m := make(map[string]string, len(list))
		for _, r := range list {
			v, err := version(r)
			if err != nil {
				return err
			}
			m[cachev3.GetResourceName(r)] = v
		}
		snap.VersionMap[typ] = m
	}
	return nil
}

// updatedVersions returns oldMap, the versions of the resources old, updated
// for the resources list: both sorted by name (sortedByName), it walks them
// together and versions only what is not old's very message under the same
// name.
func updatedVersions(oldMap map[string]string, old, list []types.Resource, version func(types.Resource) (string, error)) (map[string]string, error) {
	m := maps.Clone(oldMap)
	err := build.DiffSorted(old, list, cachev3.GetResourceName, func(gone types.Resource) {
		delete(m, cachev3.GetResourceName(gone))
	}, func(r types.Resource, _ bool) error {
		v, err := version(r)
		m[cachev3.GetResourceName(r)] = v
		return err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// updatedItems returns a snapshot's index of the resources list (as
// cachev3.NewResources builds it) from old, the index of the resources
// prev: both sorted by name (sortedByName), only what is not prev's very
// message under the same name is indexed again.
func updatedItems(old map[string]types.ResourceWithTTL, prev, list []types.Resource) map[string]types.ResourceWithTTL {
	m := maps.Clone(old)
	_ = build.DiffSorted(prev, list, cachev3.GetResourceName, func(gone types.Resource) {
		delete(m, cachev3.GetResourceName(gone))
	}, func(r types.Resource, _ bool) error {
		m[cachev3.GetResourceName(r)] = types.ResourceWithTTL{Resource: r}
		return nil
	})
	return m
}

// sortedByName reports whether list's names strictly increase: each name
// then stands once, and two such lists can be compared by a walk
// (build.DiffSorted).
func sortedByName(list []types.Resource) bool {
	for i := 1; i < len(list); i++ {
		if cachev3.GetResourceName(list[i-1]) >= cachev3.GetResourceName(list[i]) {
			return false
		}
	}
	return true
}

// digester gives the digests a check computed (build.Checker).
type digester interface {
	Digest(proto.Message) (build.Digest, bool)
	ClusterDigests([]*clusterv3.Cluster) ([]build.Digest, bool)
	ClustersSorted([]*clusterv3.Cluster) (sorted, known bool)
}

// contentVersion hashes the digests of items: listDigests when it has one
// for each item, in order, else those digests gives (may be nil) where the
// checker computed them.
func contentVersion(items []types.Resource, digests func(proto.Message) (build.Digest, bool), listDigests []build.Digest) (string, error) {
	h := sha256.New()
	if len(listDigests) == len(items) && len(items) > 0 {
		for i := range listDigests {
			h.Write(listDigests[i][:])
		}
		return hex.EncodeToString(h.Sum(nil))[:16], nil
	}
	for _, r := range items {
		var d build.Digest
		ok := false
		if digests != nil {
			d, ok = digests(r)
		}
		if !ok {
			var err error
			if d, err = build.DigestOf(r); err != nil {
				return "", fmt.Errorf("hash resource: %w", err)
			}
		}
		h.Write(d[:])
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func equalVersions(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
