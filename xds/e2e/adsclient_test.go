package e2e_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/xdstest"
	xdsserver "github.com/shardgate/shardgate/xds/server"
)

// adsClient is the shared state-of-the-world client (xdstest.Sotw) as these
// tests use it: subscribed to every cluster and listener and to the
// Gateway's HTTP route table.
type adsClient struct {
	*xdstest.Sotw
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

var subscriptions = []xdstest.Subscription{
	{TypeURL: resourcev3.ClusterType},
	{TypeURL: resourcev3.ListenerType},
	{TypeURL: resourcev3.RouteType, Names: []string{httpRouteTable}},
}

// dialADS connects as node (node.cluster is gw's group) and subscribes.
func dialADS(ctx context.Context, gw types.NamespacedName, node string, o adsOptions) (*adsClient, error) {
	cfg := o.tls
	if cfg == nil {
		cfg = clientTLS(xdsCA, gw)
	}
	so := xdstest.SotwOptions{
		Node:          &core.Node{Id: node, Cluster: xdsserver.NodeGroup(gw)},
		Subscriptions: subscriptions, NoACK: o.noACK, NoRead: o.noRead,
	}
	if o.noRead {
		// The big route table first: the server's write of it overdraws
		// the stream's write quota, so its next response blocks in
		// flow control.
		so.Subscriptions = []xdstest.Subscription{subscriptions[2], subscriptions[0], subscriptions[1]}
	}
	if o.reject != "" {
		so.Reject = func(r *xdstest.Response) string {
			if r.TypeURL == resourcev3.RouteType && strings.Contains(xdstest.Text(r.Resources[httpRouteTable]), o.reject) {
				return "route table mentions " + o.reject
			}
			return ""
		}
	}
	c, err := xdstest.DialSotw(ctx, xdsTarget, cfg, so, o.dial...)
	if err != nil {
		return nil, err
	}
	return &adsClient{Sotw: c}, nil
}

// has reports whether the latest route table accepted mentions marker.
func (c *adsClient) has(marker string) bool {
	return strings.Contains(c.Text(resourcev3.RouteType, httpRouteTable), marker)
}

// routeTables is how many route tables the client received.
func (c *adsClient) routeTables() int { return len(c.Responses(resourcev3.RouteType)) }

// wait returns once the latest route table mentions marker, or fails
// after timeout or when the stream ends.
func (c *adsClient) wait(marker string, timeout time.Duration) error {
	return c.WaitFor(timeout, fmt.Sprintf("a route table with %q", marker), func() bool { return c.has(marker) })
}
