package main_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/pki"
	"github.com/shardgate/shardgate/internal/testenv"
)

// TestSecureMetricsAndConfigDump runs the built binary with its default
// (secure) metrics against the real apiserver: /metrics and
// /debug/config_dump answer only to a bearer token the apiserver
// authenticates and authorizes, and `shardgate config dump` prints a
// Gateway's xDS resources through that endpoint with private keys redacted.
func TestSecureMetricsAndConfigDump(t *testing.T) {
	ctx := context.Background()
	env := testenv.StartT(t, testenv.Options{})
	c := env.Client
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}

	// A Gateway with an HTTPS listener, so that its config holds a Secret
	// with a private key.
	ca, err := pki.NewCA("test")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue("dump.example.test", []string{"dump.example.test"}, nil, time.Hour, true)
	if err != nil {
		t.Fatal(err)
	}
	must(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dump-tls"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
	}))
	must(t, c.Create(ctx, &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "shardgate"},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: shardgatev1alpha1.ControllerName},
	}))
	must(t, c.Create(ctx, &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dump"},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: "shardgate",
			Listeners: []gatewayv1.Listener{{
				Name: "https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443,
				TLS: &gatewayv1.ListenerTLSConfig{
					Mode:            new(gatewayv1.TLSModeTerminate),
					CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "dump-tls"}},
				},
			}},
		},
	}))

	// Who may read: a ClusterRole on the two paths, bound to "reader";
	// "nobody" is authenticated and bound to nothing.
	paths := []string{"/metrics", "/debug/config_dump", "/debug/config_dump/*"}
	must(t, c.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "shardgate-metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: paths, Verbs: []string{"get"}}},
	}))
	for _, sa := range []string{"reader", "nobody"} {
		must(t, c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: sa}}))
	}
	must(t, c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "shardgate-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "shardgate-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "reader"}},
	}))
	token := func(sa string) string {
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token of %s: %v", sa, err)
		}
		return tr.Status.Token
	}
	reader, nobody := token("reader"), token("nobody")

	health, metrics, pprofAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	proc, err := env.StartShardgate("shardgate",
		"--health-address="+health, "--metrics-address="+metrics, "--xds-address="+freeAddr(t), "--log-format=text",
		"--pprof-address="+pprofAddr)
	if err != nil {
		t.Fatal(err)
	}
	base := "https://" + metrics
	// The metrics server starts with the manager; until then the port is
	// closed.
	waitUntil(t, proc, "the metrics endpoint to answer 200 to an authorized token", func() (bool, string) {
		code, body, err := getTLS(base+"/metrics", reader)
		return err == nil && code == http.StatusOK && strings.Contains(body, "shardgate_"), describe(code, err)
	})
	for _, tc := range []struct {
		name, path, token string
		want              int
	}{
		{"no token", "/metrics", "", http.StatusUnauthorized},
		{"an authenticated user without the role", "/metrics", nobody, http.StatusForbidden},
		{"config dump without the role", "/debug/config_dump/default/dump", nobody, http.StatusForbidden},
		{"config dump without a token", "/debug/config_dump/default/dump", "", http.StatusUnauthorized},
	} {
		code, _, err := getTLS(base+tc.path, tc.token)
		if err != nil || code != tc.want {
			t.Errorf("%s: GET %s = %s, want %d", tc.name, tc.path, describe(code, err), tc.want)
		}
	}
	// A token the apiserver does not know is unauthorized, like no token:
	// the TokenReview answered, it just did not authenticate it.
	if code, _, err := getTLS(base+"/metrics", "not-a-token"); err != nil || code != http.StatusUnauthorized {
		t.Errorf("an unknown token: GET /metrics = %s, want 401", describe(code, err))
	}
	if code, err := get("http://" + metrics + "/metrics"); err == nil && code == http.StatusOK {
		t.Errorf("plain HTTP /metrics answered 200; the endpoint must be HTTPS only")
	}
	// pprof is served by controller-runtime on its own address, and no
	// longer on the metrics server.
	waitUntil(t, proc, "pprof on --pprof-address", func() (bool, string) {
		code, err := get("http://" + pprofAddr + "/debug/pprof/")
		return err == nil && code == http.StatusOK, describe(code, err)
	})
	if code, _, err := getTLS(base+"/debug/pprof/", reader); err == nil && code == http.StatusOK {
		t.Errorf("the metrics server still serves /debug/pprof/")
	}
	// With pprof served, heap profiles are sampled: the profile's header
	// gives the sampling rate (twice runtime.MemProfileRate), 0 when off.
	if body, err := getBody("http://" + pprofAddr + "/debug/pprof/heap?debug=1"); err != nil {
		t.Errorf("heap profile: %v", err)
	} else if head, _, _ := strings.Cut(body, "\n"); !strings.HasPrefix(head, "heap profile: ") || strings.HasSuffix(head, "@ heap/0") {
		t.Errorf("heap profile header %q: heap profiles are not sampled although pprof is served", head)
	}

	bin, err := testenv.BuildShardgate()
	if err != nil {
		t.Fatal(err)
	}
	dump := func(args ...string) (string, string, error) {
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(cctx, bin, append([]string{"config", "dump", "--kubeconfig", env.Kubeconfig, "--url", base, "--insecure-skip-tls-verify"}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	var doc struct {
		Gateway string `json:"gateway"`
		Types   []struct {
			Type      string            `json:"type"`
			Version   string            `json:"version"`
			Resources []json.RawMessage `json:"resources"`
		} `json:"types"`
	}
	var out string
	waitUntil(t, proc, "the Gateway's config to hold its Secret and Listener", func() (bool, string) {
		stdout, stderr, err := dump("default/dump", "--token", reader, "-o", "json")
		if err != nil {
			return false, stderr
		}
		out = stdout
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			return false, err.Error()
		}
		n := map[string]int{}
		for _, ty := range doc.Types {
			n[ty.Type] = len(ty.Resources)
		}
		return n["Secret"] == 1 && n["Listener"] >= 1, stdout
	})
	if doc.Gateway != "default/dump" {
		t.Errorf("gateway = %q", doc.Gateway)
	}
	// The key is nowhere in the dump, in any encoding; the Secret keeps
	// its certificate and says the key is redacted.
	for _, leak := range []string{base64.StdEncoding.EncodeToString(keyPEM), strings.Split(strings.TrimSpace(string(keyPEM)), "\n")[1], "PRIVATE KEY"} {
		if strings.Contains(out, leak) {
			t.Fatalf("the dump shows the private key:\n%s", out)
		}
	}
	var secret struct {
		Name           string `json:"name"`
		TLSCertificate struct {
			CertificateChain struct {
				InlineBytes []byte `json:"inlineBytes"`
			} `json:"certificateChain"`
			PrivateKey map[string]string `json:"privateKey"`
		} `json:"tlsCertificate"`
	}
	for _, ty := range doc.Types {
		if ty.Type == "Secret" {
			must(t, json.Unmarshal(ty.Resources[0], &secret))
		}
	}
	if !bytes.Equal(secret.TLSCertificate.CertificateChain.InlineBytes, certPEM) {
		t.Errorf("the dump's Secret %q lost its certificate:\n%s", secret.Name, out)
	}
	if want := map[string]string{"inlineString": "[redacted]"}; !reflect.DeepEqual(secret.TLSCertificate.PrivateKey, want) {
		t.Errorf("the dump's private key = %v, want %v", secret.TLSCertificate.PrivateKey, want)
	}

	// YAML by default, and the namespace from -n.
	yamlOut, stderr, err := dump("dump", "-n", "default", "--token", reader)
	if err != nil || !strings.Contains(yamlOut, "gateway: default/dump") || !strings.Contains(yamlOut, "type: Listener") {
		t.Errorf("yaml dump: %v %s\n%s", err, stderr, yamlOut)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"a user without the role", []string{"default/dump", "--token", nobody}, "403"},
		{"an unknown Gateway", []string{"default/nope", "--token", reader}, "no xDS config is published for Gateway default/nope"},
		// The harness's admin kubeconfig uses a client certificate, no token.
		{"no token anywhere", []string{"default/dump"}, "has no bearer token"},
	} {
		stdout, stderr, err := dump(tc.args...)
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) || !strings.Contains(stderr, tc.stderr) || stdout != "" {
			t.Errorf("%s: err %v, stdout %q, stderr %q (want it to contain %q)", tc.name, err, stdout, stderr, tc.stderr)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func describe(code int, err error) string {
	if err != nil {
		return err.Error()
	}
	return http.StatusText(code)
}

// getTLS GETs url over HTTPS (the endpoint's certificate is self-signed)
// with a bearer token, if any.
func getTLS(url, token string) (int, string, error) {
	c := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test endpoint
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// waitUntil polls cond for up to two minutes (a loaded machine), failing
// with cond's last observation and the process's log.
func waitUntil(t *testing.T, proc *testenv.Process, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, last := cond()
		if ok {
			return
		}
		if done, werr := proc.Exited(); done {
			t.Fatalf("shardgate exited (%v) while waiting for %s; last: %s\n%s", werr, what, last, proc.Tail(40))
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last: %s\n%s", what, last, proc.Tail(40))
		}
		<-tick.C
	}
}
