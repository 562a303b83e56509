package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"math/big"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shardgate/shardgate/internal/pki"
)

// testIssuer issues server certificates from a CA that the test can swap,
// and trusts the CAs the test says.
type testIssuer struct {
	mu      sync.Mutex
	ca      *pki.CA
	trusted []*pki.CA
	ttl     time.Duration
	fail    bool
	cert    *tls.Certificate
}

func (i *testIssuer) load(_ context.Context, renew bool) (*tls.Certificate, *x509.CertPool, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.fail {
		return nil, nil, errors.New("CA unavailable")
	}
	if renew || i.cert == nil {
		certPEM, keyPEM, err := i.ca.Issue("xds", []string{"localhost"}, nil, i.ttl, true)
		if err != nil {
			return nil, nil, err
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, nil, err
		}
		i.cert = &cert
	}
	pool := x509.NewCertPool()
	for _, ca := range i.trusted {
		pool.AppendCertsFromPEM(ca.CertPEM())
	}
	return i.cert, pool, nil
}

// echoTLS serves creds on 127.0.0.1 and echoes lines.
func echoTLS(t *testing.T, creds *Credentials) string {
	t.Helper()
	lis, err := tls.Listen("tcp", "127.0.0.1:0", creds.TLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return lis.Addr().String()
}

func clientConfig(t *testing.T, serverCA, clientCA *pki.CA) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: serverCA.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12}
	if clientCA != nil {
		certPEM, keyPEM, err := clientCA.IssueGateway(k8stypes.NamespacedName{Namespace: "ns", Name: "gw"})
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

// dialSerial completes a handshake and a round trip, and returns the
// server certificate's serial and the open connection.
func dialSerial(addr string, cfg *tls.Config) (*big.Int, *tls.Conn, error) {
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return nil, nil, err
	}
	// TLS 1.3 reports a refused client certificate only on the first read.
	if err := roundTrip(c); err != nil {
		c.Close()
		return nil, nil, err
	}
	return c.ConnectionState().PeerCertificates[0].SerialNumber, c, nil
}

func roundTrip(c *tls.Conn) error {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "ping\n" {
		return errors.New("bad echo " + line)
	}
	return nil
}

