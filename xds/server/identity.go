package server

import (
	"context"
	"errors"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/pki"
)

// Stream identity.
//
// A stream's identity is the Gateway named by the verified client
// certificate of its own connection (pki.GatewayURI), read from the
// stream's context when it opens and kept in that stream's streamState for
// as long as it lives. Every request is checked against it: a node.cluster
// other than the identity is refused, and so is any request on a stream
// that has no identity (a certificate that names no Gateway, or no
// certificate at all).
//
// go-control-plane v0.14 numbers state-of-the-world and delta streams with
// two separate counters, so a stream ID alone names two streams at once:
// everything kept per stream (identity, the two-phase publish's view of the
// stream, the NACK guard's stream → node map) is keyed by streamKey, which
// adds the kind.

// streamKey names one ADS stream: its kind and its ID within that kind.
type streamKey struct {
	delta bool
	id    int64
}

func sotwStream(id int64) streamKey  { return streamKey{id: id} }
func deltaStream(id int64) streamKey { return streamKey{delta: true, id: id} }

// errNoIdentity refuses a stream whose client certificate names no Gateway.
var errNoIdentity = status.Error(codes.PermissionDenied, "xds: the client certificate names no Gateway (URI SAN "+pki.GatewayURI(k8stypes.NamespacedName{Namespace: "<namespace>", Name: "<name>"})+")")

// peerGateway is the node group named by the verified client certificate of
// the connection ctx belongs to.
func peerGateway(ctx context.Context) (string, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return "", false
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.VerifiedChains) == 0 || len(ti.State.PeerCertificates) == 0 {
		return "", false
	}
	gw, ok := pki.GatewayFromCert(ti.State.PeerCertificates[0])
	if !ok {
		return "", false
	}
	return NodeGroup(gw), true
}

// openStream binds a new stream to the Gateway of its client certificate.
// A stream without one is refused at once.
func (s *Server) openStream(ctx context.Context, key streamKey) error {
	group, ok := peerGateway(ctx)
	s.mu.Lock()
	s.streams[key] = &streamState{identity: group, group: group}
	if ok {
		s.proxies[group]++
		s.exportGatewayProxies(group)
	}
	s.mu.Unlock()
	if !ok {
		return errNoIdentity
	}
	return nil
}

func (s *Server) closeStream(key streamKey) {
	s.mu.Lock()
	if st := s.streams[key]; st != nil && st.identity != "" {
		if s.proxies[st.identity]--; s.proxies[st.identity] <= 0 {
			delete(s.proxies, st.identity)
		}
		s.exportGatewayProxies(st.identity)
	}
	delete(s.streams, key)
	s.mu.Unlock()
}

// checkRequest refuses a request on a stream with no bound identity, or
// whose node asks for a Gateway other than the stream's identity. A
// request without a node uses the stream's earlier one, which was checked.
func (s *Server) checkRequest(key streamKey, node *core.Node) error {
	s.mu.Lock()
	st := s.streams[key]
	identity := ""
	if st != nil {
		identity = st.identity
	}
	s.mu.Unlock()
	if identity == "" {
		return errNoIdentity
	}
	if node != nil && node.GetCluster() != identity {
		return status.Errorf(codes.PermissionDenied, "xds: node.cluster %q does not match the client certificate's Gateway %q", node.GetCluster(), identity)
	}
	if node != nil {
		if _, err := s.types.SnapshotCache.GetSnapshot(identity); err != nil {
			s.log.V(1).Info("xDS request from a node with no config (unknown Gateway or nothing published yet)", "node", node.GetId(), "cluster", identity)
		}
	}
	return nil
}

// callbacks tracks streams, responses and identities.
type callbacks struct{ s *Server }

func (c *callbacks) OnStreamOpen(ctx context.Context, id int64, _ string) error {
	connectedProxies.Inc()
	return c.s.openStream(ctx, sotwStream(id))
}

func (c *callbacks) OnStreamClosed(id int64, _ *core.Node) { c.closed(sotwStream(id)) }

func (c *callbacks) closed(key streamKey) {
	connectedProxies.Dec()
	c.s.closeStream(key)
	c.s.guard.forget(key)
}

// OnStreamRequest refuses a request whose node asks for a Gateway other
// than the one its stream is bound to.
func (c *callbacks) OnStreamRequest(id int64, req *discovery.DiscoveryRequest) error {
	key := sotwStream(id)
	if err := c.s.checkRequest(key, req.GetNode()); err != nil {
		return err
	}
	if err := c.s.countSotw(key, req); err != nil {
		return err
	}
	c.s.guard.attach(key, req.GetNode())
	c.s.observeRequest(key, req)
	return nil
}

func (c *callbacks) OnStreamResponse(_ context.Context, _ int64, req *discovery.DiscoveryRequest, resp *discovery.DiscoveryResponse) {
	c.s.guard.recordResponse(req.GetNode(), resp.GetTypeUrl(), resp.GetNonce(), resp.GetVersionInfo())
	c.s.responded(req.GetNode().GetCluster(), resp.GetTypeUrl(), resp.GetVersionInfo())
}

func (c *callbacks) OnFetchRequest(context.Context, *discovery.DiscoveryRequest) error {
	return errors.New("xds: REST fetch is not served")
}
func (c *callbacks) OnFetchResponse(*discovery.DiscoveryRequest, *discovery.DiscoveryResponse) {}

func (c *callbacks) OnDeltaStreamOpen(ctx context.Context, id int64, _ string) error {
	connectedProxies.Inc()
	return c.s.openStream(ctx, deltaStream(id))
}

func (c *callbacks) OnDeltaStreamClosed(id int64, _ *core.Node) { c.closed(deltaStream(id)) }

func (c *callbacks) OnStreamDeltaRequest(id int64, req *discovery.DeltaDiscoveryRequest) error {
	if err := c.s.checkRequest(deltaStream(id), req.GetNode()); err != nil {
		return err
	}
	if err := c.s.countDelta(deltaStream(id), req); err != nil {
		return err
	}
	if req.GetErrorDetail() != nil {
		nacksTotal.WithLabelValues(req.GetTypeUrl()).Inc()
	}
	return nil
}

func (c *callbacks) OnStreamDeltaResponse(_ int64, _ *discovery.DeltaDiscoveryRequest, resp *discovery.DeltaDiscoveryResponse) {
	pushesTotal.WithLabelValues(resp.GetTypeUrl()).Inc()
}
