package testenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// CertManagerNamespace is cert-manager's cluster resource namespace:
	// where a ClusterIssuer's ACME account key and other cluster-scoped
	// issuers' Secrets live.
	CertManagerNamespace = "cert-manager"
	// CertManagerSolverImage is the image cert-manager puts in its HTTP-01
	// solver Pods. No Pod ever runs in the harness, so it names nothing.
	CertManagerSolverImage = "shardgate.invalid/acme-http01-solver:never-pulled"
)

// CertManagerControllers are the controllers the harness runs in
// cert-manager's controller: issuers, the certificates-* pipeline, the
// CertificateRequest approver and ACME issuer, orders and challenges.
// --enable-gateway-api adds the gateway-shim, which the HTTP-01 solver's
// HTTPRoute support comes with.
var CertManagerControllers = []string{
	"issuers",
	"clusterissuers",
	"certificates-trigger",
	"certificates-issuing",
	"certificates-key-manager",
	"certificates-request-manager",
	"certificates-readiness",
	"certificates-revision-manager",
	"certificaterequests-approver",
	"certificaterequests-issuer-acme",
	"orders",
	"challenges",
}

// CertManagerOptions start Pebble, Let's Encrypt's ACME test server, and
// cert-manager's controller against the harness apiserver, with
// cert-manager's CRDs installed.
type CertManagerOptions struct {
	// PebbleAlwaysValid sets PEBBLE_VA_ALWAYS_VALID=1: Pebble marks every
	// challenge valid without sending a single validation request. Only
	// for a test in which nothing can serve the challenge to Pebble (no
	// data plane runs); such a test must say so.
	PebbleAlwaysValid bool
	// PebbleDomainBlocklist are names (and, each, every name under it)
	// Pebble refuses to issue for: an order for one fails with
	// rejectedIdentifier, a real issuance failure for a test to provoke.
	PebbleDomainBlocklist []string
}

// Pebble is the running ACME test server.
type Pebble struct {
	// DirectoryURL is the ACME directory: a ClusterIssuer's spec.acme.server.
	DirectoryURL string
	// ManagementURL is Pebble's management interface (its roots and
	// intermediates).
	ManagementURL string
	// CABundle is the PEM of the harness's test CA, which signed the
	// certificate Pebble serves on both URLs: a ClusterIssuer's
	// spec.acme.caBundle. It is not the CA Pebble issues from (Roots).
	CABundle []byte
	// HTTPPort and TLSPort are where Pebble's validation authority sends
	// HTTP-01 and TLS-ALPN-01 validation requests (nothing listens there
	// unless a test does).
	HTTPPort, TLSPort int

	client *http.Client
}

// Roots returns the PEM of the root Pebble issues from: it is generated at
// each start, so a test reads it here.
func (p *Pebble) Roots(ctx context.Context) ([]byte, error) {
	return p.get(ctx, p.ManagementURL+"/roots/0")
}

