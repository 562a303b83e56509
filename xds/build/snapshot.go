/*
Copyright The shardgate Authors.
*/

package build

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/xds/translate"
)

// Snapshot assembly: a checked config becomes a go-control-plane snapshot
// whose per-type versions are content hashes, with the per-resource
// versions delta xDS compares, built from the previous config's where the
// content is the same.

// TypeOrder is the order resources are listed in a snapshot; with ordered
// ADS, clusters and endpoints reach a proxy before the listeners and routes
// that use them.
var TypeOrder = []string{resourcev3.ClusterType, resourcev3.EndpointType, resourcev3.SecretType, resourcev3.ListenerType, resourcev3.RouteType}

// typeLists are a config's resources by type URL, in order, and which of
// those lists are sorted by name (sortedByName), so that the next config's
// lists can be compared with them by a walk.
type typeLists struct {
	byType map[string][]types.Resource
	sorted map[string]bool
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
func snapshotOf(res *translate.Resources, checked digester, prev *Config) (*cachev3.Snapshot, map[string]string, typeLists, error) {
	var digests func(proto.Message) (Digest, bool)
	if checked != nil {
		digests = checked.Digest
	}
	byType := map[string][]types.Resource{}
	// A list that is the very same as prev's (Memo hands out
	// the same cluster and endpoint lists while they do not change) keeps
	// prev's resource list.
	var same map[string]bool
	if prev != nil && prev.Resources != nil {
		same = map[string]bool{
			resourcev3.ClusterType: SameList(res.Clusters, prev.Resources.Clusters),
			// A shard with automatic HTTPS has a secret per name: Memo
			// hands out the same list while none changes.
			resourcev3.SecretType: SameList(res.Secrets, prev.Resources.Secrets),
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
		// And whether the route tables it checked are (a shard with
		// automatic HTTPS has one per name).
		if typ == resourcev3.RouteType && checked != nil {
			if ok, known := checked.RoutesSorted(res.Routes); known {
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
	for _, typ := range TypeOrder {
		if typ == resourcev3.EndpointType {
			continue
		}
		i := cachev3.GetResponseType(typ)
		if prev != nil && prev.Snapshot != nil && prev.lists.byType != nil && (same[typ] || SameList(prev.lists.byType[typ], byType[typ])) {
			versions[typ] = prev.Versions[typ]
			snap.Resources[i] = prev.Snapshot.Resources[i]
			continue
		}
		var listDigests []Digest
		if typ == resourcev3.ClusterType && checked != nil {
			listDigests, _ = checked.ClusterDigests(res.Clusters)
		}
		if typ == resourcev3.RouteType && checked != nil {
			listDigests, _ = checked.RouteDigests(res.Routes)
		}
		v, err := contentVersion(byType[typ], digests, listDigests)
		if err != nil {
			return nil, nil, typeLists{}, err
		}
		versions[typ] = v
		if prev != nil && prev.Snapshot != nil && prev.Snapshot.Resources[i].Version == v {
			snap.Resources[i] = prev.Snapshot.Resources[i]
			continue
		}
		if prev != nil && prev.Snapshot != nil && prev.lists.sorted[typ] && sorted[typ] {
			diffable[typ] = true
			if old := prev.Snapshot.Resources[i].Items; old != nil {
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
func setVersionMap(snap *cachev3.Snapshot, byType map[string][]types.Resource, digests func(proto.Message) (Digest, bool), prev *Config, diffable map[string]bool) error {
	snap.VersionMap = make(map[string]map[string]string, len(TypeOrder))
	for _, typ := range TypeOrder {
		if typ == resourcev3.EndpointType {
			continue // not in the snapshot
		}
		i := cachev3.GetResponseType(typ)
		list := byType[typ]
		var old []types.Resource
		var oldMap map[string]string
		if prev != nil && prev.Snapshot != nil && prev.Snapshot.VersionMap != nil {
			old, oldMap = prev.lists.byType[typ], prev.Snapshot.VersionMap[typ]
			if oldMap != nil && prev.Snapshot.Resources[i].Version == snap.Resources[i].Version {
				snap.VersionMap[typ] = oldMap
				continue
			}
		}
		version := func(r types.Resource) (string, error) {
			d, err := digestOf(r, digests)
			if err != nil {
				return "", fmt.Errorf("version %s: %w", cachev3.GetResourceName(r), err)
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
	err := DiffSorted(old, list, cachev3.GetResourceName, func(gone types.Resource) {
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
	_ = DiffSorted(prev, list, cachev3.GetResourceName, func(gone types.Resource) {
		delete(m, cachev3.GetResourceName(gone))
	}, func(r types.Resource, _ bool) error {
		m[cachev3.GetResourceName(r)] = types.ResourceWithTTL{Resource: r}
		return nil
	})
	return m
}

// sortedByName reports whether list's names strictly increase: each name
// then stands once, and two such lists can be compared by a walk
// (DiffSorted).
func sortedByName(list []types.Resource) bool {
	for i := 1; i < len(list); i++ {
		if cachev3.GetResourceName(list[i-1]) >= cachev3.GetResourceName(list[i]) {
			return false
		}
	}
	return true
}

// digester gives the digests a check computed (Checker).
type digester interface {
	Digest(proto.Message) (Digest, bool)
	ClusterDigests([]*clusterv3.Cluster) ([]Digest, bool)
	ClustersSorted([]*clusterv3.Cluster) (sorted, known bool)
	RouteDigests([]*routev3.RouteConfiguration) ([]Digest, bool)
	RoutesSorted([]*routev3.RouteConfiguration) (sorted, known bool)
}

// contentVersion hashes the digests of items: listDigests when it has one
// for each item, in order, else those digests gives (may be nil) where the
// checker computed them.
func contentVersion(items []types.Resource, digests func(proto.Message) (Digest, bool), listDigests []Digest) (string, error) {
	h := sha256.New()
	if len(listDigests) == len(items) && len(items) > 0 {
		for i := range listDigests {
			h.Write(listDigests[i][:])
		}
		return hex.EncodeToString(h.Sum(nil))[:16], nil
	}
	for _, r := range items {
		d, err := digestOf(r, digests)
		if err != nil {
			return "", fmt.Errorf("hash resource: %w", err)
		}
		h.Write(d[:])
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// digestOf is m's digest as digests (may be nil) gives it where the checker
// computed it, else computed now.
func digestOf(m proto.Message, digests func(proto.Message) (Digest, bool)) (Digest, error) {
	if digests != nil {
		if d, ok := digests(m); ok {
			return d, nil
		}
	}
	return DigestOf(m)
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
