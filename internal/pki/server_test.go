package pki

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// The server certificate is kept until renewal is asked for or the CA
// changes; the trust bundle is re-read at every load.
func TestServerSource(t *testing.T) {
	ctx := context.Background()
	ca, err := NewCA("xds CA")
	if err != nil {
		t.Fatal(err)
	}
	next, err := NewCA("next CA")
	if err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "sys", Name: "ca"},
		Data: map[string][]byte{KeyCert: ca.CertPEM(), KeyKey: ca.keyPEM}}
	c := fake.NewClientBuilder().WithObjects(sec).Build()
	src := &ServerSource{Reader: c, Secret: types.NamespacedName{Namespace: "sys", Name: "ca"}, DNSNames: []string{"localhost"}}

	cert1, pool, err := src.Load(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	leaf1, _ := x509.ParseCertificate(cert1.Certificate[0])
	if _, err := leaf1.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "localhost"}); err != nil {
		t.Fatalf("server certificate does not verify: %v", err)
	}
	if verifies(t, next, pool) {
		t.Fatal("a client of an untrusted CA verifies")
	}
	cert2, _, _ := src.Load(ctx, false)
	if cert2 != cert1 {
		t.Fatal("a load without renew issued a new certificate")
	}
	cert3, _, _ := src.Load(ctx, true)
	if cert3 == cert1 {
		t.Fatal("renew did not issue a new certificate")
	}

	sec.Data[KeyTrustBundle] = next.CertPEM()
	if err := c.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	_, pool, err = src.Load(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if !verifies(t, next, pool) || !verifies(t, ca, pool) {
		t.Fatal("the trust bundle's CA and the CA must both be trusted")
	}

	// A replaced CA: the next load issues from it.
	sec.Data[KeyCert], sec.Data[KeyKey] = next.CertPEM(), next.keyPEM
	if err := c.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	cert4, _, err := src.Load(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	leaf4, _ := x509.ParseCertificate(cert4.Certificate[0])
	if _, err := leaf4.Verify(x509.VerifyOptions{Roots: next.Pool(), DNSName: "localhost"}); err != nil {
		t.Fatalf("after a CA change the certificate is not from the new CA: %v", err)
	}
}

func verifies(t *testing.T, ca *CA, pool *x509.CertPool) bool {
	t.Helper()
	certPEM, _, err := ca.IssueGateway(types.NamespacedName{Namespace: "ns", Name: "gw"})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := parseCertPEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return err == nil
}

func parseCertPEM(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	return x509.ParseCertificate(block.Bytes)
}