func (p *Pebble) get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("pebble: %w", err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("pebble: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("pebble: GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("pebble: GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// pebbleConfig is Pebble's JSON configuration (cmd/pebble's config type).
type pebbleConfig struct {
	Pebble pebbleSettings `json:"pebble"`
}

type pebbleSettings struct {
	ListenAddress           string   `json:"listenAddress"`
	ManagementListenAddress string   `json:"managementListenAddress"`
	Certificate             string   `json:"certificate"`
	PrivateKey              string   `json:"privateKey"`
	HTTPPort                int      `json:"httpPort"`
	TLSPort                 int      `json:"tlsPort"`
	KeyAlgorithm            string   `json:"keyAlgorithm"`
	DomainBlocklist         []string `json:"domainBlocklist,omitempty"`
	RetryAfter              struct {
		Authz int `json:"authz"`
		Order int `json:"order"`
	} `json:"retryAfter"`
}

// startCertManager starts Pebble, waits until it serves its directory, then
// starts cert-manager's controller and waits until it answers /livez.
func (e *Env) startCertManager(ctx context.Context, opts CertManagerOptions) error {
	p, err := e.startPebble(ctx, opts)
	if err != nil {
		return err
	}
	e.Pebble = p
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: CertManagerNamespace}}
	if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("testenv: %s namespace: %w", CertManagerNamespace, err)
	}
	var ports [2]int
	for i := range ports {
		if ports[i], err = FreePort(); err != nil {
			return err
		}
	}
	healthz := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
	if _, err := e.StartProcess("cert-manager-controller", filepath.Join(e.Root, "bin", "k8s", "cert-manager-controller"), []string{
		"--kubeconfig=" + e.Kubeconfig,
		"--leader-elect=false",
		"--controllers=" + strings.Join(CertManagerControllers, ","),
		"--cluster-resource-namespace=" + CertManagerNamespace,
		"--acme-http01-solver-image=" + CertManagerSolverImage,
		// The HTTP-01 solver may create HTTPRoutes (gatewayHTTPRoute).
		"--enable-gateway-api",
		"--metrics-listen-address=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
		"--internal-healthz-listen-address=" + healthz,
		"--v=2",
	}, nil); err != nil {
		return err
	}
	livez := "http://" + healthz + "/livez"
	return e.waitFor(ctx, 3*time.Minute, "cert-manager's controller to answer "+livez, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, livez, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

func (e *Env) startPebble(ctx context.Context, opts CertManagerOptions) (*Pebble, error) {
	dir := filepath.Join(e.Dir, "pebble")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("testenv: pebble: %w", err)
	}
	caPEM, certPEM, keyPEM, err := loopbackServingCert("shardgate testenv Pebble CA", "pebble")
	if err != nil {
		return nil, fmt.Errorf("testenv: pebble certificate: %w", err)
	}
	var ports [4]int // directory, management, VA HTTP-01, VA TLS-ALPN-01
	for i := range ports {
		if ports[i], err = FreePort(); err != nil {
			return nil, err
		}
	}
	var cfg pebbleConfig
	s := &cfg.Pebble
	s.ListenAddress = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	s.ManagementListenAddress = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
	s.Certificate = filepath.Join(dir, "cert.pem")
	s.PrivateKey = filepath.Join(dir, "key.pem")
	s.HTTPPort, s.TLSPort = ports[2], ports[3]
	s.KeyAlgorithm = "ecdsa"
	// Retry-After hints to ACME clients polling authorizations and orders.
	s.RetryAfter.Authz, s.RetryAfter.Order = 1, 1
	s.DomainBlocklist = opts.PebbleDomainBlocklist
	cfgJSON, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("testenv: pebble config: %w", err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	for path, data := range map[string][]byte{s.Certificate: certPEM, s.PrivateKey: keyPEM, cfgPath: cfgJSON} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("testenv: pebble: %w", err)
		}
	}
	alwaysValid := "0"
	if opts.PebbleAlwaysValid {
		alwaysValid = "1"
	}
	env := []string{
		"PEBBLE_VA_ALWAYS_VALID=" + alwaysValid,
		// No random 0-15 s sleep before each validation.
		"PEBBLE_VA_NOSLEEP=1",
		// Pebble rejects 5% of good nonces by default to exercise client
		// retries; the harness wants deterministic runs.
		"PEBBLE_WFE_NONCEREJECT=0",
	}
	if _, err := e.StartProcess("pebble", filepath.Join(e.Root, "bin", "k8s", "pebble"), []string{"-config", cfgPath}, env); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	p := &Pebble{
		DirectoryURL:  "https://" + s.ListenAddress + "/dir",
		ManagementURL: "https://" + s.ManagementListenAddress,
		CABundle:      caPEM,
		HTTPPort:      s.HTTPPort,
		TLSPort:       s.TLSPort,
		client: &http.Client{
			Timeout:   30 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
		},
	}
	err = e.waitFor(ctx, 2*time.Minute, "Pebble to serve "+p.DirectoryURL+" and its root", func(ctx context.Context) (bool, error) {
		if _, err := p.get(ctx, p.DirectoryURL); err != nil {
			return false, err
		}
		_, err := p.Roots(ctx)
		return err == nil, err
	})
	return p, err
}

// loopbackServingCert makes a CA and a server certificate it signs for
// 127.0.0.1 and localhost, valid for a day.
func loopbackServingCert(caName, name string) (caPEM, certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: caName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return caPEM, certPEM, keyPEM, nil
}

// ClusterIssuer returns a cert-manager ClusterIssuer named name that
// issues from this Pebble over ACME (its account key in the Secret
// pebble-account), with an HTTP-01 solver writing HTTPRoutes on the
// listener "http" of Gateway ns/gateway, and no self check: nothing in
// the harness serves the challenge.
func (p *Pebble) ClusterIssuer(name, ns, gateway string) *unstructured.Unstructured {
	issuer := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"acme": map[string]any{
			"server":              p.DirectoryURL,
			"caBundle":            base64.StdEncoding.EncodeToString(p.CABundle),
			"privateKeySecretRef": map[string]any{"name": "pebble-account"},
			"solvers": []any{map[string]any{
				"http01": map[string]any{"gatewayHTTPRoute": map[string]any{"parentRefs": []any{map[string]any{
					"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": ns, "name": gateway, "sectionName": "http",
				}}}},
				"waitInsteadOfSelfCheck": "0s",
			}},
		}},
	}}
	issuer.SetGroupVersionKind(schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "ClusterIssuer"})
	return issuer
}
