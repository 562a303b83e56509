// Package pki owns the xDS certificate authority: one CA, kept in a Secret so
// that every replica and every restart uses the same one, which issues the
// xDS server's certificate and one client certificate per Gateway.
//
// A Gateway's client certificate names the Gateway in a URI SAN
// (GatewayURI), so the xDS server can bind a connection's node to the
// Gateway its certificate was issued for.
//
// Whenever the CA is loaded from its Secret, its expiry is exported as
// shardgate_xds_ca_expiry_timestamp_seconds.
package pki

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Secret keys, as in kubernetes.io/tls Secrets plus the CA. KeyCA is
// Kubernetes' own key for a CA bundle (ca.crt: kube-root-ca.crt
// ConfigMaps, token Secrets, cert-manager's Secrets), the key every
// ConfigMap or Secret shardgate reads a CA bundle from uses.
const (
	KeyCert = corev1.TLSCertKey              // tls.crt
	KeyKey  = corev1.TLSPrivateKeyKey        // tls.key
	KeyCA   = corev1.ServiceAccountRootCAKey // ca.crt
)

// CA signs certificates.
type CA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

// NewCA makes a self-signed CA valid for ten years.
func NewCA(commonName string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"shardgate"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("marshal CA key: %w", err)
	}
	return ParseCA(pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", keyDER))
}

// ParseCA loads a CA from PEM.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, errors.New("parse CA: no PEM block")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse CA key: %w", err)
	}
	if !cert.IsCA {
		return nil, errors.New("parse CA: certificate is not a CA")
	}
	return &CA{cert: cert, key: key, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// CertPEM is the CA certificate, to trust.
func (ca *CA) CertPEM() []byte { return ca.certPEM }

// Pool is a cert pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Issue signs a leaf certificate. server selects server-auth usage (else
// client-auth). uris become URI SANs.
func (ca *CA) Issue(commonName string, dnsNames, uris []string, ttl time.Duration, server bool) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("issue %s: %w", commonName, err)
	}
	usage := x509.ExtKeyUsageClientAuth
	if server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: commonName, Organization: []string{"shardgate"}},
		DNSNames:     dnsNames,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(ttl),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	for _, u := range uris {
		parsed, err := url.Parse(u)
		if err != nil {
			return nil, nil, fmt.Errorf("issue %s: URI SAN %q: %w", commonName, u, err)
		}
		tmpl.URIs = append(tmpl.URIs, parsed)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("issue %s: %w", commonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("issue %s: %w", commonName, err)
	}
	return pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", keyDER), nil
}

// GatewayURI is the URI SAN that names a Gateway in its Envoy's client
// certificate.
func GatewayURI(gw types.NamespacedName) string {
	return "spiffe://shardgate.io/gateway/" + gw.Namespace + "/" + gw.Name
}

// GatewayFromCert returns the Gateway named by a client certificate's URI
// SAN, if any.
func GatewayFromCert(cert *x509.Certificate) (types.NamespacedName, bool) {
	for _, u := range cert.URIs {
		s := u.String()
		rest, ok := strings.CutPrefix(s, "spiffe://shardgate.io/gateway/")
		if !ok {
			continue
		}
		ns, name, ok := strings.Cut(rest, "/")
		if ok && ns != "" && name != "" && !strings.Contains(name, "/") {
			return types.NamespacedName{Namespace: ns, Name: name}, true
		}
	}
	return types.NamespacedName{}, false
}

// IssueGateway issues a Gateway's Envoy client certificate (one year).
func (ca *CA) IssueGateway(gw types.NamespacedName) (certPEM, keyPEM []byte, err error) {
	return ca.Issue("gateway:"+gw.String(), nil, []string{GatewayURI(gw)}, 365*24*time.Hour, false)
}

// LoadOrCreate returns the CA kept in Secret namespace/name, creating it
// (and the Secret) on first use. c must read from the apiserver, not a
// cache, so that two replicas starting together agree: the loser of the
// create race reads the winner's CA.
func LoadOrCreate(ctx context.Context, c client.Client, namespace, name string) (*CA, error) {
	for attempt := 0; attempt < 3; attempt++ {
		var s corev1.Secret
		err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &s)
		if err == nil {
			ca, err := ParseCA(s.Data[KeyCert], s.Data[KeyKey])
			if err != nil {
				return nil, err
			}
			observeCA(ca)
			return ca, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("get CA secret %s/%s: %w", namespace, name, err)
		}
		ca, err := NewCA("shardgate xDS CA")
		if err != nil {
			return nil, err
		}
		s = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "shardgate"}},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{KeyCert: ca.CertPEM(), KeyKey: ca.keyPEM},
		}
		err = c.Create(ctx, &s)
		if err == nil {
			observeCA(ca)
			return ca, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create CA secret %s/%s: %w", namespace, name, err)
		}
	}
	return nil, fmt.Errorf("CA secret %s/%s: create raced and could not be read", namespace, name)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	return n
}

func pemBlock(t string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: t, Bytes: der})
}
