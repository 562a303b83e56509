package server

import (
	"sync"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/proto"
)

// sentKey names the responses of one type sent to one proxy.
type sentKey struct{ nodeID, typeURL string }

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
	// nodes: open stream → node ID; a node's records are dropped when its
	// last stream closes (a proxy that reconnects opens the new stream
	// before the old one is seen to close).
	nodes map[int64]string
	// resends counts responses that repeated a version the proxy had
	// NACKed; the guard exists to keep it at zero.
	resends  int
	onChange func()
}

const keepSent = 8

func newNACKGuard(c cachev3.SnapshotCache) *nackGuard {
	return &nackGuard{SnapshotCache: c, sent: map[sentKey][]sent{}, nacks: map[sentKey]NACK{}, nodes: map[int64]string{}}
}

// recordResponse remembers which version went out under which nonce.
func (g *nackGuard) recordResponse(node *core.Node, typeURL, nonce, version string) {
	k := sentKey{node.GetId(), typeURL}
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
		k := sentKey{req.GetNode().GetId(), req.GetTypeUrl()}
		g.mu.Lock()
		rejected, ok := g.versionOf(k, req.GetResponseNonce())
		if ok {
			g.nacks[k] = NACK{
				NodeID: k.nodeID, NodeCluster: req.GetNode().GetCluster(), TypeURL: k.typeURL,
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
func (g *nackGuard) attach(stream int64, nodeID string) {
	if nodeID == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nodes[stream] = nodeID
}

// forget drops the state of a stream that closed, and the records of its
// node once no other stream serves it. A NACK record goes too: the proxy
// that sent it is gone, and its Gateway must not report it forever.
func (g *nackGuard) forget(stream int64, nodeID string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if id, ok := g.nodes[stream]; ok {
		nodeID = id
		delete(g.nodes, stream)
	}
	if nodeID == "" {
		return
	}
	for _, other := range g.nodes {
		if other == nodeID {
			return
		}
	}
	for k := range g.sent {
		if k.nodeID == nodeID {
			delete(g.sent, k)
		}
	}
	dropped := false
	for k := range g.nacks {
		if k.nodeID == nodeID {
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
