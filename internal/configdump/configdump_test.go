package configdump_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/internal/configdump"
)

// endpoint is a stand-in for the controller's /debug/config_dump: it
// answers a dump of the Gateway in the path, and records the Authorization
// header of each request. With refuseCredentials, a request that carries
// one is refused (as a plain-HTTP endpoint should never be sent one).
type endpoint struct {
	refuseCredentials bool
	wantToken         string // "" accepts no Authorization header

	mu   sync.Mutex
	auth []string
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a := r.Header.Get("Authorization")
	e.mu.Lock()
	e.auth = append(e.auth, a)
	e.mu.Unlock()
	if e.refuseCredentials && a != "" {
		http.Error(w, "credentials sent in clear text", http.StatusBadRequest)
		return
	}
	if e.wantToken != "" && a != "Bearer "+e.wantToken {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	gw, ok := strings.CutPrefix(r.URL.Path, configdump.Path+"/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"gateway": gw, "types": []any{}})
}

func (e *endpoint) headers() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.auth...)
}

// kubeconfig writes a kubeconfig whose current context has namespace ns and
// whose user has token (none when "").
func kubeconfig(t *testing.T, ns, token string) string {
	t.Helper()
	user := "{}"
	if token != "" {
		user = fmt.Sprintf("{token: %q}", token)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: %s}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: %q}}]
current-context: x
`, user, ns)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// noKubeconfig makes the default loading rules find nothing.
func noKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
}

func run(cfg configdump.Config) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	err := configdump.Execute(ctx, cfg, &out)
	return out.String(), err
}

// TestPlainHTTP: a controller run with --metrics-secure=false serves plain
// HTTP, which needs no token; the kubeconfig's is never sent in clear
// text, an explicit --token is.
func TestPlainHTTP(t *testing.T) {
	noKubeconfig(t)
	plain := &endpoint{refuseCredentials: true}
	srv := httptest.NewServer(plain)
	defer srv.Close()

	t.Run("no token and no kubeconfig", func(t *testing.T) {
		out, err := run(configdump.Config{Gateway: "infra/shard-a", URL: srv.URL})
		if err != nil {
			t.Fatalf("config dump over http without a token: %v", err)
		}
		if !strings.Contains(out, "gateway: infra/shard-a") {
			t.Errorf("output:\n%s", out)
		}
	})
	t.Run("the kubeconfig's token is not sent", func(t *testing.T) {
		out, err := run(configdump.Config{Gateway: "shard-a", URL: srv.URL + "/", Kubeconfig: kubeconfig(t, "infra", "secret-of-the-kubeconfig"), Output: "json"})
		if err != nil {
			t.Fatalf("config dump over http with a token in the kubeconfig: %v", err)
		}
		var doc struct{ Gateway string }
		if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Gateway != "infra/shard-a" {
			t.Errorf("output (the namespace from the kubeconfig's context): %v\n%s", err, out)
		}
	})
	for _, a := range plain.headers() {
		if a != "" {
			t.Errorf("a request over plain HTTP carried Authorization %q", a)
		}
	}

	t.Run("an explicit --token is sent", func(t *testing.T) {
		wants := &endpoint{wantToken: "explicit"}
		srv := httptest.NewServer(wants)
		defer srv.Close()
		if _, err := run(configdump.Config{Gateway: "infra/shard-a", URL: srv.URL, Token: "explicit"}); err != nil {
			t.Fatal(err)
		}
		if got := wants.headers(); len(got) != 1 || got[0] != "Bearer explicit" {
			t.Errorf("Authorization headers %q, want one Bearer explicit", got)
		}
	})

	t.Run("an http URL to the HTTPS endpoint says so", func(t *testing.T) {
		tls := httptest.NewTLSServer(&endpoint{})
		defer tls.Close()
		_, err := run(configdump.Config{Gateway: "infra/shard-a", URL: strings.Replace(tls.URL, "https://", "http://", 1)})
		if err == nil || !strings.Contains(err.Error(), "is HTTPS") {
			t.Errorf("err = %v, want one saying the endpoint is HTTPS", err)
		}
	})
}

// TestHTTPSNeedsAToken: over HTTPS (the default) a token is still
// required, and taken from the kubeconfig when --token is not given.
func TestHTTPSNeedsAToken(t *testing.T) {
	noKubeconfig(t)
	secure := &endpoint{wantToken: "from-kubeconfig"}
	srv := httptest.NewTLSServer(secure)
	defer srv.Close()

	_, err := run(configdump.Config{Gateway: "infra/shard-a", URL: srv.URL, InsecureSkipTLSVerify: true, Kubeconfig: kubeconfig(t, "", "")})
	if err == nil || !strings.Contains(err.Error(), "has no bearer token") {
		t.Errorf("https without any token: err = %v, want one asking for a token", err)
	}
	out, err := run(configdump.Config{Gateway: "infra/shard-a", URL: srv.URL, InsecureSkipTLSVerify: true, Kubeconfig: kubeconfig(t, "", "from-kubeconfig")})
	if err != nil || !strings.Contains(out, "gateway: infra/shard-a") {
		t.Errorf("https with the kubeconfig's token: %v\n%s", err, out)
	}
	if got := secure.headers(); len(got) != 1 || got[0] != "Bearer from-kubeconfig" {
		t.Errorf("Authorization headers %q, want the kubeconfig's token once", got)
	}
}

// TestExampleMatchesTheChart keeps the help's example on the chart's
// metrics port and the ServiceAccount the chart creates.
func TestExampleMatchesTheChart(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "charts", "shardgate", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Ports struct {
			Metrics int `json:"metrics"`
		} `json:"ports"`
	}
	if err := yaml.Unmarshal(b, &values); err != nil || values.Ports.Metrics == 0 {
		t.Fatalf("ports.metrics of the chart's values: %d, %v", values.Ports.Metrics, err)
	}
	for _, want := range []string{
		fmt.Sprintf("kubectl port-forward -n shardgate-system deploy/shardgate %d", values.Ports.Metrics),
		fmt.Sprintf("--url https://127.0.0.1:%d", values.Ports.Metrics),
		"kubectl create token -n shardgate-system shardgate-config-reader",
	} {
		if !strings.Contains(configdump.Example, want) {
			t.Errorf("the example does not contain %q:\n%s", want, configdump.Example)
		}
	}
	if !strings.Contains(configdump.Help, "shardgate-config-reader") || !strings.Contains(configdump.Help, "configReader.create") {
		t.Errorf("the help does not say the chart creates shardgate-config-reader:\n%s", configdump.Help)
	}
}
