package infra

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardgate/shardgate/internal/pki"
)

// ReissueBefore is how long before expiry a client certificate is renewed.
const ReissueBefore = 30 * 24 * time.Hour

// NeedsReissue says whether a Gateway's client certificate Secret must be
// issued again: it is missing, lacks a key, holds a certificate and key that
// do not parse or do not match, was issued by another CA than caPEM (the CA
// changed), or expires within ReissueBefore of now.
func NeedsReissue(existing *corev1.Secret, caPEM []byte, now time.Time) bool {
	if existing == nil {
		return true
	}
	certPEM, keyPEM, ca := existing.Data[pki.KeyCert], existing.Data[pki.KeyKey], existing.Data[pki.KeyCA]
	if len(certPEM) == 0 || len(keyPEM) == 0 || len(ca) == 0 {
		return true
	}
	if !bytes.Equal(bytes.TrimSpace(ca), bytes.TrimSpace(caPEM)) {
		return true
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return true
	}
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return true
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return true
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return true
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return true
	}
	return !now.Add(ReissueBefore).Before(cert.NotAfter)
}

// ReissueAt is when the certificate in s becomes due for reissue
// (NotAfter - ReissueBefore); ok is false when it cannot be read.
func ReissueAt(s *corev1.Secret) (at time.Time, ok bool) {
	if s == nil {
		return time.Time{}, false
	}
	block, _ := pem.Decode(s.Data[pki.KeyCert])
	if block == nil {
		return time.Time{}, false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return time.Time{}, false
	}
	return cert.NotAfter.Add(-ReissueBefore), true
}
