package e2e_test

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
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

// deltaTypes are the types a delta client subscribes to, in Envoy's order:
// clusters (and their endpoints) before listeners (and their routes).
var deltaTypes = []string{resourcev3.ClusterType, resourcev3.EndpointType, resourcev3.ListenerType, resourcev3.RouteType}

// deltaClient is a raw incremental (delta) ADS client over mTLS, as Envoy
// speaks it, on go-control-plane's generated DeltaAggregatedResources
// client. It subscribes to every resource of each of deltaTypes, keeps the
// resources it holds with their versions, and ACKs each response (or NACKs
// a route configuration that mentions opts.reject). It records every
// response in order, and every route that referred to a cluster it did not
// hold when the route arrived.
type deltaClient struct {
	node   string
	group  string
	cc     *grpc.ClientConn
	stream discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
	cancel context.CancelFunc
	reject string

	mu sync.Mutex
	// have: type → resource name → version, of what the client holds.
	have map[string]map[string]string
	// routes: the route configurations held.
	routes    map[string]*routev3.RouteConfiguration
	responses []deltaResponse
	// dangling: routes that referred to a cluster not held on arrival.
	dangling []string
	nacked   int
	updates  chan struct{} // a token after each response
	done     chan struct{} // closed when the receive loop ends
	err      error
}

// deltaResponse is what one response carried.
type deltaResponse struct {
	typeURL string
	added   []string // resource names, sorted
	removed []string // sorted
	nacked  bool
	// endpoints: of each load assignment it carried, the addresses of
	// its endpoints ("ip:port").
	endpoints map[string][]string
}

func (r deltaResponse) String() string {
	return fmt.Sprintf("%s +%v -%v nacked=%v", shortType(r.typeURL), r.added, r.removed, r.nacked)
}

func shortType(typeURL string) string { return typeURL[strings.LastIndex(typeURL, ".")+1:] }

type deltaOptions struct {
	// initial: type → resource name → version the client says it holds
	// when it subscribes (initial_resource_versions, as after a
	// reconnect).
	initial map[string]map[string]string
	// reject: NACK every route configuration that mentions this text.
	reject string
	// target: the server to dial ("" for the suite's, xdsTarget).
	target string
}

// dialDelta connects as node (node.cluster is gw's group) and subscribes
// to every resource of deltaTypes.
func dialDelta(ctx context.Context, gw types.NamespacedName, node string, o deltaOptions) (*deltaClient, error) {
	target := xdsTarget
	if o.target != "" {
		target = o.target
	}
	cc, err := grpc.NewClient(target, grpc.WithTransportCredentials(credentials.NewTLS(clientTLS(xdsCA, gw))))
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	stream, err := discovery.NewAggregatedDiscoveryServiceClient(cc).DeltaAggregatedResources(sctx)
	if err != nil {
		cancel()
		cc.Close()
		return nil, err
	}
	c := &deltaClient{node: node, group: xdsserver.NodeGroup(gw), cc: cc, stream: stream, cancel: cancel, reject: o.reject,
		have: map[string]map[string]string{}, routes: map[string]*routev3.RouteConfiguration{},
		updates: make(chan struct{}, 1), done: make(chan struct{})}
	for _, typeURL := range deltaTypes {
		c.have[typeURL] = map[string]string{}
		for name, v := range o.initial[typeURL] {
			c.have[typeURL][name] = v
		}
		if err := stream.Send(&discovery.DeltaDiscoveryRequest{
			Node: c.nodeProto(), TypeUrl: typeURL, ResourceNamesSubscribe: []string{"*"},
			InitialResourceVersions: o.initial[typeURL],
		}); err != nil {
			c.close()
			return nil, fmt.Errorf("subscribe %s: %w", typeURL, err)
		}
	}
	go c.receive()
	return c, nil
}

func (c *deltaClient) nodeProto() *core.Node { return &core.Node{Id: c.node, Cluster: c.group} }

func (c *deltaClient) receive() {
	defer close(c.done)
	for {
		resp, err := c.stream.Recv()
		if err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
		refusal := c.apply(resp)
		if err := c.stream.Send(&discovery.DeltaDiscoveryRequest{
			Node: c.nodeProto(), TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce(), ErrorDetail: refusal,
		}); err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
		select {
		case c.updates <- struct{}{}:
		default:
		}
	}
}

