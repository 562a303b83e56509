package pki_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/shardgate/shardgate/internal/pki"
	"github.com/shardgate/shardgate/internal/testenv"
)

// caExpiry reads shardgate_xds_ca_expiry_timestamp_seconds from the
// registry the metrics endpoint serves; ok is false when it is not exported.
func caExpiry(t *testing.T) (float64, bool) {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "shardgate_xds_ca_expiry_timestamp_seconds" {
			continue
		}
		if mf.GetType() != dto.MetricType_GAUGE || len(mf.GetMetric()) != 1 || len(mf.GetMetric()[0].GetLabel()) != 0 {
			t.Fatalf("want one label-free gauge, got %v", mf)
		}
		return mf.GetMetric()[0].GetGauge().GetValue(), true
	}
	return 0, false
}

// caPEM is a self-signed CA certificate and key expiring at notAfter.
func caPEM(t *testing.T, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "rotated CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// The CA's expiry is exported once a CA is loaded, and follows a CA
// replaced in its Secret at the next load.
func TestCAExpiryGauge(t *testing.T) {
	ctx := context.Background()
	env := testenv.StartT(t, testenv.Options{})
	ns := testenv.SystemNamespace
	ca, err := pki.LoadOrCreate(ctx, env.Client, ns, "expiry-ca")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := caExpiry(t); !ok || got != float64(ca.NotAfter().Unix()) {
		t.Fatalf("after the CA was created: %v (exported %v), want %v", got, ok, ca.NotAfter().Unix())
	}
	if d := time.Until(ca.NotAfter()); d < 9*365*24*time.Hour {
		t.Fatalf("a new CA expires in %v", d)
	}

	// Another CA, expiring in 10 days, replaces it in the Secret: the
	// server source's next load reports it.
	notAfter := time.Now().Add(10 * 24 * time.Hour).Truncate(time.Second)
	certPEM, keyPEM := caPEM(t, notAfter)
	key := types.NamespacedName{Namespace: ns, Name: "expiry-ca"}
	var sec corev1.Secret
	if err := env.Client.Get(ctx, key, &sec); err != nil {
		t.Fatal(err)
	}
	sec.Data[pki.KeyCert], sec.Data[pki.KeyKey] = certPEM, keyPEM
	if err := env.Client.Update(ctx, &sec); err != nil {
		t.Fatal(err)
	}
	src := &pki.ServerSource{Reader: env.Client, Secret: key, DNSNames: []string{"localhost"}}
	if _, _, err := src.Load(ctx, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := caExpiry(t); got != float64(notAfter.Unix()) {
		t.Fatalf("after the CA was replaced: %v, want %v", got, notAfter.Unix())
	}

	// LoadOrCreate of an existing Secret reports its CA too.
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "expiry-ca-2"}, Data: map[string][]byte{}}
	later := notAfter.Add(24 * time.Hour)
	other.Data[pki.KeyCert], other.Data[pki.KeyKey] = caPEM(t, later)
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := pki.LoadOrCreate(ctx, env.Client, ns, "expiry-ca-2"); err != nil {
		t.Fatal(err)
	}
	if got, _ := caExpiry(t); got != float64(later.Unix()) {
		t.Fatalf("after loading an existing CA: %v, want %v", got, later.Unix())
	}
}
