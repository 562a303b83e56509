package main_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/internal/testenv"
)

// TestStartupWaitsForAnUnreachableAPIServer: the built binary, pointed at a
// loopback port where nothing listens, stays up, says on /readyz that it is
// not ready, logs one line per attempt naming the apiserver it cannot reach,
// and still stops cleanly on SIGTERM.
func TestStartupWaitsForAnUnreachableAPIServer(t *testing.T) {
	bin, err := testenv.BuildShardgate()
	if err != nil {
		t.Fatal(err)
	}
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", port)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+server+`", insecure-skip-tls-verify: true}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	health := freeAddr(t)
	cmd := exec.Command(bin, "controller", "--kubeconfig="+kubeconfig, "--health-address="+health,
		"--metrics-address="+freeAddr(t), "--xds-address="+freeAddr(t), "--log-format=text")
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})

	attempts := func() []string {
		var out []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "start-up: waiting; retrying") {
				out = append(out, l)
			}
		}
		return out
	}
	deadline := time.Now().Add(2 * time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for len(attempts()) < 3 {
		select {
		case err := <-done:
			t.Fatalf("shardgate exited (%v) instead of retrying:\n%s", err, logs.String())
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			t.Fatalf("fewer than 3 retry lines within 2 minutes:\n%s", logs.String())
		}
	}
	for _, l := range attempts() {
		if !strings.Contains(l, "cannot reach the apiserver at "+server) || strings.Contains(l, "namespace") && strings.Contains(l, "does not exist") {
			t.Errorf("the retry line does not name the unreachable apiserver (or blames a namespace): %s", l)
		}
	}
	// controller-runtime's healthz handler answers a failed check with 500.
	if code, err := get("http://" + health + "/readyz"); err != nil || code != http.StatusInternalServerError {
		t.Errorf("/readyz while waiting = %d, %v; want 500 (not ready)", code, err)
	}
	if code, err := get("http://" + health + "/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("/healthz while waiting = %d, %v; want 200 (alive: a liveness probe must not restart it)", code, err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		done <- err // for the cleanup
		if err != nil && !strings.Contains(err.Error(), "exit status") {
			t.Fatalf("wait: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("shardgate did not exit within 30s of SIGTERM:\n%s", logs.String())
	}
}

// TestStartupWaitsForItsNamespace: against the real apiserver, with the
// leader-election namespace (which holds the xDS CA) not created yet, the
// binary waits, not ready, saying which namespace is missing, and becomes
// ready once the namespace is created.
func TestStartupWaitsForItsNamespace(t *testing.T) {
	ctx := context.Background()
	env := testenv.StartT(t, testenv.Options{})
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("leaderElection:\n  namespace: late-system\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	health := freeAddr(t)
	proc, err := env.StartShardgate("shardgate", "--config="+cfg, "--health-address="+health,
		"--metrics-address="+freeAddr(t), "--xds-address="+freeAddr(t), "--log-format=text")
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, proc, "a retry line naming the missing namespace", func() (bool, string) {
		log := proc.Tail(50)
		return strings.Contains(log, "namespace late-system does not exist"), log
	})
	if code, err := get("http://" + health + "/readyz"); err != nil || code != http.StatusInternalServerError {
		t.Errorf("/readyz while the namespace is missing = %d, %v; want 500 (not ready)", code, err)
	}
	must(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "late-system"}}))
	waitUntil(t, proc, "/readyz 200 once the namespace exists", func() (bool, string) {
		code, err := get("http://" + health + "/readyz")
		return err == nil && code == http.StatusOK, describe(code, err)
	})
}

// syncBuffer is a bytes.Buffer a process writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
