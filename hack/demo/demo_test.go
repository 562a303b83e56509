package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/shardgate/shardgate/internal/testenv"
)

// terminal collects what `make demo` writes to its terminal.
type terminal struct {
	mu  sync.Mutex
	out bytes.Buffer
}

func (t *terminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.out.Write(bytes.ReplaceAll(p, []byte("\r"), nil))
}

func (t *terminal) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.out.String()
}

// TestMakeDemo runs `make demo` on a pseudo-terminal, as a user does: it
// checks the story the demo tells (alice admitted on shard-a only, bob
// holding his name, carol's takeover, leased IPs, xDS), that the kubectl the
// banner names works against the demo's cluster at the pinned version, and
// that Ctrl-C (the terminal's interrupt character, delivered by the kernel
// to the foreground process group) ends it with exit 0 and no error from
// make.
func TestMakeDemo(t *testing.T) {
	testenv.Require(t)
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	// The shardgate binary goes to a scratch BIN; the assets come from bin/.
	cmd := exec.Command("make", "--no-print-directory", "-C", root, "demo", "BIN="+t.TempDir())
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	term := &terminal{}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = copyUntilEOF(term, tty)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	finished := false
	defer func() {
		if !finished { // make is its session's process group leader
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}()

	// Up: the banner (building shardgate and booting cluster mode on a
	// loaded machine can take minutes).
	deadline := time.After(15 * time.Minute)
	for !strings.Contains(term.String(), "Ctrl-C to stop.") {
		select {
		case err := <-exited:
			finished = true
			t.Fatalf("make demo exited before its banner: %v\n%s", err, term.String())
		case <-deadline:
			t.Fatalf("no banner after 15 minutes:\n%s", term.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	text := term.String()
	checkStory(t, text)
	checkKubectl(t, root, text)

	// Ctrl-C.
	if _, err := tty.Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-exited:
		finished = true
	case <-time.After(5 * time.Minute):
		t.Fatalf("make demo still running 5 minutes after Ctrl-C:\n%s", term.String())
	}
	tty.Close()
	<-copied
	text = term.String()
	if err != nil {
		t.Errorf("make demo after Ctrl-C: %v (want exit 0)\n%s", err, tail(text, 40))
	}
	if strings.Contains(text, "make: ***") {
		t.Errorf("make reported an error after Ctrl-C:\n%s", tail(text, 40))
	}
	if !strings.Contains(text, "==> stopping everything") {
		t.Errorf("the demo did not stop its control plane:\n%s", tail(text, 40))
	}
}

// copyUntilEOF copies the pty's output; reading a pty whose other end is
// closed ends with EIO, not EOF.
func copyUntilEOF(dst *terminal, src *os.File) (int64, error) {
	buf := make([]byte, 32*1024)
	var n int64
	for {
		k, err := src.Read(buf)
		if k > 0 {
			_, _ = dst.Write(buf[:k])
			n += int64(k)
		}
		if err != nil {
			return n, err
		}
	}
}

func checkStory(t *testing.T, text string) {
	t.Helper()
	// alice's two LeasedIPs share one address; bob's has another.
	// The IP column is found by its header, not by position.
	ips := map[string]string{}
	col := -1
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && f[0] == "NAMESPACE" && f[1] == "LEASEDIP" {
			col = slices.Index(f, "IP")
			continue
		}
		if col > 0 && len(f) > col && strings.HasPrefix(f[0], "lease-") && (f[1] == "web-http" || f[1] == "web-https") {
			ips[f[0]+"/"+f[1]] = f[col]
		}
	}
	if a, b, c := ips["lease-alice/web-http"], ips["lease-alice/web-https"], ips["lease-bob/web-http"]; a == "" || a != b || a == c {
		t.Errorf("leased IPs: alice %q and %q should be equal and differ from bob's %q", a, b, c)
	}
	flat := strings.Join(strings.Fields(text), " ")
	for _, want := range []string{
		"web.shard-a.apps.example.test  True      Admitted",
		"web.shard-b.apps.example.test  False     HostnameInUse",
		"TransferredAway",
		"test-pool",
		"shardgate-system/shard-a RouteConfiguration",
		// The Akash act: dave's ProviderHost routed in his lease namespace,
		// erin refused for the same name, dave's leased IP reported.
		"spmv8svkn240ljckcjee2vjnpgkapat4ku7e28d7ddulq/shop.akash.example.test shop.akash.example.test web:80",
		"erin-shop.akash.example.test Warning/HostnameInUse",
		"lease shop.akash.example.test shard-a shop.akash.example.test True Admitted",
		`"Protocol": "TCP", "ServiceName": "web"`,
	} {
		if !strings.Contains(flat, strings.Join(strings.Fields(want), " ")) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
}

// checkKubectl runs the banner's kubectl against the banner's kubeconfig.
func checkKubectl(t *testing.T, root, text string) {
	t.Helper()
	var kubeconfig, kubectl string
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "export" && strings.HasPrefix(f[1], "KUBECONFIG=") {
			kubeconfig = strings.TrimPrefix(f[1], "KUBECONFIG=")
		}
		if len(f) >= 2 && strings.HasSuffix(f[0], "kubectl") && f[1] == "get" {
			kubectl = f[0]
		}
	}
	want := filepath.Join(root, "bin", "k8s", "kubectl")
	if kubectl != want || kubeconfig == "" {
		t.Fatalf("the banner names kubectl %q (want %s) and KUBECONFIG %q:\n%s", kubectl, want, kubeconfig, text)
	}
	out, err := exec.Command(kubectl, "version", "--client", "-o", "json").Output()
	if err != nil {
		t.Fatalf("kubectl version: %v", err)
	}
	var v struct {
		ClientVersion struct{ GitVersion string } `json:"clientVersion"`
	}
	if err := json.Unmarshal(out, &v); err != nil || v.ClientVersion.GitVersion != kubernetesVersion(t, root) {
		t.Errorf("kubectl version --client = %q (%v), want %s\n%s", v.ClientVersion.GitVersion, err, kubernetesVersion(t, root), out)
	}
	out, err = exec.Command(kubectl, "--kubeconfig", kubeconfig, "get", "leasehosts", "-A", "--no-headers").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "lease-alice") {
		t.Errorf("kubectl get leasehosts -A: %v\n%s", err, out)
	}
}

func kubernetesVersion(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "hack", "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "KUBERNETES_VERSION="); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("no KUBERNETES_VERSION in hack/versions.env")
	return ""
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
