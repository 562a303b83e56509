package pki

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServerCertTTL is the lifetime of an xDS server certificate issued from the
// CA Secret; it is renewed at two thirds of it (xds/server.Credentials).
const ServerCertTTL = 90 * 24 * time.Hour

// KeyTrustBundle is an optional key of the CA Secret: PEM certificates of
// further CAs whose client certificates the xDS server accepts, for a CA
// rollover (Envoys holding certificates from the next or the previous CA
// keep connecting while their certificates are re-issued).
const KeyTrustBundle = "trust-bundle.crt"

// ServerSource issues the xDS server certificate from the CA kept in a
// Secret. Each call re-reads the Secret, so a changed trust bundle, or a
// replaced CA, applies to the next TLS handshake; it issues a new
// certificate when asked to renew, when the CA changed, or on first use,
// and otherwise keeps the one it issued.
type ServerSource struct {
	// Reader reads the Secret; it should be an uncached client.
	Reader   client.Reader
	Secret   types.NamespacedName
	DNSNames []string
	TTL      time.Duration // default ServerCertTTL

	mu    sync.Mutex
	caPEM []byte // of the CA that issued cert
	cert  *tls.Certificate
}

// Load implements xds/server.LoadFunc.
func (s *ServerSource) Load(ctx context.Context, renew bool) (*tls.Certificate, *x509.CertPool, error) {
	var sec corev1.Secret
	if err := s.Reader.Get(ctx, s.Secret, &sec); err != nil {
		return nil, nil, fmt.Errorf("read CA secret %s: %w", s.Secret, err)
	}
	ca, err := ParseCA(sec.Data[KeyCert], sec.Data[KeyKey])
	if err != nil {
		return nil, nil, fmt.Errorf("CA secret %s: %w", s.Secret, err)
	}
	observeCA(ca)
	pool, err := TrustPool(&sec)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if renew || s.cert == nil || !bytes.Equal(s.caPEM, ca.CertPEM()) {
		ttl := s.TTL
		if ttl <= 0 {
			ttl = ServerCertTTL
		}
		certPEM, keyPEM, err := ca.Issue("shardgate-xds", s.DNSNames, nil, ttl, true)
		if err != nil {
			return nil, nil, err
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, nil, fmt.Errorf("xds server certificate: %w", err)
		}
		s.cert, s.caPEM = &cert, ca.CertPEM()
	}
	return s.cert, pool, nil
}

// TrustPool is the pool of CAs a CA Secret trusts for client certificates:
// its CA and every certificate in KeyTrustBundle.
func TrustPool(sec *corev1.Secret) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(sec.Data[KeyCert]) {
		return nil, fmt.Errorf("CA secret %s/%s: no CA certificate", sec.Namespace, sec.Name)
	}
	if b := sec.Data[KeyTrustBundle]; len(b) > 0 && !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("CA secret %s/%s: %s holds no certificate", sec.Namespace, sec.Name, KeyTrustBundle)
	}
	return pool, nil
}
