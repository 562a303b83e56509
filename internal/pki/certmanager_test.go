package pki_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/infra"
	"github.com/shardgate/shardgate/internal/pki"
	"github.com/shardgate/shardgate/internal/testenv"
)

// selfSignedCA makes the CA certificate a cert-manager SelfSigned issuer
// writes for the chart's xDS CA Certificate (isCA, ECDSA, the usages
// digital signature, cert sign and crl sign, a subject key identifier), signed
// by key, valid from notBefore for ttl.
func selfSignedCA(t *testing.T, key *ecdsa.PrivateKey, serial int64, notBefore time.Time, ttl time.Duration) []byte {
	t.Helper()
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	ski := sha1.Sum(pub)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial),
		Subject:               pkix.Name{CommonName: "shardgate xDS CA", Organization: []string{"shardgate"}},
		NotBefore:             notBefore,
		NotAfter:              notBefore.Add(ttl),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		SubjectKeyId:          ski[:],
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// sec1 is key in cert-manager's privateKey.encoding PKCS1 for ECDSA keys.
func sec1(t *testing.T, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

// TestCertManagerCA: the xDS CA Secret as cert-manager writes it for the
// chart's Certificate (kubernetes.io/tls; tls.crt, tls.key SEC1, ca.crt) is
// the controller's CA: loaded as it is, never replaced. A renewal that keeps
// the key (rotationPolicy Never) keeps every party agreeing while the
// controller still signs with the CA it read at start, and a restart loads
// the renewed certificate and re-issues the Gateways' client certificates. A
// renewal with a new key, or a PKCS#8 key, would not: hence the chart's
// settings.
func TestCertManagerCA(t *testing.T) {
	ctx := context.Background()
	env := testenv.StartT(t, testenv.Options{})
	ns := testenv.SystemNamespace
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caPEM := selfSignedCA(t, key, 1, now.Add(-time.Hour), 24*time.Hour)
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm-xds-ca", Annotations: map[string]string{"cert-manager.io/certificate-name": "shardgate-xds-ca"}},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{pki.KeyCert: caPEM, pki.KeyKey: sec1(t, key), pki.KeyCA: caPEM},
	}
	if err := env.Client.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	rv := sec.ResourceVersion
	nn := types.NamespacedName{Namespace: ns, Name: sec.Name}

	// Start: the controller's CA is cert-manager's, and the Secret is untouched.
	ca, err := pki.LoadOrCreate(ctx, env.Client, ns, sec.Name)
	if err != nil {
		t.Fatalf("the cert-manager Secret is refused: %v", err)
	}
	if string(ca.CertPEM()) != string(caPEM) {
		t.Fatal("LoadOrCreate returned another CA than the Secret's")
	}
	if err := env.Client.Get(ctx, nn, sec); err != nil || sec.ResourceVersion != rv {
		t.Fatalf("the Secret was written (resourceVersion %s -> %s, %v)", rv, sec.ResourceVersion, err)
	}
	src := &pki.ServerSource{Reader: env.Client, Secret: nn, DNSNames: []string{"shardgate-xds.shardgate-system.svc"}}
	server1, pool1, err := src.Load(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	leaf1, _ := x509.ParseCertificate(server1.Certificate[0])
	if _, err := leaf1.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "shardgate-xds.shardgate-system.svc"}); err != nil {
		t.Fatalf("the server certificate does not verify against the CA: %v", err)
	}
	gw := types.NamespacedName{Namespace: "providers", Name: "shard-a"}
	clientPEM, clientKey, err := ca.IssueGateway(gw)
	if err != nil {
		t.Fatal(err)
	}
	clientSecret := &corev1.Secret{Data: map[string][]byte{pki.KeyCert: clientPEM, pki.KeyKey: clientKey, pki.KeyCA: ca.CertPEM()}}
	if !verifiesPEM(t, clientPEM, pool1) {
		t.Fatal("a Gateway's client certificate does not verify against the server's trust pool")
	}

	// cert-manager renews the CA, keeping the key: a new certificate (serial,
	// validity) in tls.crt and ca.crt.
	renewedPEM := selfSignedCA(t, key, 2, now, 48*time.Hour)
	sec.Data[pki.KeyCert], sec.Data[pki.KeyCA] = renewedPEM, renewedPEM
	if err := env.Client.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	server2, pool2, err := src.Load(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if server2 == server1 {
		t.Fatal("the server certificate was not re-issued from the renewed CA")
	}
	leaf2, _ := x509.ParseCertificate(server2.Certificate[0])
	// An Envoy still holding the previous ca.crt verifies the new server
	// certificate, and the server accepts client certificates the
	// controller issued before, and still issues, from the CA it read at start.
	if _, err := leaf2.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "shardgate-xds.shardgate-system.svc"}); err != nil {
		t.Fatalf("the renewed CA's server certificate does not verify against the previous CA certificate: %v", err)
	}
	if !verifiesPEM(t, clientPEM, pool2) {
		t.Fatal("a client certificate of the previous CA certificate is refused after the renewal")
	}
	laterPEM, _, err := ca.IssueGateway(gw)
	if err != nil {
		t.Fatal(err)
	}
	if !verifiesPEM(t, laterPEM, pool2) {
		t.Fatal("a client certificate the running controller issues after the renewal is refused")
	}

	// A restart loads the renewed CA, and every Gateway's client certificate
	// is due for re-issue (its ca.crt is the previous one).
	restarted, err := pki.LoadOrCreate(ctx, env.Client, ns, sec.Name)
	if err != nil {
		t.Fatal(err)
	}
	if string(restarted.CertPEM()) != string(renewedPEM) {
		t.Fatal("after a restart the controller does not use the renewed CA certificate")
	}
	if !infra.NeedsReissue(clientSecret, restarted.CertPEM(), time.Now()) {
		t.Fatal("a client certificate Secret holding the previous CA is not re-issued after the restart")
	}
	if infra.NeedsReissue(clientSecret, ca.CertPEM(), time.Now()) {
		t.Fatal("a current client certificate Secret is re-issued")
	}

	// What the chart avoids: a renewal with a new key (rotationPolicy
	// Always) makes the server refuse the client certificates already out.
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rekeyed := selfSignedCA(t, other, 3, now, 48*time.Hour)
	sec.Data[pki.KeyCert], sec.Data[pki.KeyKey], sec.Data[pki.KeyCA] = rekeyed, sec1(t, other), rekeyed
	if err := env.Client.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	_, pool3, err := src.Load(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if verifiesPEM(t, clientPEM, pool3) {
		t.Fatal("a client certificate of another key verifies: the rotationPolicy premise is wrong")
	}
	// ... and a PKCS#8 key (privateKey.encoding PKCS8) is not read at all.
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	sec.Data[pki.KeyCert], sec.Data[pki.KeyKey] = renewedPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := env.Client.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	if _, err := pki.LoadOrCreate(ctx, env.Client, ns, sec.Name); err == nil {
		t.Fatal("a PKCS#8 CA key was accepted: the chart's encoding PKCS1 may be relaxed")
	}
}

func verifiesPEM(t *testing.T, certPEM []byte, pool *x509.CertPool) bool {
	t.Helper()
	leaf, err := parseCertPEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return err == nil
}
