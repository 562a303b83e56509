package pki_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/pki"
	"github.com/shardgate/shardgate/internal/testenv"
)

// The server certificate is kept until renewal is asked for or the CA
// changes; the trust bundle is re-read at every load. The CA Secret lives
// in the harness's kube-apiserver.
func TestServerSource(t *testing.T) {
	ctx := context.Background()
	env := testenv.StartT(t, testenv.Options{})
	ns := testenv.SystemNamespace
	ca, err := pki.LoadOrCreate(ctx, env.Client, ns, "ca")
	if err != nil {
		t.Fatal(err)
	}
	next, err := pki.LoadOrCreate(ctx, env.Client, ns, "next-ca")
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: "ca"}
	src := &pki.ServerSource{Reader: env.Client, Secret: key, DNSNames: []string{"localhost"}}

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

	// updateCA changes the CA Secret in the apiserver.
	var nextSec corev1.Secret
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "next-ca"}, &nextSec); err != nil {
		t.Fatal(err)
	}
	updateCA := func(edit func(data map[string][]byte)) {
		t.Helper()
		var sec corev1.Secret
		if err := env.Client.Get(ctx, key, &sec); err != nil {
			t.Fatal(err)
		}
		edit(sec.Data)
		if err := env.Client.Update(ctx, &sec); err != nil {
			t.Fatal(err)
		}
	}

	updateCA(func(d map[string][]byte) { d[pki.KeyTrustBundle] = next.CertPEM() })
	_, pool, err = src.Load(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if !verifies(t, next, pool) || !verifies(t, ca, pool) {
		t.Fatal("the trust bundle's CA and the CA must both be trusted")
	}

	// A replaced CA: the next load issues from it.
	updateCA(func(d map[string][]byte) {
		d[pki.KeyCert], d[pki.KeyKey] = nextSec.Data[pki.KeyCert], nextSec.Data[pki.KeyKey]
	})
	cert4, _, err := src.Load(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	leaf4, _ := x509.ParseCertificate(cert4.Certificate[0])
	if _, err := leaf4.Verify(x509.VerifyOptions{Roots: next.Pool(), DNSName: "localhost"}); err != nil {
		t.Fatalf("after a CA change the certificate is not from the new CA: %v", err)
	}
}

func verifies(t *testing.T, ca *pki.CA, pool *x509.CertPool) bool {
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
