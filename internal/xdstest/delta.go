package xdstest

import (
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// DeltaTypes are the types a proxy subscribes to, in Envoy's order:
// clusters (and their endpoints) before listeners (and their routes).
var DeltaTypes = []string{resourcev3.ClusterType, resourcev3.EndpointType, resourcev3.ListenerType, resourcev3.RouteType}

// DeltaOptions configure an incremental client.
type DeltaOptions struct {
	// Node is sent on every request.
	Node *core.Node
	// Types are subscribed to, every resource of each ("*"), when the
	// stream opens, in this order.
	Types []string
	// Initial: type → resource name → version the client says it holds
	// when it subscribes (initial_resource_versions, as after a
	// reconnect).
	Initial map[string]map[string]string
	// NoACK: record the responses but never answer them.
	NoACK bool
	// Reject, when it returns a message, NACKs the whole response with
	// it; the client keeps what it held, as Envoy does.
	Reject func(*DeltaResponse) string
	// CallOptions are passed to the stream.
	CallOptions []grpc.CallOption
}

// DeltaResponse is one incremental response as the client received it. It
// is not changed once recorded.
type DeltaResponse struct {
	At            time.Time
	TypeURL       string
	SystemVersion string
	Nonce         string
	// Added are the names of the resources it carried, Removed those it
	// removed; both sorted.
	Added   []string
	Removed []string
	// Resources are the resources it carried, decoded, and Versions
	// their versions, by name.
	Resources map[string]proto.Message
	Versions  map[string]string
	// Nacked: the client refused it (DeltaOptions.Reject).
	Nacked bool
}

func (r *DeltaResponse) String() string {
	return fmt.Sprintf("%s +%v -%v nacked=%v", ShortType(r.TypeURL), r.Added, r.Removed, r.Nacked)
}

// Endpoints are, of each load assignment the response carried, the
// addresses of its endpoints ("ip:port"), in order.
func (r *DeltaResponse) Endpoints() map[string][]string {
	out := map[string][]string{}
	for name, m := range r.Resources {
		if cla, ok := m.(*endpointv3.ClusterLoadAssignment); ok {
			out[name] = Addresses(cla)
		}
	}
	return out
}

// Addresses are a load assignment's endpoint addresses ("ip:port"), in
// order.
func Addresses(cla *endpointv3.ClusterLoadAssignment) []string {
	addrs := []string{}
	for _, l := range cla.GetEndpoints() {
		for _, e := range l.GetLbEndpoints() {
			a := e.GetEndpoint().GetAddress().GetSocketAddress()
			addrs = append(addrs, net.JoinHostPort(a.GetAddress(), strconv.Itoa(int(a.GetPortValue()))))
		}
	}
	return addrs
}

// ShortType is a type URL's last element ("Cluster" for a cluster).
func ShortType(typeURL string) string { return typeURL[strings.LastIndex(typeURL, ".")+1:] }

// RouteClusters lists the clusters a route configuration's routes forward
// to, in order.
func RouteClusters(rc *routev3.RouteConfiguration) []string {
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

// Delta is an incremental ADS client on one stream. It keeps the resources
// it holds with their versions, and records every route configuration
// that referred to a cluster it did not hold when the route arrived.
type Delta struct {
	client[*DeltaResponse]
	opts   DeltaOptions
	stream discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesClient

	// Under client.mu. have: type → name → version; res: type → name →
	// resource; of what the client holds.
	have     map[string]map[string]string
	res      map[string]map[string]proto.Message
	dangling []string
}

// DialDelta connects to target with cfg and opens a client on its own
// connection, which Close closes.
func DialDelta(ctx context.Context, target string, cfg *tls.Config, o DeltaOptions, dial ...grpc.DialOption) (*Delta, error) {
	return dialOwn(target, cfg, dial, func(cc grpc.ClientConnInterface) (*Delta, error) { return OpenDelta(ctx, cc, o) })
}

// OpenDelta opens a client on a stream of cc and subscribes to o.Types.
func OpenDelta(ctx context.Context, cc grpc.ClientConnInterface, o DeltaOptions) (*Delta, error) {
	sctx, cancel := context.WithCancel(ctx)
	stream, err := discovery.NewAggregatedDiscoveryServiceClient(cc).DeltaAggregatedResources(sctx, o.CallOptions...)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("open an incremental stream: %w", err)
	}
	c := &Delta{client: client[*DeltaResponse]{cancel: cancel, n: newNotifier(), node: o.Node}, opts: o, stream: stream,
		have: map[string]map[string]string{}, res: map[string]map[string]proto.Message{}}
	for _, typeURL := range DeltaTypes {
		c.have[typeURL] = maps.Clone(o.Initial[typeURL])
		if c.have[typeURL] == nil {
			c.have[typeURL] = map[string]string{}
		}
		c.res[typeURL] = map[string]proto.Message{}
	}
	for _, typeURL := range o.Types {
		if err := c.Subscribe(typeURL, "*"); err != nil {
			c.Close()
			return nil, err
		}
	}
	go c.receive()
	return c, nil
}

// Subscribe adds names ("*": every resource) of typeURL to the
// subscription, telling the server what the client holds of it.
func (c *Delta) Subscribe(typeURL string, names ...string) error {
	c.mu.Lock()
	if c.have[typeURL] == nil {
		c.have[typeURL] = map[string]string{}
		c.res[typeURL] = map[string]proto.Message{}
	}
	req := &discovery.DeltaDiscoveryRequest{Node: c.node, TypeUrl: typeURL, ResourceNamesSubscribe: names,
		InitialResourceVersions: c.opts.Initial[typeURL]}
	c.mu.Unlock()
	if err := c.stream.Send(req); err != nil {
		return fmt.Errorf("subscribe %s: %w", typeURL, err)
	}
	return nil
}

// Send sends req as it is: a test of the protocol's edges writes the
// requests itself.
func (c *Delta) Send(req *discovery.DeltaDiscoveryRequest) error { return c.stream.Send(req) }

func (c *Delta) receive() {
	defer close(c.n.done)
	for {
		resp, err := c.stream.Recv()
		if err != nil {
			c.fail(err)
			return
		}
		refusal := c.apply(resp)
		c.n.notify()
		if c.opts.NoACK {
			continue
		}
		if err := c.stream.Send(&discovery.DeltaDiscoveryRequest{
			Node: c.Node(), TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce(), ErrorDetail: refusal,
		}); err != nil {
			c.fail(fmt.Errorf("ACK %s: %w", resp.GetTypeUrl(), err))
			return
		}
	}
}

// apply records one response and takes it in, or refuses it whole.
func (c *Delta) apply(resp *discovery.DeltaDiscoveryResponse) *status.Status {
	typeURL := resp.GetTypeUrl()
	r := &DeltaResponse{At: time.Now(), TypeURL: typeURL, SystemVersion: resp.GetSystemVersionInfo(), Nonce: resp.GetNonce(),
		Removed:   slices.Sorted(slices.Values(resp.GetRemovedResources())),
		Resources: map[string]proto.Message{}, Versions: map[string]string{}}
	var problems []string
	for _, x := range resp.GetResources() {
		r.Added = append(r.Added, x.GetName())
		r.Versions[x.GetName()] = x.GetVersion()
		if x.GetResource() == nil {
			continue
		}
		_, m, err := decode(x.GetResource())
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		r.Resources[x.GetName()] = m
	}
	slices.Sort(r.Added)
	refusal := refuse(c.opts.Reject, r)
	r.Nacked = refusal != nil
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record(r, r.Nacked, problems)
	if r.Nacked {
		return refusal
	}
	if c.have[typeURL] == nil {
		c.have[typeURL] = map[string]string{}
		c.res[typeURL] = map[string]proto.Message{}
	}
	for name, v := range r.Versions {
		c.have[typeURL][name] = v
		c.res[typeURL][name] = r.Resources[name]
	}
	for _, name := range r.Removed {
		delete(c.have[typeURL], name)
		delete(c.res[typeURL], name)
	}
	for _, name := range r.Added {
		rc, ok := r.Resources[name].(*routev3.RouteConfiguration)
		if !ok {
			continue
		}
		for _, cluster := range RouteClusters(rc) {
			if _, ok := c.have[resourcev3.ClusterType][cluster]; !ok {
				c.dangling = append(c.dangling, fmt.Sprintf("route configuration %s refers to cluster %s, not yet received", name, cluster))
			}
		}
	}
	return nil
}

// Held returns a copy of what the client holds: type → name → version.
func (c *Delta) Held() map[string]map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]map[string]string, len(c.have))
	for t, m := range c.have {
		out[t] = maps.Clone(m)
	}
	return out
}

// Names lists the resources of typeURL the client holds, sorted.
func (c *Delta) Names(typeURL string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.have[typeURL]))
}

// Resource is the named resource of typeURL the client holds (nil if none).
func (c *Delta) Resource(typeURL, name string) proto.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.res[typeURL][name]
}

// Text is the named resource of typeURL the client holds, in text form (""
// if none).
func (c *Delta) Text(typeURL, name string) string { return Text(c.Resource(typeURL, name)) }

// Log returns the responses received so far, in order, refused ones
// included.
func (c *Delta) Log() []*DeltaResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.responses)
}

// Dangling lists the route configurations that referred to a cluster the
// client did not hold when they arrived.
func (c *Delta) Dangling() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.dangling)
}