func mustCA(t *testing.T, name string) *pki.CA {
	t.Helper()
	ca, err := pki.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// Rotating the server certificate: new handshakes get the new one, a
// connection made before keeps working.
func TestCredentialsRotateKeepsOpenConnections(t *testing.T) {
	ca := mustCA(t, "xds CA")
	iss := &testIssuer{ca: ca, trusted: []*pki.CA{ca}, ttl: time.Hour}
	creds, err := NewCredentials(context.Background(), iss.load, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	addr := echoTLS(t, creds)
	cfg := clientConfig(t, ca, ca)
	before, old, err := dialSerial(addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if before.Cmp(creds.Certificate().Leaf.SerialNumber) != 0 {
		t.Fatal("served serial is not the holder's")
	}
	if err := creds.Rotate(context.Background()); err != nil {
		t.Fatal(err)
	}
	after, c, err := dialSerial(addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if after.Cmp(before) == 0 || after.Cmp(creds.Certificate().Leaf.SerialNumber) != 0 {
		t.Fatalf("after Rotate a new handshake got serial %s, before %s, holder %s", after, before, creds.Certificate().Leaf.SerialNumber)
	}
	if err := roundTrip(old); err != nil {
		t.Fatalf("the connection made before the rotation broke: %v", err)
	}
	t.Logf("serial %s → %s; the earlier connection still echoes", before, after)

	// A failed load keeps the current credentials.
	iss.mu.Lock()
	iss.fail = true
	iss.mu.Unlock()
	if err := creds.Rotate(context.Background()); err == nil {
		t.Fatal("Rotate did not report the failed load")
	}
	if got, c, err := dialSerial(addr, cfg); err != nil || got.Cmp(after) != 0 {
		t.Fatalf("after a failed load: serial %v, err %v; want %s still", got, err, after)
	} else {
		c.Close()
	}
}

// Start renews the certificate at two thirds of its life, and a reload
// picks up a changed set of trusted client CAs.
func TestCredentialsRenewAndReloadCAs(t *testing.T) {
	ca := mustCA(t, "xds CA")
	next := mustCA(t, "next CA")
	iss := &testIssuer{ca: ca, trusted: []*pki.CA{ca}, ttl: 2 * time.Second}
	creds, err := NewCredentials(context.Background(), iss.load, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	creds.ReloadInterval = 300 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	var stopped atomic.Bool
	go func() { _ = creds.Start(ctx); stopped.Store(true) }()
	defer cancel()
	addr := echoTLS(t, creds)

	first := creds.Certificate().Leaf.SerialNumber
	loaded := time.Now()
	// X.509 times have whole seconds: the due time follows the NotAfter
	// the certificate really has.
	due := time.Duration(float64(creds.Certificate().Leaf.NotAfter.Sub(loaded)) * 2 / 3)
	if _, _, err := dialSerial(addr, clientConfig(t, ca, next)); err == nil {
		t.Fatal("a client certificate from an untrusted CA was accepted")
	}
	// The next CA is added to the trust bundle: within a reload interval
	// its client certificates are accepted, without a new server cert.
	iss.mu.Lock()
	iss.trusted = append(iss.trusted, next)
	iss.mu.Unlock()
	// Bounded generously: a loaded machine runs the reload late, and
	// the pacing of reloads is checked below by counting them.
	var lastErr error
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, creds.ReloadInterval*3+30*time.Second, true, func(context.Context) (bool, error) {
		_, c, err := dialSerial(addr, clientConfig(t, ca, next))
		if err != nil {
			lastErr = err
			return false, nil
		}
		c.Close()
		return true, nil
	}); err != nil {
		t.Fatalf("the reloaded trust bundle was not honoured: %v (last dial: %v)", err, lastErr)
	}
	if creds.Certificate().Leaf.SerialNumber.Cmp(first) != 0 && time.Since(loaded) < due-50*time.Millisecond {
		t.Fatal("a CA reload renewed the certificate before it was due")
	}
	// Not before it is due (checked strictly below), and not never: the
	// upper bound leaves a loaded machine room to run the renewal late.
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, due+30*time.Second, true, func(context.Context) (bool, error) {
		return creds.Certificate().Leaf.SerialNumber.Cmp(first) != 0, nil
	}); err != nil {
		t.Fatalf("the certificate was not renewed (due at two thirds of its life, %s): %v", due, err)
	}
	renewedAfter := time.Since(loaded)
	if renewedAfter < due-50*time.Millisecond {
		t.Fatalf("renewed after %s, before two thirds of its life (%s)", renewedAfter, due)
	}
	t.Logf("renewed %s after load; due at %s (2/3 of the time to NotAfter)", renewedAfter.Round(10*time.Millisecond), due.Round(10*time.Millisecond))
	got, c, err := dialSerial(addr, clientConfig(t, ca, ca))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if got.Cmp(first) == 0 {
		t.Fatal("new handshakes still get the old certificate")
	}
	// Reloads are paced by ReloadInterval, not a busy loop.
	if n, max := creds.Loads(), int64(time.Since(loaded)/creds.ReloadInterval)+3; n > max {
		t.Fatalf("%d loads in %s; want at most %d", n, time.Since(loaded), max)
	}
	cancel()
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return stopped.Load(), nil }); err != nil {
		t.Fatal("Start did not return when its context ended")
	}
}

// A load that fails (a file read while half-written) is tried again after
// its backoff, and at once when the source changes during the backoff;
// neither waits for the reload interval, and the change that came during
// the backoff is not lost.
func TestCredentialsRetryAFailedLoad(t *testing.T) {
	for _, mode := range []string{"after the backoff", "on a change during the backoff"} {
		t.Run(mode, func(t *testing.T) {
			ca := mustCA(t, "xds CA")
			iss := &testIssuer{ca: ca, trusted: []*pki.CA{ca}, ttl: time.Hour}
			var fails, goodLoads atomic.Int64
			var failing atomic.Bool
			load := func(ctx context.Context, renew bool) (*tls.Certificate, *x509.CertPool, error) {
				if failing.Load() {
					fails.Add(1)
					return nil, nil, errors.New("caFile: no certificate (read while half-written)")
				}
				goodLoads.Add(1)
				return iss.load(ctx, renew)
			}
			creds, err := NewCredentials(context.Background(), load, logr.Discard())
			if err != nil {
				t.Fatal(err)
			}
			creds.ReloadInterval = time.Hour // only a retry can load again
			signals := make(chan func(), 1)
			creds.watch = func(ctx context.Context, changed func()) {
				signals <- changed
				<-ctx.Done()
			}
			ctx, cancel := context.WithCancel(context.Background())
			stopped := make(chan struct{})
			go func() { defer close(stopped); _ = creds.Start(ctx) }()
			defer func() { cancel(); <-stopped }()
			changed := <-signals

			failing.Store(true)
			changed()
			poll := func(what string, cond func() bool) {
				t.Helper()
				if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true,
					func(context.Context) (bool, error) { return cond(), nil }); err != nil {
					t.Fatalf("%s: %v (failed loads %d, good loads %d)", what, err, fails.Load(), goodLoads.Load())
				}
			}
			poll("the change was not loaded", func() bool { return fails.Load() >= 1 })
			good := goodLoads.Load()
			failing.Store(false)
			if mode == "on a change during the backoff" {
				changed()
			}
			poll("the failed load was not tried again", func() bool { return goodLoads.Load() > good })
		})
	}
}
