package pki

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestIssueGatewayVerifiesAndNamesTheGateway(t *testing.T) {
	ca, err := NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	gw := types.NamespacedName{Namespace: "infra", Name: "shard-a"}
	certPEM, _, err := ca.IssueGateway(gw)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("client cert does not verify against its CA: %v", err)
	}
	if got, ok := GatewayFromCert(cert); !ok || got != gw {
		t.Fatalf("GatewayFromCert = %v, %v", got, ok)
	}
	other, _ := NewCA("other CA")
	if _, err := cert.Verify(x509.VerifyOptions{Roots: other.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Fatal("verified against a foreign CA")
	}
	again, err := ParseCA(ca.CertPEM(), ca.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	serverPEM, _, err := again.Issue("xds", []string{"shardgate-xds.shardgate-system.svc"}, nil, time.Hour, true)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = pem.Decode(serverPEM)
	server, _ := x509.ParseCertificate(b.Bytes)
	if _, err := server.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "shardgate-xds.shardgate-system.svc"}); err != nil {
		t.Fatalf("server cert from the reloaded CA does not verify: %v", err)
	}
	if _, ok := GatewayFromCert(server); ok {
		t.Fatal("a certificate without the URI SAN names a Gateway")
	}
}
