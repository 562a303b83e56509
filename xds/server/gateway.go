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
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/internal/ir"
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
	memo    *translate.Memo
	checker *translate.Checker
	// last is the IR last published, built again when a retained cluster
	// expires or its endpoints change; filled is last with its clusters'
	// endpoints (filler keeps them from one build to the next).
	last   *ir.Gateway
	filled *ir.Gateway
	filler endpoints.Filler
	// liveList and liveEndpoints are the clusters and load assignments of
	// the last config built (liveCluster finds one); retired, those that
	// left it less than RetainRemoved ago. A retired cluster stays
	// published, referenced by routes that never match, so that no proxy
	// sees a route still pointing at a deleted cluster (clusters reach
	// proxies before the routes that stop using them) and proxyless
	// clients keep its balancer.
	liveList      []*clusterv3.Cluster
	liveEndpoints []*endpointv3.ClusterLoadAssignment
	retired       map[string]keptCluster
	built         bool // a config was built (remember)
	// endpointsOnly counts the configs published by publishEndpoints.
	endpointsOnly int
	// irClusters is the IR cluster list the last config was built from.
	irClusters []*ir.Cluster
	// expiry calls onExpire when the first retired cluster expires.
	expiry   *time.Timer
	onExpire func()

	published *published      // the snapshot in force
	refused   string          // why the latest config was refused ("" if it was not)
	pending   *pendingPublish // phase two of a two-phase publish (twophase.go)
	stopped   bool            // the Gateway is no longer served
	api       proxylessState  // API listeners for proxyless clients (proxyless.go)
}

type keptCluster struct {
	cluster   *clusterv3.Cluster
	endpoints *endpointv3.ClusterLoadAssignment
	until     time.Time
	// secrets are the SDS secrets the cluster's upstream TLS context
	// names: it is retained only while the config has them.
	secrets []string
}

type published struct {
	res      *translate.Resources
	versions map[string]string // type URL → version
	snap     *cachev3.Snapshot
	lists    typeLists
	at       time.Time
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
	introduced []string // clusters new to the Gateway's config
	// introducing: per route table, the virtual hosts that existed before
	// and now send to introduced clusters, with those clusters.
	introducing map[string]map[string][]string
	api         *apiListeners // for proxyless clients (nil: none served)
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
	last := st.filled
	st.last = gw
	gw = st.filler.Fill(gw, s.endpoints)
	st.filled = gw
	if s.publishEndpoints(st, last, gw) {
		return
	}
	b, err := s.buildGateway(st, gw)
	s.publishBuilt(st, b, err)
}

// publishBuilt publishes what buildGateway returned, or records why it
// cannot. Call with s.build held.
func (s *Server) publishBuilt(st *gatewayState, b *built, err error) {
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
	if prev != nil && equalVersions(prev.versions, b.versions) && translate.SameList(prev.res.Endpoints, b.res.Endpoints) {
		return
	}
	if prev != nil && len(b.introduced) > 0 && s.hasProxyless(st.group) {
		if s.startTwoPhase(st, b) {
			return
		}
	}
	s.setSnapshot(st, b.res, b.snap, b.versions, b.lists, b.api)
}

// publishEndpoints publishes gw when it differs from prev, the IR last
// built, only in the endpoints of clusters (an EndpointSlice change): only
// the changed load assignments are built, checked and published, and the
// rest of the published config stays as it is. It reports false, having
// published nothing, for any other change, and while anything but the
// last built config is in force (a refused config, a two-phase publish,
// retained clusters): publishGateway then builds gw in full. Call with
// s.build held.
func (s *Server) publishEndpoints(st *gatewayState, prev, gw *ir.Gateway) bool {
	if prev == nil || !st.built || len(st.retired) > 0 || len(gw.Clusters) == 0 ||
		gw.Namespace != prev.Namespace || gw.Name != prev.Name ||
		!sameArray(gw.Listeners, prev.Listeners) || !sameArray(gw.Secrets, prev.Secrets) {
		return false
	}
	s.mu.Lock()
	pub, inForce := st.published, st.refused == "" && st.pending == nil && !st.stopped
	s.mu.Unlock()
	if pub == nil || !inForce || !translate.SameList(pub.res.Endpoints, st.liveEndpoints) {
		return false
	}
	all, changed, ok := st.memo.Endpoints(gw.Clusters)
	if !ok {
		return false
	}
	st.irClusters = gw.Clusters
	if len(changed) == 0 {
		st.endpointsOnly++
		return true
	}
	wire, replaced, ok, err := st.checker.CheckEndpoints(all)
	if !ok || err != nil {
		// The full build reports what is wrong.
		return false
	}
	st.memo.Adopt(st.checker)
	res := *pub.res
	res.Endpoints = wire
	st.remember(&res)
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.stopped {
		return true
	}
	versions := maps.Clone(pub.versions)
	versions[resourcev3.EndpointType] = s.types.replaceEndpoints(st.group, wire, replaced)
	st.published = &published{res: &res, versions: versions, snap: pub.snap, lists: pub.lists, at: time.Now()}
	st.endpointsOnly++
	return true
}

