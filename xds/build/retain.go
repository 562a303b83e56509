/*
Copyright The shardgate Authors.
*/

package build

import (
	"slices"
	"sort"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/endpoints"
	"github.com/shardgate/shardgate/xds/translate"
)

// Retention: a cluster that leaves a Gateway's config stays published for
// a while (Options.RetainRemoved), with its load assignment (xds/endpoints
// keeps serving it), referenced by routes that never match, so that no
// proxy sees a route still pointing at a deleted cluster (clusters reach
// proxies before the routes that stop using them) and proxyless clients
// keep its balancer.

type keptCluster struct {
	cluster *clusterv3.Cluster
	// eds is what its load assignment is made of.
	eds   endpoints.Cluster
	until time.Time
	// secrets are the SDS secrets the cluster's upstream TLS context
	// names: it is retained only while the config has them.
	secrets []string
}

// retention updates the retired clusters for gw's clusters (a removed one
// is retained for Options.RetainRemoved) and returns the names of those
// still retained and of the clusters gw introduces, both sorted. It
// schedules Options.OnExpire for when the first retained cluster expires.
//
// What left and what came is what the IR's change names (ch, relative to
// the IR last built), looked up by name in the last IR's cluster list and
// gw's, both sorted by name; when the change cannot tell, the two lists
// are compared by a walk of both.
func (b *Builder) retention(gw *ir.Gateway, ch irChange) (kept, introduced []string) {
	now := time.Now()
	if b.irClusters == nil && b.built {
		ch = irChange{all: true} // the last config was refused: compare with none
	}
	same := !ch.all && len(ch.clusters) == 0
	if same && len(b.retired) == 0 {
		b.irClusters = gw.Clusters
		return nil, nil
	}
	if b.retired == nil {
		b.retired = map[string]keptCluster{}
	}
	if !same {
		var removed []string
		if ch.all {
			removed, introduced = diffNames(b.irClusters, gw.Clusters)
		} else {
			for _, name := range ch.clusters {
				was, is := hasCluster(b.irClusters, name), hasCluster(gw.Clusters, name)
				switch {
				case was && !is:
					removed = append(removed, name)
				case is && !was:
					introduced = append(introduced, name)
				}
			}
		}
		if b.irClusters == nil && !b.built {
			introduced = nil // a first config introduces nothing
		}
		for _, name := range removed {
			if k, ok := b.liveCluster(name); ok {
				if _, already := b.retired[name]; !already {
					secrets, err := b.checker.ClusterSecrets(k.cluster)
					if err != nil {
						continue // the check would refuse it
					}
					k.until, k.secrets = now.Add(b.opts.RetainRemoved), secrets
					b.retired[name] = k
				}
			}
		}
	}
	b.irClusters = gw.Clusters
	var next time.Time
	for name, k := range b.retired {
		if !now.Before(k.until) || hasCluster(gw.Clusters, name) || !hasSecrets(gw.Secrets, k.secrets) {
			delete(b.retired, name)
			continue
		}
		kept = append(kept, name)
		if next.IsZero() || k.until.Before(next) {
			next = k.until
		}
	}
	sort.Strings(kept)
	if b.expiry != nil {
		b.expiry.Stop()
		b.expiry = nil
	}
	if !next.IsZero() {
		b.expiry = time.AfterFunc(time.Until(next)+10*time.Millisecond, b.expire)
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
func (b *Builder) expire() {
	if b.opts.OnExpire != nil {
		b.opts.OnExpire()
	}
}

// addRetained adds the retained clusters to res, in name order.
func (b *Builder) addRetained(res *translate.Resources, kept []string) {
	if len(kept) == 0 {
		return
	}
	for _, name := range kept {
		k := b.retired[name]
		res.Clusters = append(res.Clusters, k.cluster)
	}
	slices.SortFunc(res.Clusters, func(a, b *clusterv3.Cluster) int { return compareStrings(a.GetName(), b.GetName()) })
}

// remember records the clusters of a validated config as live: the list
// itself, which is never modified once built.
func (b *Builder) remember(res *translate.Resources) {
	b.liveList, b.built = res.Clusters, true
}

// liveCluster finds a cluster of the last config built that is not a
// retained one, with what its load assignment is made of (from the IR the
// config was built from, b.irClusters): by binary search in the lists,
// which translation sorts by name (a walk if they are not).
func (b *Builder) liveCluster(name string) (keptCluster, bool) {
	if _, retained := b.retired[name]; retained {
		return keptCluster{}, false
	}
	c := find(b.liveList, name, (*clusterv3.Cluster).GetName)
	if c == nil {
		return keptCluster{}, false
	}
	src := find(b.irClusters, name, func(c *ir.Cluster) string { return c.Name })
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
