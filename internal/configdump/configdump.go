package configdump

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/internal/kubeflags"
)

// Path is the controller's endpoint, on the metrics server.
const Path = "/debug/config_dump"

// Help is the long help of `shardgate config dump`.
const Help = `Print the xDS resources (clusters, endpoints, secrets, listeners, routes) the
controller serves to one Gateway's proxies, with their versions. Private keys
are redacted by the controller.

The dump comes from the controller's /debug/config_dump endpoint on its metrics
server (the chart's port 8080, named metrics), behind the same authentication
as /metrics. Over https:// (the default, --metrics-secure) that is a bearer
token whose user may get that path: --token, or else the kubeconfig user's
token. The chart creates the ServiceAccount shardgate-config-reader in its
namespace with that permission (value configReader.create, default true), so
"kubectl create token" of it gives one. Over http:// (a controller run with
--metrics-secure=false) no token is needed, and only --token is ever sent:
never the kubeconfig's credentials, in clear text.

--token, --insecure-skip-tls-verify, --ca-file and --request-timeout are about
the metrics endpoint, not the apiserver (which this command never contacts);
the kubeconfig (--kubeconfig, --context, --cluster, --user) gives the default
namespace and token only.`

// Example is the example section of `shardgate config dump`. Its port is
// the chart's metrics port (ports.metrics).
const Example = `  # the chart's controller, secure metrics (the default)
  kubectl port-forward -n shardgate-system deploy/shardgate 8080 &
  shardgate config dump -n infra shard-a --url https://127.0.0.1:8080 --insecure-skip-tls-verify \
    --token "$(kubectl create token -n shardgate-system shardgate-config-reader)"

  # a controller run with --metrics-secure=false: plain HTTP, no token
  shardgate config dump infra/shard-a --url http://127.0.0.1:8080 -o json`

// NewKubeFlags returns the kubectl connection flags config dump binds:
// --kubeconfig, --context, --cluster, --user and -n. The others would
// clash with its own --token, --insecure-skip-tls-verify and
// --request-timeout, which are about the metrics endpoint, or would do
// nothing (it never contacts the apiserver).
func NewKubeFlags() *kubeflags.Flags {
	return kubeflags.NewContextOnly()
}

// Config is the command line of `shardgate config dump`.
type Config struct {
	// Gateway is the Gateway's name, or "namespace/name".
	Gateway string
	// Namespace is -n; "" is the kubeconfig context's namespace.
	Namespace string
	// URL is the controller's metrics endpoint, e.g. https://127.0.0.1:8080
	// after `kubectl port-forward -n shardgate-system deploy/shardgate 8080`.
	URL string
	// Token is the bearer token; "" takes the kubeconfig user's token over
	// https, and sends none over http.
	Token string
	// Flags, when set, are the kubectl connection flags of NewKubeFlags as
	// the binary binds them; they replace Kubeconfig and Context, and their
	// -n counts as Namespace.
	Flags *kubeflags.Flags
	// Kubeconfig and Context locate the kubeconfig, as kubectl does.
	Kubeconfig, Context string
	// CAFile verifies the endpoint's certificate; InsecureSkipTLSVerify
	// skips that (the default certificate is self-signed).
	CAFile                string
	InsecureSkipTLSVerify bool
	// Output is yaml (default) or json.
	Output string
	// RequestTimeout bounds the request; 0 means none.
	RequestTimeout time.Duration
}