// sameArray: a and b are the very same list (IR lists are never modified
// once built).
func sameArray[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// setSnapshot publishes; call with s.mu held. The load assignments go to
// their own cache (eds.go): new and changed ones before the snapshot, whose
// clusters may use them, and removed ones after it. The proxyless snapshot
// (proxyless.go), with api, follows Envoy's.
func (s *Server) setSnapshot(st *gatewayState, res *translate.Resources, snap *cachev3.Snapshot, versions map[string]string, lists typeLists, api *apiListeners) {
	removeEndpoints := s.types.applyEndpoints(st.group, res.Endpoints)
	if err := s.cache.SetSnapshot(context.Background(), st.group, snap); err != nil {
		st.refused = fmt.Sprintf("set snapshot: %v", err)
		return
	}
	versions = maps.Clone(versions)
	s.setProxyless(st, snap, versions, api)
	versions[resourcev3.EndpointType] = removeEndpoints()
	st.published = &published{res: res, versions: versions, snap: snap, lists: lists, at: time.Now()}
}

// buildGateway translates gw (with the retained clusters), validates the
// result and versions it. Everything that shapes the published config
// happens before the check, so the bytes sent are the bytes checked.
func (s *Server) buildGateway(st *gatewayState, gw *ir.Gateway) (*built, error) {
	kept, introduced := st.retention(gw)
	res, err := st.memo.Translate(gw, kept...)
	if err != nil {
		return nil, fmt.Errorf("translate: %w", err)
	}
	st.addRetained(res, kept)
	if err := st.checker.Check(res); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	st.memo.Adopt(st.checker) // the memo keeps the checked bytes, not the messages
	api, err := s.buildAPIListeners(st, gw, res)
	if err != nil {
		return nil, err
	}
	st.remember(res)
	s.mu.Lock()
	prev := st.published
	s.mu.Unlock()
	snap, versions, lists, err := snapshotOf(res, st.checker, prev)
	if err != nil {
		return nil, err
	}
	if api != nil {
		versions[proxylessListenersKey] = api.version
	}
	return &built{snap: snap, versions: versions, lists: lists, res: res, introduced: introduced,
		introducing: st.memo.Introducing(introduced), api: api}, nil
}

// retention updates the retired clusters for gw's clusters and returns the
// names of those still retained and of the clusters gw introduces, both
// sorted. It schedules a re-publish for when the first retained cluster
// expires. Call with s.build held.
//
// The IR's cluster list is sorted by name and never modified once built:
// the very same list as last time changes nothing, and another is compared
// with the last one by a walk of both, not by a set of names.
func (st *gatewayState) retention(gw *ir.Gateway) (kept, introduced []string) {
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
					k.until, k.secrets = now.Add(RetainRemoved), secrets
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

// addRetained adds the retained clusters and their endpoints to res, in
// name order.
func (st *gatewayState) addRetained(res *translate.Resources, kept []string) {
	if len(kept) == 0 {
		return
	}
	for _, name := range kept {
		k := st.retired[name]
		res.Clusters = append(res.Clusters, k.cluster)
		if k.endpoints != nil {
			res.Endpoints = append(res.Endpoints, k.endpoints)
		}
	}
	slices.SortFunc(res.Clusters, func(a, b *clusterv3.Cluster) int { return compareStrings(a.GetName(), b.GetName()) })
	slices.SortFunc(res.Endpoints, func(a, b *endpointv3.ClusterLoadAssignment) int {
		return compareStrings(a.GetClusterName(), b.GetClusterName())
	})
}

// remember records the clusters and load assignments of a validated config
// as live: the lists themselves, which are never modified once built.
func (st *gatewayState) remember(res *translate.Resources) {
	st.liveList, st.liveEndpoints, st.built = res.Clusters, res.Endpoints, true
}

// liveCluster finds a cluster of the last config built that is not a
// retained one, with its load assignment: by binary search in the lists,
// which translation sorts by name (a walk if they are not).
func (st *gatewayState) liveCluster(name string) (keptCluster, bool) {
	if _, retained := st.retired[name]; retained {
		return keptCluster{}, false
	}
	c := find(st.liveList, name, (*clusterv3.Cluster).GetName)
	if c == nil {
		return keptCluster{}, false
	}
	return keptCluster{cluster: c, endpoints: find(st.liveEndpoints, name, (*endpointv3.ClusterLoadAssignment).GetClusterName)}, true
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
	var digests func(proto.Message) (translate.Digest, bool)
	if checked != nil {
		digests = checked.Digest
	}
	byType := map[string][]types.Resource{}
	// A list that is the very same as prev's (translate.Memo hands out
	// the same cluster and endpoint lists while they do not change) keeps
	// prev's resource list.
	var same map[string]bool
	if prev != nil && prev.res != nil {
		same = map[string]bool{
			resourcev3.ClusterType: translate.SameList(res.Clusters, prev.res.Clusters),
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
		if prev != nil && prev.snap != nil && prev.lists.byType != nil && (same[typ] || translate.SameList(prev.lists.byType[typ], byType[typ])) {
			versions[typ] = prev.versions[typ]
			snap.Resources[i] = prev.snap.Resources[i]
			continue
		}
		var listDigests []translate.Digest
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
	// listeners, so it would refuse the proxyless snapshot
	// (proxyless.go), which shares this one's route tables.
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
func setVersionMap(snap *cachev3.Snapshot, byType map[string][]types.Resource, digests func(proto.Message) (translate.Digest, bool), prev *published, diffable map[string]bool) error {
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
			var d translate.Digest
			ok := false
			if digests != nil {
				d, ok = digests(r)
			}
			if !ok {
				var err error
				if d, err = translate.DigestOf(r); err != nil {
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
	err := translate.DiffSorted(old, list, cachev3.GetResourceName, func(gone types.Resource) {
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
	_ = translate.DiffSorted(prev, list, cachev3.GetResourceName, func(gone types.Resource) {
		delete(m, cachev3.GetResourceName(gone))
	}, func(r types.Resource, _ bool) error {
		m[cachev3.GetResourceName(r)] = types.ResourceWithTTL{Resource: r}
		return nil
	})
	return m
}

// sortedByName reports whether list's names strictly increase: each name
// then stands once, and two such lists can be compared by a walk
// (translate.DiffSorted).
func sortedByName(list []types.Resource) bool {
	for i := 1; i < len(list); i++ {
		if cachev3.GetResourceName(list[i-1]) >= cachev3.GetResourceName(list[i]) {
			return false
		}
	}
	return true
}

// digester gives the digests a check computed (translate.Checker).
type digester interface {
	Digest(proto.Message) (translate.Digest, bool)
	ClusterDigests([]*clusterv3.Cluster) ([]translate.Digest, bool)
	ClustersSorted([]*clusterv3.Cluster) (sorted, known bool)
}

// contentVersion hashes the digests of items: listDigests when it has one
// for each item, in order, else those digests gives (may be nil) where the
// checker computed them.
func contentVersion(items []types.Resource, digests func(proto.Message) (translate.Digest, bool), listDigests []translate.Digest) (string, error) {
	h := sha256.New()
	if len(listDigests) == len(items) && len(items) > 0 {
		for i := range listDigests {
			h.Write(listDigests[i][:])
		}
		return hex.EncodeToString(h.Sum(nil))[:16], nil
	}
	for _, r := range items {
		var d translate.Digest
		ok := false
		if digests != nil {
			d, ok = digests(r)
		}
		if !ok {
			var err error
			if d, err = translate.DigestOf(r); err != nil {
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
