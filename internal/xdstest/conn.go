package xdstest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"k8s.io/apimachinery/pkg/types"

	// The resource types a response may carry, registered so that every
	// response decodes.
	_ "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"

	"github.com/shardgate/shardgate/internal/pki"
)

// GatewayTLS is a client TLS config for a proxy of gw: a fresh client
// certificate for gw issued by ca, trusting ca for the server, whose
// certificate names localhost.
func GatewayTLS(ca *pki.CA, gw types.NamespacedName) (*tls.Config, error) {
	certPEM, keyPEM, err := ca.IssueGateway(gw)
	if err != nil {
		return nil, fmt.Errorf("issue a client certificate for %s: %w", gw, err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("client certificate for %s: %w", gw, err)
	}
	return &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// ServerCertificates is a load function for the xDS server's credentials:
// each call issues a fresh server certificate for localhost from ca, and
// trusts ca for the clients.
func ServerCertificates(ca *pki.CA) func(context.Context, bool) (*tls.Certificate, *x509.CertPool, error) {
	return func(context.Context, bool) (*tls.Certificate, *x509.CertPool, error) {
		certPEM, keyPEM, err := ca.Issue("localhost", []string{"localhost"}, nil, time.Hour, true)
		if err != nil {
			return nil, nil, fmt.Errorf("issue a server certificate: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, nil, fmt.Errorf("server certificate: %w", err)
		}
		return &cert, ca.Pool(), nil
	}
}

// Dial opens a client connection to target over TLS with cfg. A bare
// host:port is dialled as it is (passthrough), not resolved.
func Dial(target string, cfg *tls.Config, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	cc, err := grpc.NewClient("passthrough:///"+target, append([]grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(cfg))}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", target, err)
	}
	return cc, nil
}

// decode unpacks a resource, and names it as the server does.
func decode(a *anypb.Any) (string, proto.Message, error) {
	m, err := a.UnmarshalNew()
	if err != nil {
		return "", nil, fmt.Errorf("decode %s: %w", a.GetTypeUrl(), err)
	}
	return cachev3.GetResourceName(m), m, nil
}

// Text is a resource in protobuf text form ("" for nil).
func Text(m proto.Message) string {
	if m == nil {
		return ""
	}
	return prototext.Format(m)
}

// notifier wakes waiters after each change, and tells them when the stream
// ended.
type notifier struct {
	updates chan struct{} // a token after each change
	done    chan struct{} // closed when the receive loop ends
}

func newNotifier() notifier {
	return notifier{updates: make(chan struct{}, 1), done: make(chan struct{})}
}

func (n notifier) notify() {
	select {
	case n.updates <- struct{}{}:
	default:
	}
}

// wait returns nil once cond holds (checked now and after each change), or
// an error after timeout or once the stream has ended without it.
func (n notifier) wait(mu *sync.Mutex, streamErr *error, timeout time.Duration, what string, cond func() bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-n.updates:
		case <-n.done:
			if cond() {
				return nil
			}
			mu.Lock()
			err := *streamErr
			mu.Unlock()
			return fmt.Errorf("stream ended before %s: %v", what, err)
		case <-deadline.C:
			return fmt.Errorf("not %s within %s", what, timeout)
		}
	}
	return nil
}
