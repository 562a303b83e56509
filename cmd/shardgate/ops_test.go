package main_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shardgate/shardgate/internal/pki"
	"github.com/shardgate/shardgate/internal/testenv"
)

// metricValue reads one unlabelled series from a /metrics page.
func metricValue(page, name string) (float64, bool) {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(page)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

func getBody(url string) (string, error) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	return string(b), err
}

// TestOperatorSignals runs the built binary with a config file naming
// xds.tls files, as an operator would: a broken edit of the config file
// is one log line without a stack trace and sets
// shardgate_config_last_reload_successful to 0 on /metrics, fixing it sets
// it to 1 and moves the success timestamp on; a rotated xds.tls
// certificate is what a new xDS TLS connection gets.
func TestOperatorSignals(t *testing.T) {
	ctx := context.Background()
	env := testenv.StartT(t, testenv.Options{})
	dir := t.TempDir()
	serverCA, clientCA := mustCA(t, "xds server CA"), mustCA(t, "xds client CA")
	certFile, keyFile, caFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")
	writeServerCert := func() *big.Int {
		t.Helper()
		certPEM, keyPEM, err := serverCA.Issue("xds", []string{"localhost"}, nil, time.Hour, true)
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		// Key first: the certificate's write is what makes a new pair.
		writeFile(t, keyFile, keyPEM)
		writeFile(t, certFile, certPEM)
		return pair.Leaf.SerialNumber
	}
	first := writeServerCert()
	writeFile(t, caFile, clientCA.CertPEM())
	cfg := filepath.Join(dir, "config.yaml")
	tlsKeys := fmt.Sprintf("xds:\n  tls: {certFile: %q, keyFile: %q, caFile: %q}\n", certFile, keyFile, caFile)
	writeFile(t, cfg, []byte(tlsKeys+"blockedHostnames: [a.example]\n"))

	health, metrics, xds := freeAddr(t), freeAddr(t), freeAddr(t)
	proc, err := env.StartShardgate("shardgate-ops",
		"--config="+cfg, "--health-address="+health,
		"--metrics-address="+metrics, "--metrics-secure=false",
		"--xds-address="+xds, "--log-format=text")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = proc.Signal(syscall.SIGTERM)
		select {
		case <-proc.Done():
		case <-time.After(30 * time.Second):
			t.Errorf("shardgate did not exit within 30s of SIGTERM")
		}
	}()
	// until polls cond, failing with the process's log at the deadline.
	until := func(what string, cond func() (bool, string)) {
		t.Helper()
		var last string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
			if done, werr := proc.Exited(); done {
				return false, fmt.Errorf("shardgate exited (%v)", werr)
			}
			ok, l := cond()
			last = l
			return ok, nil
		})
		if err != nil {
			t.Fatalf("waiting for %s: %v (last: %s)\n%s", what, err, last, proc.Tail(40))
		}
	}
	gauges := func() (ok, ts float64, desc string) {
		page, err := getBody("http://" + metrics + "/metrics")
		if err != nil {
			return -1, -1, err.Error()
		}
		ok, found := metricValue(page, "shardgate_config_last_reload_successful")
		ts, found2 := metricValue(page, "shardgate_config_last_reload_success_timestamp_seconds")
		if !found || !found2 {
			return -1, -1, "the config gauges are not on /metrics"
		}
		return ok, ts, fmt.Sprintf("successful %v, timestamp %v", ok, ts)
	}

	var initial float64
	until("the config gauges at 1", func() (bool, string) {
		ok, ts, desc := gauges()
		initial = ts
		return ok == 1 && ts > 0, desc
	})

	// A broken edit.
	writeFile(t, cfg, []byte(tlsKeys+"blockedHostnames: [a.example, \"a..b\"]\n"))
	until("shardgate_config_last_reload_successful 0", func() (bool, string) {
		ok, _, desc := gauges()
		return ok == 0, desc
	})
	until("the reload failure in the log", func() (bool, string) {
		return strings.Contains(proc.Tail(200), "config reload failed"), "no line yet"
	})
	lines := strings.Split(proc.Tail(200), "\n")
	for i, l := range lines {
		if !strings.Contains(l, "config reload failed") {
			continue
		}
		if !strings.Contains(l, cfg) || !strings.Contains(l, "a..b") {
			t.Errorf("the log line does not name the file and the error:\n%s", l)
		}
		if i+1 < len(lines) && (strings.HasPrefix(lines[i+1], "\t") || strings.HasPrefix(lines[i+1], " ") || strings.Contains(lines[i+1], ".go:")) {
			t.Errorf("a stack trace follows the log line:\n%s", strings.Join(lines[i:], "\n"))
		}
	}
	if log := proc.Tail(400); strings.Contains(log, "goroutine ") || regexp.MustCompile(`\.go:\d+`).MatchString(log) {
		t.Errorf("the log holds a stack trace:\n%s", log)
	}
	if _, ts, _ := gauges(); ts != initial {
		t.Errorf("the success timestamp moved to %v on a failed reload, want %v", ts, initial)
	}

	// The fix.
	writeFile(t, cfg, []byte(tlsKeys+"blockedHostnames: [a.example, b.example]\n"))
	until("shardgate_config_last_reload_successful 1 and a later timestamp", func() (bool, string) {
		ok, ts, desc := gauges()
		return ok == 1 && ts > initial, desc
	})

	// The xds.tls certificate: the file's, then the rotated one's.
	client := clientTLS(t, serverCA, clientCA)
	serial := func() (*big.Int, string) {
		c, err := tls.Dial("tcp", xds, client)
		if err != nil {
			return nil, err.Error()
		}
		defer c.Close()
		s := c.ConnectionState().PeerCertificates[0].SerialNumber
		return s, "serial " + s.String()
	}
	until("the xds.tls certificate on the xDS address", func() (bool, string) {
		s, desc := serial()
		return s != nil && s.Cmp(first) == 0, desc
	})
	second := writeServerCert()
	until("the rotated xds.tls certificate on a new connection", func() (bool, string) {
		s, desc := serial()
		return s != nil && s.Cmp(second) == 0, desc
	})
}

func mustCA(t *testing.T, name string) *pki.CA {
	t.Helper()
	ca, err := pki.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// clientTLS trusts serverCA and presents a Gateway client certificate
// from clientCA.
func clientTLS(t *testing.T, serverCA, clientCA *pki.CA) *tls.Config {
	t.Helper()
	certPEM, keyPEM, err := clientCA.IssueGateway(types.NamespacedName{Namespace: "ns", Name: "gw"})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: serverCA.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12,
		Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}}
}
