package xdstest

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// Subscription is what a state-of-the-world client asks for of one type:
// the named resources, or every one (no names).
type Subscription struct {
	TypeURL string
	Names   []string
}

// SotwOptions configure a state-of-the-world client.
type SotwOptions struct {
	// Node is sent on every request (node.cluster is the Gateway's group).
	Node *core.Node
	// Subscriptions are asked for when the stream opens, in this order.
	Subscriptions []Subscription
	// NoACK: record the responses but never answer them.
	NoACK bool
	// NoRead: never read the stream, so that its flow-control window
	// fills.
	NoRead bool
	// Reject, when it returns a message, NACKs the response with it, as a
	// proxy refusing it would; the client keeps what it held.
	Reject func(*Response) string
	// CallOptions are passed to the stream.
	CallOptions []grpc.CallOption
}

// Response is one state-of-the-world response as the client received it.
// It is not changed once recorded.
type Response struct {
	At      time.Time
	TypeURL string
	Version string
	Nonce   string
	// Names are the resources' names, in the response's order;
	// Resources the resources by name, decoded.
	Names     []string
	Resources map[string]proto.Message
	// Nacked: the client refused it (SotwOptions.Reject).
	Nacked bool
}

// Sotw is a state-of-the-world ADS client on one stream.
type Sotw struct {
	client[*Response]
	opts   SotwOptions
	stream discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient

	// Under client.mu:
	subs   map[string][]string
	acked  map[string]string    // the last version accepted, per type
	nonces map[string]string    // the last nonce received, per type
	held   map[string]*Response // the last response accepted, per type
	texts  map[[2]string]string // Text's cache of the held resources
}

// DialSotw connects to target with cfg and opens a client on its own
// connection, which Close closes.
func DialSotw(ctx context.Context, target string, cfg *tls.Config, o SotwOptions, dial ...grpc.DialOption) (*Sotw, error) {
	return dialOwn(target, cfg, dial, func(cc grpc.ClientConnInterface) (*Sotw, error) { return OpenSotw(ctx, cc, o) })
}

// OpenSotw opens a client on a stream of cc and asks for o.Subscriptions.
func OpenSotw(ctx context.Context, cc grpc.ClientConnInterface, o SotwOptions) (*Sotw, error) {
	sctx, cancel := context.WithCancel(ctx)
	stream, err := discovery.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(sctx, o.CallOptions...)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("open a state-of-the-world stream: %w", err)
	}
	c := &Sotw{client: client[*Response]{cancel: cancel, n: newNotifier(), node: o.Node}, opts: o, stream: stream,
		subs: map[string][]string{}, acked: map[string]string{}, nonces: map[string]string{},
		held: map[string]*Response{}, texts: map[[2]string]string{}}
	for _, s := range o.Subscriptions {
		if err := c.Request(s.TypeURL, s.Names...); err != nil {
			c.Close()
			return nil, err
		}
	}
	if o.NoRead {
		close(c.n.done)
	} else {
		go c.receive()
	}
	return c, nil
}

// Request asks for the named resources of typeURL (none: every one), with
// the last version accepted and nonce received, as a changed subscription
// does. It may be called before or after the first response.
func (c *Sotw) Request(typeURL string, names ...string) error {
	c.mu.Lock()
	c.subs[typeURL] = names
	req := &discovery.DiscoveryRequest{Node: c.node, TypeUrl: typeURL, ResourceNames: names,
		VersionInfo: c.acked[typeURL], ResponseNonce: c.nonces[typeURL]}
	c.mu.Unlock()
	if err := c.stream.Send(req); err != nil {
		return fmt.Errorf("request %s: %w", typeURL, err)
	}
	return nil
}

// NACK refuses r with message, whatever the options say.
func (c *Sotw) NACK(r *Response, message string) error {
	c.mu.Lock()
	req := &discovery.DiscoveryRequest{Node: c.node, TypeUrl: r.TypeURL, ResourceNames: c.subs[r.TypeURL],
		VersionInfo: c.acked[r.TypeURL], ResponseNonce: r.Nonce,
		ErrorDetail: &status.Status{Code: int32(codes.InvalidArgument), Message: message}}
	c.mu.Unlock()
	if err := c.stream.Send(req); err != nil {
		return fmt.Errorf("NACK %s: %w", r.TypeURL, err)
	}
	return nil
}

// Send sends req as it is: a test of the protocol's edges writes the
// requests itself.
func (c *Sotw) Send(req *discovery.DiscoveryRequest) error { return c.stream.Send(req) }

func (c *Sotw) receive() {
	defer close(c.n.done)
	for {
		resp, err := c.stream.Recv()
		if err != nil {
			c.fail(err)
			return
		}
		r := &Response{At: time.Now(), TypeURL: resp.GetTypeUrl(), Version: resp.GetVersionInfo(), Nonce: resp.GetNonce(),
			Resources: make(map[string]proto.Message, len(resp.GetResources()))}
		var problems []string
		for _, a := range resp.GetResources() {
			name, m, err := decode(a)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			r.Names = append(r.Names, name)
			r.Resources[name] = m
		}
		refusal := refuse(c.opts.Reject, r)
		r.Nacked = refusal != nil
		c.mu.Lock()
		c.record(r, r.Nacked, problems)
		c.nonces[r.TypeURL] = r.Nonce
		if !r.Nacked {
			c.acked[r.TypeURL] = r.Version
			c.held[r.TypeURL] = r
			for k := range c.texts {
				if k[0] == r.TypeURL {
					delete(c.texts, k)
				}
			}
		}
		ack := &discovery.DiscoveryRequest{Node: c.node, TypeUrl: r.TypeURL, VersionInfo: c.acked[r.TypeURL],
			ResponseNonce: r.Nonce, ResourceNames: c.subs[r.TypeURL], ErrorDetail: refusal}
		c.mu.Unlock()
		c.n.notify()
		if c.opts.NoACK {
			continue
		}
		if err := c.stream.Send(ack); err != nil {
			c.fail(fmt.Errorf("ACK %s: %w", r.TypeURL, err))
			return
		}
	}
}

// Held is the last response of typeURL the client accepted (nil if none).
func (c *Sotw) Held(typeURL string) *Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held[typeURL]
}

// Resource is the named resource of typeURL as last accepted (nil if not
// held).
func (c *Sotw) Resource(typeURL, name string) proto.Message {
	if r := c.Held(typeURL); r != nil {
		return r.Resources[name]
	}
	return nil
}

// Text is the named resource of typeURL as last accepted, in text form (""
// if not held).
func (c *Sotw) Text(typeURL, name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := [2]string{typeURL, name}
	if t, ok := c.texts[k]; ok {
		return t
	}
	r := c.held[typeURL]
	if r == nil {
		return ""
	}
	t := Text(r.Resources[name])
	c.texts[k] = t
	return t
}

// Responses are the responses of typeURL ("": of every type) received so
// far, in order, refused ones included.
func (c *Sotw) Responses(typeURL string) []*Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Response, 0, len(c.responses))
	for _, r := range c.responses {
		if typeURL == "" || r.TypeURL == typeURL {
			out = append(out, r)
		}
	}
	return out
}

// Alive reports whether the stream is still open (a NoRead stream is, until
// Close).
func (c *Sotw) Alive() bool {
	if c.opts.NoRead {
		return c.Err() == nil
	}
	select {
	case <-c.n.done:
		return false
	default:
		return true
	}
}
