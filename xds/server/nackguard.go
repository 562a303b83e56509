package server

import (
	"sync"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/proto"
)

// nodeRef names one proxy: its node ID within its Gateway's node group. The
// group is the stream's verified identity; the ID is the proxy's own
// choice, so it only means something within the group (two tenants may
// pick the same ID).
type nodeRef struct{ group, id string }

func refOf(n *core.Node) nodeRef { return nodeRef{n.GetCluster(), n.GetId()} }

// sentKey names the responses of one type sent to one proxy.
type sentKey struct {
	node    nodeRef
	typeURL string
}

type sent struct{ nonce, version string }

// NACK is a rejection recorded for one proxy and type.
type NACK struct {
	NodeID, NodeCluster, TypeURL, Version, Message string
	At                                             time.Time
}

// nackGuard wraps a snapshot cache so that a NACKed version is not sent
// again: a NACK request carries the last accepted version, which the cache
// would answer at once with the rejected snapshot; the guard rewrites it to
// the rejected version, so the cache waits for the next one.
type nackGuard struct {
	cachev3.SnapshotCache

	mu    sync.Mutex
	sent  map[sentKey][]sent // the last few responses, newest last
	nacks map[sentKey]NACK   // the latest NACK per proxy and type
	// nodes: open stream → node; a node's records are dropped when its
	// last stream closes (a proxy that reconnects opens the new stream
	// before the old one is seen to close).
	nodes map[streamKey]nodeRef
	// resends counts responses that repeated a version the proxy had
	// NACKed; the guard exists to keep it at zero.
	resends  int
	onChange func()
}

const keepSent = 8

func newNACKGuard(c cachev3.SnapshotCache) *nackGuard {
	return &nackGuard{SnapshotCache: c, sent: map[sentKey][]sent{}, nacks: map[sentKey]NACK{}, nodes: map[streamKey]nodeRef{}}
}

// recordResponse remembers which version went out under which nonce.
func (g *nackGuard) recordResponse(node *core.Node, typeURL, nonce, version string) {
	k := sentKey{refOf(node), typeURL}
	g.mu.Lock()
	defer g.mu.Unlock()
	if n, ok := g.nacks[k]; ok && n.Version == version {
		g.resends++
	}
	s := append(g.sent[k], sent{nonce, version})
	if len(s) > keepSent {
		s = s[len(s)-keepSent:]
	}
	g.sent[k] = s
}

func (g *nackGuard) versionOf(k sentKey, nonce string) (string, bool) {
	for _, s := range g.sent[k] {
		if s.nonce == nonce {
			return s.version, true
		}
	}
	return "", false
}

// CreateWatch turns a NACK into a wait for a version other than the
// rejected one.
func (g *nackGuard) CreateWatch(req *cachev3.Request, sub cachev3.Subscription, out chan cachev3.Response) (func(), error) {
	if req.GetErrorDetail() != nil {
		k := sentKey{refOf(req.GetNode()), req.GetTypeUrl()}
		g.mu.Lock()
		rejected, ok := g.versionOf(k, req.GetResponseNonce())
		if ok {
			g.nacks[k] = NACK{
				NodeID: k.node.id, NodeCluster: k.node.group, TypeURL: k.typeURL,
				Version: rejected, Message: req.GetErrorDetail().GetMessage(), At: time.Now(),
			}
		}
		onChange := g.onChange
		g.mu.Unlock()
		nacksTotal.WithLabelValues(req.GetTypeUrl()).Inc()
		if ok {
			rewritten := proto.Clone(req).(*cachev3.Request)
			rewritten.VersionInfo = rejected
			req = rewritten
		}
		if onChange != nil {
			onChange()
		}
	}
	return g.SnapshotCache.CreateWatch(req, sub, out)
}

// NACKs returns the recorded rejections.
func (g *nackGuard) NACKs() []NACK {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]NACK, 0, len(g.nacks))
	for _, n := range g.nacks {
		out = append(out, n)
	}
	return out
}

// Resends is how many responses repeated a NACKed version.
func (g *nackGuard) Resends() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.resends
}

// attach records which node a stream serves.
func (g *nackGuard) attach(stream streamKey, node *core.Node) {
	ref := refOf(node)
	if ref.id == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	prev, had := g.nodes[stream]
	g.nodes[stream] = ref
	if had && prev != ref {
		g.dropUnused(prev)
	}
}

// forget drops the state of a stream that closed, and the records of its
// node once no other stream serves it. A NACK record goes too: the proxy
// that sent it is gone, and its Gateway must not report it forever.
func (g *nackGuard) forget(stream streamKey) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ref, ok := g.nodes[stream]
	if !ok {
		return
	}
	delete(g.nodes, stream)
	g.dropUnused(ref)
}

// dropUnused drops a node's records unless a stream still serves it. Call
// with g.mu held.
func (g *nackGuard) dropUnused(ref nodeRef) {
	for _, other := range g.nodes {
		if other == ref {
			return
		}
	}
	for k := range g.sent {
		if k.node == ref {
			delete(g.sent, k)
		}
	}
	dropped := false
	for k := range g.nacks {
		if k.node == ref {
			delete(g.nacks, k)
			dropped = true
		}
	}
	if dropped && g.onChange != nil {
		go g.onChange()
	}
}

// size is what the guard holds, for leak checks.
func (g *nackGuard) size() (streams, sent, nacks int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.nodes), len(g.sent), len(g.nacks)
}
