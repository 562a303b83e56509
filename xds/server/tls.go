package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// Credentials serve the xDS server's TLS from a holder that can change while
// the server runs: a new server certificate, or a new set of CAs trusted for
// client certificates, applies to the next handshake. Connections already
// established keep theirs, so rotating never drops a connected proxy.
//
// The holder is filled by Load, a function that returns the current server
// certificate and client CA pool (re-reading files or a Secret, or issuing
// a new certificate). Start calls it again when the certificate has used
// RenewFraction of its remaining life at load, and every ReloadInterval so
// that a re-issued CA bundle is picked up; Rotate calls it on demand.
type Credentials struct {
	// Load returns the server certificate (with its Leaf set or parseable)
	// and the pool of CAs that client certificates must chain to. renew
	// asks for a new certificate (on demand, or because the current one
	// is due); without it a loader that issues certificates may keep the
	// current one and only re-read its CAs.
	Load LoadFunc
	// RenewFraction: the certificate is renewed when this fraction of the
	// time between its load and its NotAfter has passed (default 2/3).
	RenewFraction float64
	// ReloadInterval bounds the time between loads, so that CA changes are
	// picked up (default 5 minutes).
	ReloadInterval time.Duration
	Log            logr.Logger

	cur   atomic.Pointer[loadedCreds]
	mu    sync.Mutex // serialises loads
	loads atomic.Int64

	// watch, when set, runs while Start does and calls changed when the
	// source changed (NewFileCredentials: the files were written), which
	// loads at once.
	watch func(ctx context.Context, changed func())
}

// LoadFunc loads the xDS server's credentials.
type LoadFunc func(ctx context.Context, renew bool) (*tls.Certificate, *x509.CertPool, error)

type loadedCreds struct {
	cert *tls.Certificate
	pool *x509.CertPool
	at   time.Time // of this load
	// loadedAt is when this certificate was first loaded: its renewal is
	// computed from it.
	loadedAt time.Time
	notAfter time.Time
}

// NewCredentials loads once and returns the holder.
func NewCredentials(ctx context.Context, load LoadFunc, log logr.Logger) (*Credentials, error) {
	c := &Credentials{Load: load, Log: log}
	if err := c.Rotate(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Rotate loads new credentials now, with a new certificate. On error the
// current ones stay.
func (c *Credentials) Rotate(ctx context.Context) error { return c.load(ctx, true) }

// Reload re-reads the credentials; the loader renews the certificate only
// if it is due.
func (c *Credentials) Reload(ctx context.Context) error { return c.load(ctx, c.renewDue()) }

func (c *Credentials) load(ctx context.Context, renew bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cert, pool, err := c.Load(ctx, renew)
	if err != nil {
		return fmt.Errorf("xds credentials: %w", err)
	}
	if cert == nil || pool == nil {
		return errors.New("xds credentials: no certificate or no client CA pool")
	}
	leaf := cert.Leaf
	if leaf == nil {
		if len(cert.Certificate) == 0 {
			return errors.New("xds credentials: empty certificate chain")
		}
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return fmt.Errorf("xds credentials: %w", err)
		}
		cert.Leaf = leaf
	}
	now := time.Now()
	next := &loadedCreds{cert: cert, pool: pool, at: now, loadedAt: now, notAfter: leaf.NotAfter}
	prev := c.cur.Load()
	same := prev != nil && prev.cert.Leaf.SerialNumber.Cmp(leaf.SerialNumber) == 0
	if same {
		// The same certificate: its renewal stays where it was, or
		// reloads would push it ever later.
		next.loadedAt = prev.loadedAt
	}
	c.cur.Store(next)
	c.loads.Add(1)
	if prev != nil && !same {
		c.Log.Info("xDS server certificate rotated", "serial", leaf.SerialNumber.String(), "notAfter", leaf.NotAfter)
	}
	return nil
}

// Certificate is the server certificate new handshakes get.
func (c *Credentials) Certificate() *tls.Certificate { return c.cur.Load().cert }

// Loads is how many times credentials were loaded.
func (c *Credentials) Loads() int64 { return c.loads.Load() }

// TLSConfig is the server's tls.Config: client certificates are required
// and verified against the current pool; every handshake reads the holder.
func (c *Credentials) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ClientAuth: tls.RequireAndVerifyClientCert,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cur := c.cur.Load()
			return &tls.Config{
				MinVersion:   tls.VersionTLS12,
				ClientAuth:   tls.RequireAndVerifyClientCert,
				Certificates: []tls.Certificate{*cur.cert},
				ClientCAs:    cur.pool,
				NextProtos:   []string{"h2"},
			}, nil
		},
	}
}

// renewAt is when the current certificate is due for renewal.
func (c *Credentials) renewAt() time.Time {
	frac := c.RenewFraction
	if frac <= 0 || frac >= 1 {
		frac = 2.0 / 3
	}
	cur := c.cur.Load()
	return cur.loadedAt.Add(time.Duration(float64(cur.notAfter.Sub(cur.loadedAt)) * frac))
}

func (c *Credentials) renewDue() bool { return !time.Now().Before(c.renewAt()) }

// next is when the holder must load again: at renewal, or after
// ReloadInterval, whichever is first.
func (c *Credentials) next() time.Time {
	every := c.ReloadInterval
	if every <= 0 {
		every = 5 * time.Minute
	}
	renew := c.renewAt()
	if reload := c.cur.Load().at.Add(every); reload.Before(renew) {
		return reload
	}
	return renew
}

// Start renews and reloads until ctx ends, and at once when the source
// says it changed (NewFileCredentials). A failed load is retried with
// backoff while the current credentials stay in force.
func (c *Credentials) Start(ctx context.Context) error {
	var changed chan struct{}
	if c.watch != nil {
		changed = make(chan struct{}, 1)
		done := make(chan struct{})
		defer func() { <-done }()
		go func() {
			defer close(done)
			c.watch(ctx, func() {
				select {
				case changed <- struct{}{}:
				default: // a load is pending already
				}
			})
		}()
	}
	backoff := time.Second
	retrying := false
	for {
		// After a failed load, load again after the backoff, or at once
		// if the source changes meanwhile (a file read half-written,
		// then finished); next() counts from the last good load.
		wait := backoff
		if !retrying {
			wait = max(time.Until(c.next()), 0)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		case <-changed:
			t.Stop()
		}
		if err := c.Reload(ctx); err != nil {
			if retrying {
				backoff = min(2*backoff, time.Minute)
			}
			retrying = true
			c.Log.Error(err, "reloading xDS credentials failed; keeping the current ones", "retryIn", backoff)
			continue
		}
		retrying, backoff = false, time.Second
	}
}

// NeedLeaderElection: every replica serves xDS with its own certificate.
func (c *Credentials) NeedLeaderElection() bool { return false }

// FileSource loads the server certificate and the client CA bundle from PEM
// files, re-reading them at each load (a Kubernetes Secret volume updates
// them in place). It does not watch them: NewFileCredentials does.
func FileSource(certFile, keyFile, caFile string) LoadFunc {
	return func(context.Context, bool) (*tls.Certificate, *x509.CertPool, error) {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("xds.tls: %w", err)
		}
		pool, _, err := readCAPool(caFile)
		if err != nil {
			return nil, nil, err
		}
		return &cert, pool, nil
	}
}
