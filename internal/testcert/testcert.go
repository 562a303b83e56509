/*
Copyright The shardgate Authors.
*/

// Package testcert makes self-signed certificates for tests: an ECDSA P-256
// key and a server certificate for the DNS names asked, as PEM. It is test
// support; production code never imports it.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// SelfSigned returns a self-signed server certificate for names (the
// first is also its common name), valid from 1970 for a hundred years,
// and its key, both PEM encoded.
func SelfSigned(names ...string) (certPEM, keyPEM []byte, err error) {
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("no name for the certificate")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, fmt.Errorf("serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		NotBefore:    time.Unix(0, 0),
		NotAfter:     time.Unix(0, 0).Add(100 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("create certificate for %v: %w", names, err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), nil
}

// Pair is SelfSigned that fails tb on error.
func Pair(tb testing.TB, names ...string) (certPEM, keyPEM []byte) {
	tb.Helper()
	crt, key, err := SelfSigned(names...)
	if err != nil {
		tb.Fatal(err)
	}
	return crt, key
}

// Secret is a kubernetes.io/tls Secret (no name) holding Pair(tb, names...).
func Secret(tb testing.TB, names ...string) *corev1.Secret {
	tb.Helper()
	crt, key := Pair(tb, names...)
	return &corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}}
}
