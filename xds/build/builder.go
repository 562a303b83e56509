/*
Copyright The shardgate Authors.
*/

package build

import (
	"fmt"
	"slices"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/endpoints"
	"github.com/shardgate/shardgate/xds/translate"
)

// Options configure a Builder.
type Options struct {
	// RetainRemoved is how long a cluster removed from the Gateway's
	// config stays published (zero: not at all).
	RetainRemoved time.Duration
	// OnExpire is called, from a timer's goroutine, when a retained
	// cluster expires: the caller builds its last IR again.
	OnExpire func()
}

// Builder builds one Gateway's config, again and again, at the cost of
// what changed: it translates the units the IR's change names (Memo),
// adds the retained clusters, validates what changed (Checker), and
// assembles and versions the snapshot. What it returns is exactly what
// was validated: the checked messages, route tables as the concatenation
// of their hosts' checked bytes. A Builder is not safe for concurrent use.
type Builder struct {
	opts    Options
	memo    Memo
	checker Checker

	// liveList are the clusters of the last config built (liveCluster
	// finds one); retired, those that left it less than RetainRemoved
	// ago (retain.go).
	liveList []*clusterv3.Cluster
	retired  map[string]keptCluster
	built    bool // a config was built (remember)
	// irClusters is the IR cluster list the last config was built from
	// (nil after a refused one).
	irClusters []*ir.Cluster
	// expiry calls OnExpire when the first retired cluster expires.
	expiry *time.Timer
	// edsGen numbers the sets of clusters the configs built need load
	// assignments for (EDSClusters.gen): it moves when the IR's change
	// names clusters (or cannot tell) or the retained ones differ;
	// lastKept are the retained clusters of the last config built.
	edsGen   uint64
	lastKept []string
}

// NewBuilder returns a Builder for one Gateway.
func NewBuilder(opts Options) *Builder {
	return &Builder{opts: opts}
}

// Config is a validated config, ready to publish: its snapshot holds
// exactly the messages that were checked.
type Config struct {
	// Snapshot holds every resource but the load assignments; Versions
	// are its per-type versions (type URL → version).
	Snapshot *cachev3.Snapshot
	Versions map[string]string
	// Resources are the config's resources, as published (wire forms).
	Resources *translate.Resources
	// EDS are the clusters whose load assignments the config needs.
	EDS EDSClusters
	// Introduced are the clusters new to the Gateway's config;
	// Introducing, per route table, the virtual hosts that existed before
	// and now send to introduced clusters, with those clusters.
	Introduced  []string
	Introducing map[string]map[string][]string

	lists typeLists
}

// EDSClusters are the clusters whose load assignments a config needs, as
// xds/endpoints serves them: those of the IR, and the retained ones.
type EDSClusters struct {
	IR       []*ir.Cluster
	Retained []endpoints.Cluster
	// gen numbers the set within one Builder's configs: two configs of
	// one gen need the same load assignments (zero: not numbered).
	gen uint64
}

// same reports whether a and b need the same load assignments: they have
// one number, or their clusters agree one by one.
func (a EDSClusters) same(b EDSClusters) bool {
	if a.gen != 0 && a.gen == b.gen {
		return true
	}
	return slices.Equal(a.Retained, b.Retained) && slices.EqualFunc(a.IR, b.IR, func(x, y *ir.Cluster) bool {
		return endpoints.ClusterOf(x) == endpoints.ClusterOf(y)
	})
}

// SameNumber reports whether a and b are known by their number alone to
// need the same load assignments (configs of one Builder); false says
// nothing.
func (a EDSClusters) SameNumber(b EDSClusters) bool {
	return a.gen != 0 && a.gen == b.gen
}

// Unchanged reports whether c publishes what prev did: the same versions
// of every type and the same load assignments.
func (c *Config) Unchanged(prev *Config) bool {
	return prev != nil && equalVersions(prev.Versions, c.Versions) && prev.EDS.same(c.EDS)
}

// Build translates gw (with the retained clusters), validates the result
// and versions it, relative to prev, the config in force (nil: none).
// Everything that shapes the published config happens before the check,
// so the bytes sent are the bytes checked. A refused config (or one the
// caller refuses, Refused) leaves the Builder comparing the next one with
// no IR: it may introduce what this one did.
func (b *Builder) Build(gw *ir.Gateway, prev *Config) (*Config, error) {
	c, err := b.build(gw, prev)
	if err != nil {
		b.Refused()
	}
	return c, err
}

// Refused tells the Builder that the config it last built is not
// published: the next one is compared with none.
func (b *Builder) Refused() {
	b.irClusters = nil
	b.edsGen++ // the next config is compared by its clusters
}

func (b *Builder) build(gw *ir.Gateway, prev *Config) (*Config, error) {
	ch := b.memo.changeOf(gw.Change)
	kept, introduced := b.retention(gw, ch)
	if ch.all || len(ch.clusters) > 0 || !slices.Equal(kept, b.lastKept) || b.edsGen == 0 {
		b.edsGen++ // other clusters need load assignments
	}
	b.lastKept = kept
	res, err := b.memo.Translate(gw, kept...)
	if err != nil {
		return nil, fmt.Errorf("translate: %w", err)
	}
	b.addRetained(res, kept)
	if err := b.checker.Check(res); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	b.memo.adopt(&b.checker) // the memo keeps the checked bytes, not the messages
	b.remember(res)
	snap, versions, lists, err := snapshotOf(res, &b.checker, prev)
	if err != nil {
		return nil, err
	}
	eds := EDSClusters{IR: gw.Clusters, gen: b.edsGen}
	for _, name := range kept {
		eds.Retained = append(eds.Retained, b.retired[name].eds)
	}
	return &Config{Snapshot: snap, Versions: versions, lists: lists, Resources: res, EDS: eds, Introduced: introduced,
		Introducing: b.memo.Introducing(introduced)}, nil
}

// Stop ends the Builder's timer: OnExpire is not called again.
func (b *Builder) Stop() {
	if b.expiry != nil {
		b.expiry.Stop()
	}
}

// Encoded is how many bytes the last build serialized to check what
// changed.
func (b *Builder) Encoded() int { return b.checker.Encoded }

// SnapshotOf is the config of res, which needs the load assignments of
// eds: resources not built by a Builder (the caller validated them), every
// version computed afresh.
func SnapshotOf(res *translate.Resources, eds EDSClusters) (*Config, error) {
	snap, versions, lists, err := snapshotOf(res, nil, nil)
	if err != nil {
		return nil, err
	}
	return &Config{Snapshot: snap, Versions: versions, Resources: res, EDS: eds, lists: lists}, nil
}