// Execute fetches the dump and prints it to stdout.
func Execute(ctx context.Context, cfg Config, stdout io.Writer) error {
	if cfg.Output == "" {
		cfg.Output = "yaml"
	}
	if cfg.Output != "yaml" && cfg.Output != "json" {
		return fmt.Errorf("unknown output format %q; use yaml or json", cfg.Output)
	}
	if cfg.URL == "" {
		return errors.New("pass --url, the controller's metrics endpoint (for example https://127.0.0.1:8080 after `kubectl port-forward -n shardgate-system deploy/shardgate 8080`)")
	}
	base, err := url.Parse(cfg.URL)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return fmt.Errorf("--url %q is not an http(s) URL", cfg.URL)
	}
	namespace, name, token, err := resolve(cfg, base.Scheme == "https")
	if err != nil {
		return err
	}
	hc, err := httpClient(cfg)
	if err != nil {
		return err
	}
	target := strings.TrimSuffix(base.String(), "/") + Path + "/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the controller at %s: %w", base.Host, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read the answer of %s: %w", target, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusBadRequest:
		if base.Scheme == "http" && strings.Contains(string(body), "HTTPS server") {
			return fmt.Errorf("the controller's metrics endpoint at %s is HTTPS (--metrics-secure, the default): use --url https://%s and a token", base.Host, base.Host)
		}
		return fmt.Errorf("config of Gateway %s/%s: %s: %s", namespace, name, resp.Status, strings.TrimSpace(string(body)))
	case http.StatusUnauthorized:
		return fmt.Errorf("the controller did not accept the token (401): pass --token, or use a kubeconfig whose user has a bearer token")
	case http.StatusForbidden:
		return fmt.Errorf("the token's user may not read %s (403): bind it to the ClusterRole that grants get on %s/*", Path, Path)
	default:
		return fmt.Errorf("config of Gateway %s/%s: %s: %s", namespace, name, resp.Status, strings.TrimSpace(string(body)))
	}
	if cfg.Output == "json" {
		var out bytes.Buffer
		if err := json.Indent(&out, bytes.TrimSpace(body), "", "  "); err != nil {
			return fmt.Errorf("the controller's answer is not JSON: %w", err)
		}
		out.WriteByte('\n')
		_, err = stdout.Write(out.Bytes())
		return err
	}
	y, err := yaml.JSONToYAML(body)
	if err != nil {
		return fmt.Errorf("the controller's answer is not JSON: %w", err)
	}
	_, err = stdout.Write(y)
	return err
}

// resolve settles the Gateway's namespace and the token from the flags and
// the kubeconfig (which is read only when something is missing). The
// kubeconfig's token is taken, and a token required, only when secure: over
// plain HTTP only an explicit --token is sent.
func resolve(cfg Config, secure bool) (namespace, name, token string, err error) {
	namespace, name, token = cfg.Namespace, cfg.Gateway, cfg.Token
	if ns, n, ok := strings.Cut(cfg.Gateway, "/"); ok {
		namespace, name = ns, n
	}
	if name == "" || strings.Contains(name, "/") {
		return "", "", "", fmt.Errorf("GATEWAY %q: want a name or namespace/name", cfg.Gateway)
	}
	flags := cfg.Flags
	if flags == nil {
		flags = NewKubeFlags()
		flags.KubeConfig, flags.Overrides.CurrentContext = cfg.Kubeconfig, cfg.Context
	}
	if namespace == "" && flags.Overrides.Context.Namespace != "" {
		namespace = flags.Overrides.Context.Namespace
	}
	if namespace != "" && (token != "" || !secure) {
		return namespace, name, token, nil
	}
	cc := flags.ToRawKubeConfigLoader()
	if namespace == "" {
		if namespace, _, err = cc.Namespace(); err != nil {
			return "", "", "", fmt.Errorf("load kubeconfig: %w", err)
		}
	}
	if token == "" && secure {
		rc, err := cc.ClientConfig()
		if err != nil {
			return "", "", "", fmt.Errorf("no --token, and no kubeconfig to take one from: %w", err)
		}
		token = rc.BearerToken
		if token == "" && rc.BearerTokenFile != "" {
			b, err := os.ReadFile(rc.BearerTokenFile)
			if err != nil {
				return "", "", "", fmt.Errorf("read the kubeconfig's token file: %w", err)
			}
			token = strings.TrimSpace(string(b))
		}
		if token == "" {
			return "", "", "", errors.New("the kubeconfig's user has no bearer token: pass --token (for example $(kubectl create token -n shardgate-system shardgate-config-reader), the chart's ServiceAccount)")
		}
	}
	return namespace, name, token, nil
}

func httpClient(cfg Config) (*http.Client, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.InsecureSkipTLSVerify} //nolint:gosec // the user's explicit choice
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read --ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s holds no PEM certificate", cfg.CAFile)
		}
		tc.RootCAs = pool
	}
	return &http.Client{Timeout: cfg.RequestTimeout, Transport: &http.Transport{TLSClientConfig: tc, Proxy: http.ProxyFromEnvironment}}, nil
}
