package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/pki"
	"github.com/shardgate/shardgate/internal/testwait"
	"github.com/shardgate/shardgate/internal/xdstest"
)

// Hostile-tenant tests of xDS identity. Tenant A's Gateway serves a TLS
// listener, so its config carries a Secret with a private key; tenant B
// holds a valid client certificate for its own Gateway. go-control-plane
// numbers state-of-the-world and delta streams with separate counters, so on
// a fresh server B's first sotw stream and first delta stream both have ID 1:
// anything keyed by that number alone lets one stream's open or close change
// what the other may read. Each test starts its own server so the counters
// start at zero and the IDs collide.

var (
	victimGW   = k8stypes.NamespacedName{Namespace: "tenant-a", Name: "gw"}
	attackerGW = k8stypes.NamespacedName{Namespace: "tenant-b", Name: "gw"}
)

// victimKey is the private key bytes in the victim's Secret (from the
// translator's golden input).
const victimKey = "-----BEGIN PRIVATE KEY-----"

type identityEnv struct {
	srv    *Server
	ca     *pki.CA
	target string
}

// startIdentityServer runs a real xDS server over mTLS on 127.0.0.1 with
// the victim's and the attacker's Gateways published. It stops the server,
// and waits for every stream to be closed, when the test ends.
func startIdentityServer(t *testing.T, configure ...func(*Options)) *identityEnv {
	t.Helper()
	ca := mustCA(t, "xds CA")
	creds, err := NewCredentials(context.Background(), xdstest.ServerCertificates(ca), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Address: "127.0.0.1:0", TLS: creds.TLSConfig(), Log: logr.Discard()}
	for _, c := range configure {
		c(&opts)
	}
	s := New(opts)
	victim := gatewayIR(t, "https-single-server.in.yaml")
	victim.Namespace, victim.Name = victimGW.Namespace, victimGW.Name
	attacker := gatewayIR(t, "http-single-route.in.yaml")
	attacker.Namespace, attacker.Name = attackerGW.Namespace, attackerGW.Name
	publishIR(s, victim, attacker)
	if errs := s.PublishErrors(); len(errs) != 0 {
		t.Fatalf("publish: %v", errs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		// Start returns after a graceful stop: every stream handler
		// (and its close callback) has finished.
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	eventually(t, func() error {
		if s.Addr() == nil || !s.Serving() {
			return errors.New("not serving yet")
		}
		return nil
	})
	_, port, _ := net.SplitHostPort(s.Addr().String())
	return &identityEnv{srv: s, ca: ca, target: net.JoinHostPort("127.0.0.1", port)}
}

// eventually polls cond until it returns nil, or fails with its last error
// (testwait.Succeeds).
func eventually(t *testing.T, cond func() error) {
	t.Helper()
	testwait.Succeeds(t, cond)
}

// conn dials the server with a client certificate from the xDS CA; gw nil
// issues one that names no Gateway.
func (e *identityEnv) conn(t *testing.T, gw *k8stypes.NamespacedName) *grpc.ClientConn {
	t.Helper()
	var uris []string
	name := "provider-tool"
	if gw != nil {
		uris, name = []string{pki.GatewayURI(*gw)}, "gateway:"+gw.String()
	}
	certPEM, keyPEM, err := e.ca.Issue(name, nil, uris, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{RootCAs: e.ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	cc, err := grpc.NewClient("passthrough:///"+e.target, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func node(id string, gw k8stypes.NamespacedName) *core.Node {
	return &core.Node{Id: id, Cluster: NodeGroup(gw)}
}

// rawStream is one ADS stream, state of the world or delta, on the shared
// test clients: it never answers on its own, so each ask is one request
// and its response.
type rawStream struct {
	t     *testing.T
	sotw  *xdstest.Sotw
	delta *xdstest.Delta
}

func openSotw(t *testing.T, cc *grpc.ClientConn) *rawStream {
	t.Helper()
	st, err := xdstest.OpenSotw(context.Background(), cc, xdstest.SotwOptions{NoACK: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return &rawStream{t: t, sotw: st}
}

func openDelta(t *testing.T, cc *grpc.ClientConn) *rawStream {
	t.Helper()
	st, err := xdstest.OpenDelta(context.Background(), cc, xdstest.DeltaOptions{NoACK: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return &rawStream{t: t, delta: st}
}

// answer is what one request got: the resources of the response, or the
// error that ended the stream.
type answer struct {
	resp      *xdstest.Response
	resources []proto.Message
	version   string
	nonce     string
	err       error
}

// ask sends one request for every resource of typeURL as n, and returns the
// next response or the error that ended the stream (within 10 s).
func (r *rawStream) ask(n *core.Node, typeURL string) answer {
	r.t.Helper()
	if r.sotw != nil {
		r.sotw.SetNode(n)
		return r.recv(r.sotw.Request(typeURL))
	}
	r.delta.SetNode(n)
	return r.recv(r.delta.Subscribe(typeURL, "*"))
}

// recv returns the next response or the error that ended the stream
// (within 10 s); sendErr is the error of the request that asked for it.
func (r *rawStream) recv(sendErr error) answer {
	if r.sotw != nil {
		resp, err := r.sotw.Next(10 * time.Second)
		if err != nil {
			return answer{err: err}
		}
		a := answer{resp: resp, version: resp.Version, nonce: resp.Nonce, err: sendErr}
		for _, name := range resp.Names {
			a.resources = append(a.resources, resp.Resources[name])
		}
		return a
	}
	resp, err := r.delta.Next(10 * time.Second)
	if err != nil {
		return answer{err: err}
	}
	a := answer{version: resp.SystemVersion, nonce: resp.Nonce, err: sendErr}
	for _, name := range resp.Added {
		if m := resp.Resources[name]; m != nil {
			a.resources = append(a.resources, m)
		}
	}
	return a
}

// nack rejects a state-of-the-world response.
func (r *rawStream) nack(a answer) error {
	return r.sotw.NACK(a.resp, "identity test rejects this")
}

// close ends the stream from the client side.
func (r *rawStream) close() {
	if r.sotw != nil {
		r.sotw.Close()
		return
	}
	r.delta.Close()
}

// leaked reports what of the victim's config an answer carries: its
// Secrets (with their private keys) or its clusters.
func leaked(a answer) []string {
	var out []string
	for _, res := range a.resources {
		if sec, ok := res.(*tlsv3.Secret); ok {
			key := string(sec.GetTlsCertificate().GetPrivateKey().GetInlineBytes())
			out = append(out, fmt.Sprintf("Secret %s (private key present: %t)", sec.GetName(), strings.Contains(key, victimKey)))
			continue
		}
		out = append(out, string(res.ProtoReflect().Descriptor().FullName()))
	}
	return out
}

// expectRefused checks that the answer is a refusal and carries nothing.
func expectRefused(t *testing.T, what string, a answer) {
	t.Helper()
	if got := leaked(a); len(got) > 0 {
		t.Fatalf("%s: the server answered with tenant A's config: %v", what, got)
	}
	if a.err == nil {
		t.Fatalf("%s: not refused (empty response, version %q)", what, a.version)
	}
	if c := status.Code(a.err); c != codes.PermissionDenied {
		t.Fatalf("%s: refused with %v (%v), want PermissionDenied", what, c, a.err)
	}
	t.Logf("%s: refused: %v", what, a.err)
}

// expectServed checks that the answer carries resources.
func expectServed(t *testing.T, what string, a answer) {
	t.Helper()
	if a.err != nil {
		t.Fatalf("%s: %v", what, a.err)
	}
	if len(a.resources) == 0 {
		t.Fatalf("%s: empty response (version %q)", what, a.version)
	}
}

// connected reads the connected-proxies gauge.
func connected() float64 {
	var m dto.Metric
	_ = connectedProxies.Write(&m)
	return m.GetGauge().GetValue()
}

// waitClosed waits until the server has handled the close of one stream
// (the connected-proxies gauge is decremented by its close callback).
func waitClosed(t *testing.T, before float64) {
	t.Helper()
	eventually(t, func() error {
		if v := connected(); v != before-1 {
			return fmt.Errorf("connected proxies %v, want %v", v, before-1)
		}
		return nil
	})
}

// B opens a sotw stream and a delta stream (both ID 1), closes the sotw
// one, then asks on the delta stream for A's Gateway.
func TestIdentitySotwThenDeltaCannotReadAnotherGateway(t *testing.T) {
	e := startIdentityServer(t)
	cc := e.conn(t, &attackerGW)
	sotw := openSotw(t, cc)
	expectServed(t, "B's own listeners on sotw", sotw.ask(node("b", attackerGW), resourcev3.ListenerType))
	delta := openDelta(t, cc)
	expectServed(t, "B's own clusters on delta", delta.ask(node("b", attackerGW), resourcev3.ClusterType))

	before := connected()
	sotw.close()
	waitClosed(t, before)

	expectRefused(t, "delta stream asking for A's Secrets", delta.ask(node("b", victimGW), resourcev3.SecretType))
}

// The other order: delta first, then sotw; B closes the delta stream and
// asks on the sotw stream.
func TestIdentityDeltaThenSotwCannotReadAnotherGateway(t *testing.T) {
	e := startIdentityServer(t)
	cc := e.conn(t, &attackerGW)
	delta := openDelta(t, cc)
	expectServed(t, "B's own clusters on delta", delta.ask(node("b", attackerGW), resourcev3.ClusterType))
	sotw := openSotw(t, cc)
	expectServed(t, "B's own listeners on sotw", sotw.ask(node("b", attackerGW), resourcev3.ListenerType))

	before := connected()
	delta.close()
	waitClosed(t, before)

	expectRefused(t, "sotw stream asking for A's Secrets", sotw.ask(node("b", victimGW), resourcev3.SecretType))
}

// B's stream with the same ID as a provider proxy's must not change the
// proxy's identity: the proxy's next request is still served.
func TestIdentityAnotherStreamCannotCutOffAProxy(t *testing.T) {
	for _, proxyDelta := range []bool{false, true} {
		name := "proxy on sotw, attacker on delta"
		if proxyDelta {
			name = "proxy on delta, attacker on sotw"
		}
		t.Run(name, func(t *testing.T) {
			e := startIdentityServer(t)
			open := func(cc *grpc.ClientConn, delta bool) *rawStream {
				if delta {
					return openDelta(t, cc)
				}
				return openSotw(t, cc)
			}
			proxy := open(e.conn(t, &victimGW), proxyDelta)
			expectServed(t, "the proxy's listeners", proxy.ask(node("envoy-a", victimGW), resourcev3.ListenerType))
			attacker := open(e.conn(t, &attackerGW), !proxyDelta)
			expectServed(t, "B's own clusters", attacker.ask(node("b", attackerGW), resourcev3.ClusterType))

			a := proxy.ask(node("envoy-a", victimGW), resourcev3.SecretType)
			expectServed(t, "the proxy's next request (its Secrets)", a)
			if got := leaked(a); !strings.Contains(strings.Join(got, ","), "private key present: true") {
				t.Fatalf("the proxy did not get its own Secret: %v", got)
			}
		})
	}
}

// A client certificate from the xDS CA that names no Gateway binds no
// identity: every request on its streams is refused.
func TestIdentityUnboundStreamIsRefused(t *testing.T) {
	e := startIdentityServer(t)
	cc := e.conn(t, nil)
	expectRefused(t, "sotw request without a bound identity", openSotw(t, cc).ask(node("tool", victimGW), resourcev3.SecretType))
	expectRefused(t, "delta request without a bound identity", openDelta(t, cc).ask(node("tool", victimGW), resourcev3.SecretType))
}

// The NACK guard's records of a proxy are its own: another tenant's stream
// with the same ID closing must not drop them (which would clear the
// proxy's reported NACK and let a rejected version be resent).
func TestIdentityAnotherStreamCannotDropAProxysNACK(t *testing.T) {
	e := startIdentityServer(t)
	proxy := openSotw(t, e.conn(t, &victimGW))
	first := proxy.ask(node("envoy-a", victimGW), resourcev3.ListenerType)
	expectServed(t, "the proxy's listeners", first)
	if err := proxy.nack(first); err != nil {
		t.Fatal(err)
	}
	hasNACK := func() error {
		for _, n := range e.srv.NACKs() {
			if n.NodeID == "envoy-a" && n.NodeCluster == NodeGroup(victimGW) {
				return nil
			}
		}
		return fmt.Errorf("no NACK recorded for envoy-a: %+v", e.srv.NACKs())
	}
	eventually(t, hasNACK)

	attacker := openDelta(t, e.conn(t, &attackerGW))
	expectServed(t, "B's own clusters on delta", attacker.ask(node("b", attackerGW), resourcev3.ClusterType))
	before := connected()
	attacker.close()
	waitClosed(t, before)

	// Nothing is expected to happen: B's close must leave the proxy's
	// record alone. The record stays as long as the proxy's stream, so a
	// window of a second after B's close was handled is the assertion.
	deadline := time.Now().Add(time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if err := hasNACK(); err != nil {
			t.Fatalf("after another tenant's stream closed: %v", err)
		}
		<-tick.C
	}
	if errs := e.srv.PublishErrors(); !strings.Contains(errs[victimGW], "envoy-a rejected") {
		t.Fatalf("A's Gateway no longer reports its proxy's NACK: %v", errs)
	}
}
