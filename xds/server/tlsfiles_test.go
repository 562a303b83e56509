package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shardgate/shardgate/internal/pki"
)

// tlsFiles writes the xDS server's certificate, key and client CA bundle
// either in place or as a Kubernetes Secret volume does: the files are
// symlinks through "..data" to a timestamped directory, and an update
// swaps "..data" atomically and removes the old directory.
type tlsFiles struct {
	t       *testing.T
	dir     string
	secret  bool
	version int
	current string // the timestamped directory ..data points to
	certPEM []byte
	keyPEM  []byte
}

func (f *tlsFiles) paths() (cert, key, ca string) {
	return filepath.Join(f.dir, "tls.crt"), filepath.Join(f.dir, "tls.key"), filepath.Join(f.dir, "ca.crt")
}

// write issues a server certificate from serverCA (nil: keeps the last
// one) and writes it with clientCAs as the trust bundle; it returns the
// certificate's serial.
func (f *tlsFiles) write(serverCA *pki.CA, clientCAs ...*pki.CA) *big.Int {
	t := f.t
	t.Helper()
	if serverCA != nil {
		var err error
		if f.certPEM, f.keyPEM, err = serverCA.Issue("xds", []string{"localhost"}, nil, time.Hour, true); err != nil {
			t.Fatal(err)
		}
	}
	certPEM, keyPEM := f.certPEM, f.keyPEM
	var bundle []byte
	for _, ca := range clientCAs {
		bundle = append(bundle, ca.CertPEM()...)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": bundle}
	if !f.secret {
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(f.dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return pair.Leaf.SerialNumber
	}
	f.version++
	next := fmt.Sprintf("..2026_11_29_00_00_%02d.%d", f.version, f.version)
	if err := os.Mkdir(filepath.Join(f.dir, next), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(f.dir, next, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(f.dir, "..data_tmp")
	if err := os.Symlink(next, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(f.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if f.current == "" {
		for name := range files {
			if err := os.Symlink(filepath.Join("..data", name), filepath.Join(f.dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	} else if err := os.RemoveAll(filepath.Join(f.dir, f.current)); err != nil {
		t.Fatal(err)
	}
	f.current = next
	return pair.Leaf.SerialNumber
}

// Rotated xds.tls files are served to the next TLS handshake within
// seconds: the certificate and key, and the client CA bundle, whether
// rewritten in place or swapped as a Secret volume update does. The
// re-read interval is set to an hour, so only the file watches can pass.
func TestFileCredentialsFollowRotatedFiles(t *testing.T) {
	for _, mode := range []string{"in place", "secret volume"} {
		t.Run(mode, func(t *testing.T) {
			files := &tlsFiles{t: t, dir: t.TempDir(), secret: mode == "secret volume"}
			serverCA, clientCA, nextCA := mustCA(t, "server CA"), mustCA(t, "client CA"), mustCA(t, "next client CA")
			first := files.write(serverCA, clientCA)
			certFile, keyFile, caFile := files.paths()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			creds, err := NewFileCredentials(ctx, FileTLS{CertFile: certFile, KeyFile: keyFile, CAFile: caFile, WatchInterval: time.Hour}, logr.Discard())
			if err != nil {
				t.Fatal(err)
			}
			addr := startCredentials(t, ctx, creds)

			got, old, err := dialSerial(addr, clientConfig(t, serverCA, clientCA))
			if err != nil {
				t.Fatal(err)
			}
			defer old.Close()
			if got.Cmp(first) != 0 {
				t.Fatalf("served serial %s, want the file's %s", got, first)
			}
			if _, _, err := dialSerial(addr, clientConfig(t, serverCA, nextCA)); err == nil {
				t.Fatal("a client certificate of a CA not in caFile was accepted")
			}

			// A new certificate and key, and a bundle that trusts the
			// next client CA as well.
			second := files.write(serverCA, clientCA, nextCA)
			last, err := waitServed(ctx, addr, clientConfig(t, serverCA, nextCA), second)
			if err != nil {
				t.Fatalf("the rotated files were not served to a new connection: %v (last: %v)", err, last)
			}
			if err := roundTrip(old); err != nil {
				t.Fatalf("the connection made before the rotation broke: %v", err)
			}

			// The bundle alone changes (the certificate and key are
			// written again, unchanged): the next CA is no longer trusted.
			files.write(nil, clientCA)
			err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				_, c, err := dialSerial(addr, clientConfig(t, serverCA, nextCA))
				if err == nil {
					c.Close()
				}
				return err != nil, nil
			})
			if err != nil {
				t.Fatalf("a client CA removed from caFile is still trusted: %v", err)
			}
			if got, c, err := dialSerial(addr, clientConfig(t, serverCA, clientCA)); err != nil || got.Cmp(second) != 0 {
				t.Fatalf("after the bundle changed: serial %v, err %v; want %s", got, err, second)
			} else {
				c.Close()
			}
		})
	}
}

// Files rotated after they were first read but before the watches are in
// place (Start not yet running: a loaded machine's scheduling) are still
// served, without waiting for the re-read interval (an hour here).
func TestFileCredentialsRotatedBeforeTheWatches(t *testing.T) {
	for _, mode := range []string{"in place", "secret volume"} {
		t.Run(mode, func(t *testing.T) {
			files := &tlsFiles{t: t, dir: t.TempDir(), secret: mode == "secret volume"}
			serverCA, clientCA, nextCA := mustCA(t, "server CA"), mustCA(t, "client CA"), mustCA(t, "next client CA")
			files.write(serverCA, clientCA)
			certFile, keyFile, caFile := files.paths()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			creds, err := NewFileCredentials(ctx, FileTLS{CertFile: certFile, KeyFile: keyFile, CAFile: caFile, WatchInterval: time.Hour}, logr.Discard())
			if err != nil {
				t.Fatal(err)
			}
			second := files.write(serverCA, clientCA, nextCA)
			addr := startCredentials(t, ctx, creds)
			last, err := waitServed(ctx, addr, clientConfig(t, serverCA, nextCA), second)
			if err != nil {
				t.Fatalf("files rotated before the watches were not served: %v (last: %v)", err, last)
			}
		})
	}
}

// A client CA bundle that does not read (written broken) is logged, and the
// bundle loaded before stays in force until a good one is written.
func TestFileCredentialsReportABrokenBundle(t *testing.T) {
	files := &tlsFiles{t: t, dir: t.TempDir()}
	serverCA, clientCA, nextCA := mustCA(t, "server CA"), mustCA(t, "client CA"), mustCA(t, "next client CA")
	served := files.write(serverCA, clientCA)
	certFile, keyFile, caFile := files.paths()
	var mu sync.Mutex
	var logged []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, args)
	}, funcr.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	creds, err := NewFileCredentials(ctx, FileTLS{CertFile: certFile, KeyFile: keyFile, CAFile: caFile, WatchInterval: 50 * time.Millisecond}, log)
	if err != nil {
		t.Fatal(err)
	}
	addr := startCredentials(t, ctx, creds)
	// The load the watch makes when it starts is done: the broken bundle
	// comes later, when nothing else would read it.
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return creds.Loads() >= 2, nil }); err != nil {
		t.Fatalf("the watch's first load: %v (loads: %d)", err, creds.Loads())
	}

	if err := os.WriteFile(caFile, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const msg = "the xds.tls client CA bundle cannot be read"
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return slices.ContainsFunc(logged, func(l string) bool { return strings.Contains(l, msg) }), nil
	})
	if err != nil {
		mu.Lock()
		t.Fatalf("a broken caFile was not logged: %v; logged: %q", err, logged)
	}
	if got, c, err := dialSerial(addr, clientConfig(t, serverCA, clientCA)); err != nil || got.Cmp(served) != 0 {
		t.Fatalf("with a broken caFile: serial %v, err %v; want the bundle loaded before in force and serial %s", got, err, served)
	} else {
		c.Close()
	}
	files.write(nil, nextCA)
	if last, err := waitServed(ctx, addr, clientConfig(t, serverCA, nextCA), served); err != nil {
		t.Fatalf("the bundle written good again was not loaded: %v (last: %v)", err, last)
	}
}

// startCredentials runs creds.Start until the test ends and serves an echo
// with its TLS; it returns the echo's address.
func startCredentials(t *testing.T, ctx context.Context, creds *Credentials) string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = creds.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-stopped })
	return echoTLS(t, creds)
}

// waitServed waits until a handshake with cfg is served the certificate of
// serial want; the error is the wait's, last the last attempt's.
func waitServed(ctx context.Context, addr string, cfg *tls.Config, want *big.Int) (last, err error) {
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got, c, err := dialSerial(addr, cfg)
		if err != nil {
			last = err
			return false, nil
		}
		c.Close()
		if got.Cmp(want) != 0 {
			last = fmt.Errorf("served serial %s, want the new file's %s", got, want)
			return false, nil
		}
		return true, nil
	})
	return last, err
}
