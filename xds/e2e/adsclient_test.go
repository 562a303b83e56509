package e2e_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"sync"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/encoding/prototext"
	"k8s.io/apimachinery/pkg/types"

	xdsserver "github.com/shardgate/shardgate/xds/server"
)

// adsClient is a raw state-of-the-world ADS client over mTLS, as Envoy
// speaks it: one gRPC stream; it subscribes to every cluster and listener
// and to the Gateway's HTTP route table, and ACKs each response (unless
// told not to). Unlike grpc-go's xDS client it lets a test hold, stall or
// drop a stream at will.
type adsClient struct {
	node   string
	cc     *grpc.ClientConn
	stream discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	cancel context.CancelFunc
	opts   adsOptions

	mu      sync.Mutex
	rds     *routev3.RouteConfiguration // the latest http-80
	rdsText string
	nRDS    int
	updates chan struct{} // a token after each route table received
	done    chan struct{} // closed when the receive loop ends
	err     error
	// acked is the last version accepted, per type; nacked counts the
	// responses refused.
	acked  map[string]string
	nacked int
}

type adsOptions struct {
	// tls is the client's TLS config (default: a fresh certificate for the
	// Gateway from the xDS CA).
	tls *tls.Config
	// noACK: read responses but never acknowledge them.
	noACK bool
	// noRead: never read the stream, so its flow-control window fills.
	noRead bool
	// dial adds dial options.
	dial []grpc.DialOption
	// reject: NACK every route table that mentions this text, as a proxy
	// refusing it would, and keep the last one accepted.
	reject string
}

type subscription struct {
	typeURL string
	names   []string
}

var subscriptions = []subscription{
	{resourcev3.ClusterType, nil},
	{resourcev3.ListenerType, nil},
	{resourcev3.RouteType, []string{httpRouteTable}},
}

// dialADS connects as node (node.cluster is gw's group) and subscribes.
func dialADS(ctx context.Context, gw types.NamespacedName, node string, o adsOptions) (*adsClient, error) {
	cfg := o.tls
	if cfg == nil {
		cfg = clientTLS(xdsCA, gw)
	}
	cc, err := grpc.NewClient(xdsTarget, append([]grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(cfg))}, o.dial...)...)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	stream, err := discovery.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(sctx)
	if err != nil {
		cancel()
		cc.Close()
		return nil, err
	}
	c := &adsClient{node: node, cc: cc, stream: stream, cancel: cancel, opts: o,
		updates: make(chan struct{}, 1), done: make(chan struct{}), acked: map[string]string{}}
	subs := subscriptions
	if o.noRead {
		// The big route table first: the server's write of it overdraws
		// the stream's write quota, so its next response blocks in
		// flow control.
		subs = []subscription{subscriptions[2], subscriptions[0], subscriptions[1]}
	}
	for _, sub := range subs {
		if err := stream.Send(&discovery.DiscoveryRequest{
			Node:    &core.Node{Id: node, Cluster: xdsserver.NodeGroup(gw)},
			TypeUrl: sub.typeURL, ResourceNames: sub.names,
		}); err != nil {
			c.close()
			return nil, fmt.Errorf("subscribe %s: %w", sub.typeURL, err)
		}
	}
	if o.noRead {
		close(c.done)
	} else {
		go c.receive()
	}
	return c, nil
}

func (c *adsClient) receive() {
	defer close(c.done)
	for {
		resp, err := c.stream.Recv()
		if err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
		var refusal *status.Status
		if resp.GetTypeUrl() == resourcev3.RouteType {
			for _, a := range resp.GetResources() {
				var rc routev3.RouteConfiguration
				if err := a.UnmarshalTo(&rc); err == nil && rc.GetName() == httpRouteTable {
					text := prototext.Format(&rc)
					c.mu.Lock()
					c.nRDS++
					if c.opts.reject != "" && strings.Contains(text, c.opts.reject) {
						refusal = &status.Status{Code: int32(codes.InvalidArgument), Message: "route table mentions " + c.opts.reject}
						c.nacked++
					} else {
						c.rds, c.rdsText = &rc, text
					}
					c.mu.Unlock()
					select {
					case c.updates <- struct{}{}:
					default:
					}
				}
			}
		}
		if c.opts.noACK {
			continue
		}
		var names []string
		for _, sub := range subscriptions {
			if sub.typeURL == resp.GetTypeUrl() {
				names = sub.names
			}
		}
		c.mu.Lock()
		if refusal == nil {
			c.acked[resp.GetTypeUrl()] = resp.GetVersionInfo()
		}
		version := c.acked[resp.GetTypeUrl()]
		c.mu.Unlock()
		if err := c.stream.Send(&discovery.DiscoveryRequest{
			TypeUrl: resp.GetTypeUrl(), VersionInfo: version,
			ResponseNonce: resp.GetNonce(), ResourceNames: names, ErrorDetail: refusal,
		}); err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
	}
}

// has reports whether the latest route table mentions marker.
func (c *adsClient) has(marker string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Contains(c.rdsText, marker)
}

// refused is how many route tables the client NACKed.
func (c *adsClient) refused() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nacked
}

// routeTables is how many route tables the client received.
func (c *adsClient) routeTables() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nRDS
}

// wait returns once the latest route table mentions marker, or fails
// after timeout or when the stream ends.
func (c *adsClient) wait(marker string, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !c.has(marker) {
		select {
		case <-c.updates:
		case <-c.done:
			if c.has(marker) {
				return nil
			}
			return fmt.Errorf("node %s: stream ended before route table had %q: %v", c.node, marker, c.streamErr())
		case <-deadline.C:
			return fmt.Errorf("node %s: no route table with %q within %s (%d received)", c.node, marker, timeout, c.routeTables())
		}
	}
	return nil
}

func (c *adsClient) streamErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// alive reports whether the stream is still open.
func (c *adsClient) alive() bool {
	select {
	case <-c.done:
		return c.opts.noRead
	default:
		return true
	}
}

// close ends the stream and the connection and waits for the receive loop.
func (c *adsClient) close() {
	c.cancel()
	c.cc.Close()
	<-c.done
}
