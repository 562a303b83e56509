package xdstest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// client is what the state-of-the-world and the incremental client share:
// the node they send, their stream's end, and the record of the responses
// (of type R) they received. Each embeds it and adds its protocol.
type client[R any] struct {
	cancel context.CancelFunc
	cc     *grpc.ClientConn // closed by Close when the client dialled it
	n      notifier

	mu        sync.Mutex
	node      *core.Node
	responses []R
	read      int // Next's position in responses
	nacked    int
	problems  []string
	err       error
}

// dialOwn dials target with cfg and opens a client on that connection,
// which the client's Close then closes.
func dialOwn[C interface{ own(*grpc.ClientConn) }](target string, cfg *tls.Config, dial []grpc.DialOption, open func(grpc.ClientConnInterface) (C, error)) (C, error) {
	var none C
	cc, err := Dial(target, cfg, dial...)
	if err != nil {
		return none, err
	}
	c, err := open(cc)
	if err != nil {
		cc.Close()
		return none, err
	}
	c.own(cc)
	return c, nil
}

func (c *client[R]) own(cc *grpc.ClientConn) { c.cc = cc }

// refuse is the error detail of a NACK of r when reject (which may be nil)
// refuses it, nil when the client accepts r.
func refuse[R any](reject func(R) string, r R) *status.Status {
	if reject == nil {
		return nil
	}
	if msg := reject(r); msg != "" {
		return &status.Status{Code: int32(codes.InvalidArgument), Message: msg}
	}
	return nil
}

// record appends r, refused or not, and the problems decoding it. Call
// with c.mu held.
func (c *client[R]) record(r R, refused bool, problems []string) {
	c.problems = append(c.problems, problems...)
	c.responses = append(c.responses, r)
	if refused {
		c.nacked++
	}
}

// SetNode changes the node sent on the requests that follow (a proxy never
// does; a test of identity does).
func (c *client[R]) SetNode(n *core.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.node = n
}

// Node is the node sent on requests.
func (c *client[R]) Node() *core.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.node
}

// Done is closed when the stream has ended (Err says why).
func (c *client[R]) Done() <-chan struct{} { return c.n.done }

func (c *client[R]) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
}

// Next returns the first response that Next has not returned yet, waiting
// up to timeout for it, or the error that ended the stream.
func (c *client[R]) Next(timeout time.Duration) (R, error) {
	var r R
	err := c.n.wait(&c.mu, &c.err, timeout, "a response", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.read < len(c.responses) {
			r = c.responses[c.read]
			c.read++
			return true
		}
		return false
	})
	if err != nil {
		var none R
		if serr := c.Err(); serr != nil {
			return none, serr
		}
		return none, err
	}
	return r, nil
}

// Refused is how many responses the client NACKed.
func (c *client[R]) Refused() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nacked
}

// Problems are the resources that did not decode.
func (c *client[R]) Problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.problems)
}

// Err is the error that ended the stream (nil while it is up).
func (c *client[R]) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// WaitFor returns nil once cond holds (checked now and after every
// response), or an error saying what was awaited after timeout or once
// the stream ended without it.
func (c *client[R]) WaitFor(timeout time.Duration, what string, cond func() bool) error {
	if err := c.n.wait(&c.mu, &c.err, timeout, what, cond); err != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		return fmt.Errorf("node %s: %w (%d responses)", c.node.GetId(), err, len(c.responses))
	}
	return nil
}

// CloseStream ends the stream alone, and waits for the receive loop; the
// connection stays until Close.
func (c *client[R]) CloseStream() {
	c.cancel()
	<-c.n.done
	c.fail(errors.New("closed by the client"))
}

// Close ends the stream (and the connection the client dialled) and waits
// for the receive loop.
func (c *client[R]) Close() {
	c.cancel()
	if c.cc != nil {
		c.cc.Close()
	}
	<-c.n.done
	c.fail(errors.New("closed by the client"))
}
