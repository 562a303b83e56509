package main_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shardgate/shardgate/internal/testenv"
)

// TestControllerSmoke runs the built binary against the real apiserver: it
// must become ready and exit cleanly (status 0) on SIGTERM.
func TestControllerSmoke(t *testing.T) {
	ctx := context.Background()
	env := testenv.StartT(t, testenv.Options{})
	health, metrics := freeAddr(t), freeAddr(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("blockedHostnames: [\".blocked.test\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	proc, err := env.StartShardgate("shardgate",
		"--config="+cfg,
		"--health-address="+health,
		// Plain HTTP, to read it without a token (the secure default is
		// tested in metrics_test.go).
		"--metrics-address="+metrics, "--metrics-secure=false",
		"--xds-address="+freeAddr(t),
		"--log-format=text")
	if err != nil {
		t.Fatal(err)
	}

	var code int
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		if done, werr := proc.Exited(); done {
			return false, fmt.Errorf("shardgate exited before ready (%v)", werr)
		}
		var gerr error
		code, gerr = get("http://" + health + "/readyz")
		return gerr == nil && code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("/readyz not 200 (last: %d): %v:\n%s", code, err, proc.Tail(40))
	}
	if code, err := get("http://" + health + "/healthz"); err != nil || code != http.StatusOK {
		t.Fatalf("/healthz: %d %v", code, err)
	}
	// The metrics address serves metrics, and by default not /debug/xds,
	// which names every tenant's clusters and Secrets.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(30 * time.Second); ; <-tick.C {
		code, err := get("http://" + metrics + "/metrics")
		if err == nil && code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics not 200 within 30s (last: %d, %v):\n%s", code, err, proc.Tail(40))
		}
	}
	if code, err := get("http://" + metrics + "/debug/xds"); err != nil || code != http.StatusNotFound {
		t.Fatalf("/debug/xds without --enable-debug-xds: %d %v, want 404", code, err)
	}

	if err := proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-proc.Done():
		_, werr := proc.Exited()
		if werr != nil {
			t.Fatalf("shardgate exited with %v after SIGTERM:\n%s", werr, proc.Tail(40))
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("shardgate did not exit within 30s of SIGTERM:\n%s", proc.Tail(40))
	}
	if log := proc.Tail(200); !strings.Contains(log, "shardgate controller stopped") {
		t.Fatalf("no clean-shutdown line in the log:\n%s", log)
	}
}

// TestBadConfigFailsStart: a config file with an unknown key stops the
// binary at start, naming the key.
func TestBadConfigFailsStart(t *testing.T) {
	bin, err := testenv.BuildShardgate()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("blockedHostname: [example.com]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	// A syntactically valid kubeconfig pointing nowhere: the config file
	// must fail before any connection is attempted.
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "controller", "--kubeconfig="+kubeconfig, "--config="+cfg).CombinedOutput()
	if err == nil {
		t.Fatalf("shardgate started with a bad config:\n%s", out)
	}
	if !strings.Contains(string(out), `"blockedHostname"`) {
		t.Fatalf("error does not name the unknown key:\n%s", out)
	}
}

func TestVersion(t *testing.T) {
	bin, err := testenv.BuildShardgate()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "shardgate ") {
		t.Fatalf("version: %v: %s", err, out)
	}
}

func get(url string) (int, error) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func freeAddr(t *testing.T) string {
	t.Helper()
	p, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", p)
}