// apply takes in one response, or refuses it whole (the client then keeps
// what it held, as Envoy does).
func (c *deltaClient) apply(resp *discovery.DeltaDiscoveryResponse) *status.Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	typeURL := resp.GetTypeUrl()
	rec := deltaResponse{typeURL: typeURL, removed: append([]string(nil), resp.GetRemovedResources()...)}
	sort.Strings(rec.removed)
	routes := map[string]*routev3.RouteConfiguration{}
	for _, r := range resp.GetResources() {
		rec.added = append(rec.added, r.GetName())
		if typeURL == resourcev3.EndpointType {
			var cla endpointv3.ClusterLoadAssignment
			if err := r.GetResource().UnmarshalTo(&cla); err != nil {
				c.err = err
				continue
			}
			if rec.endpoints == nil {
				rec.endpoints = map[string][]string{}
			}
			addrs := []string{}
			for _, l := range cla.GetEndpoints() {
				for _, e := range l.GetLbEndpoints() {
					a := e.GetEndpoint().GetAddress().GetSocketAddress()
					addrs = append(addrs, net.JoinHostPort(a.GetAddress(), strconv.Itoa(int(a.GetPortValue()))))
				}
			}
			rec.endpoints[r.GetName()] = addrs
		}
		if typeURL != resourcev3.RouteType {
			continue
		}
		var rc routev3.RouteConfiguration
		if err := r.GetResource().UnmarshalTo(&rc); err != nil {
			c.err = err
			continue
		}
		routes[r.GetName()] = &rc
		if c.reject != "" && !rec.nacked && containsText(&rc, c.reject) {
			rec.nacked = true
		}
	}
	sort.Strings(rec.added)
	c.responses = append(c.responses, rec)
	if rec.nacked {
		c.nacked++
		return &status.Status{Code: int32(codes.InvalidArgument), Message: "route configuration mentions " + c.reject}
	}
	for _, r := range resp.GetResources() {
		c.have[typeURL][r.GetName()] = r.GetVersion()
	}
	for _, name := range resp.GetRemovedResources() {
		delete(c.have[typeURL], name)
		if typeURL == resourcev3.RouteType {
			delete(c.routes, name)
		}
	}
	for name, rc := range routes {
		c.routes[name] = rc
		for _, cluster := range referencedClusters(rc) {
			if _, ok := c.have[resourcev3.ClusterType][cluster]; !ok {
				c.dangling = append(c.dangling, fmt.Sprintf("route configuration %s refers to cluster %s, not yet received", name, cluster))
			}
		}
	}
	return nil
}

func containsText(rc *routev3.RouteConfiguration, text string) bool {
	return strings.Contains(prototext.Format(rc), text)
}

// referencedClusters lists the clusters a route configuration's routes
// forward to.
func referencedClusters(rc *routev3.RouteConfiguration) []string {
	var out []string
	for _, vh := range rc.GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			a := r.GetRoute()
			if a == nil {
				continue
			}
			if name := a.GetCluster(); name != "" {
				out = append(out, name)
			}
			for _, w := range a.GetWeightedClusters().GetClusters() {
				out = append(out, w.GetName())
			}
		}
	}
	return out
}

// held returns a copy of what the client holds: type → name → version.
func (c *deltaClient) held() map[string]map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]map[string]string{}
	for t, m := range c.have {
		out[t] = map[string]string{}
		for k, v := range m {
			out[t][k] = v
		}
	}
	return out
}

// names lists the resources of one type the client holds.
func (c *deltaClient) names(typeURL string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.have[typeURL]))
	for name := range c.have[typeURL] {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// routeText is the route configuration named name, as text ("" if not held).
func (c *deltaClient) routeText(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rc := c.routes[name]; rc != nil {
		return prototext.Format(rc)
	}
	return ""
}

// log returns the responses received so far, in order.
func (c *deltaClient) log() []deltaResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]deltaResponse(nil), c.responses...)
}

func (c *deltaClient) danglingRoutes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.dangling...)
}

func (c *deltaClient) refused() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nacked
}

func (c *deltaClient) streamErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// close ends the stream and the connection and waits for the receive loop.
func (c *deltaClient) close() {
	c.cancel()
	c.cc.Close()
	<-c.done
}
