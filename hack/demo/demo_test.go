package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// TestDemo runs `make demo`'s program end to end (cluster mode, the built
// binary, examples/) and checks the story it tells: alice admitted on
// shard-a only, bob holding his name, carol's takeover.
func TestDemo(t *testing.T) {
	testenv.Require(t)
	bin, err := testenv.BuildShardgate()
	if err != nil {
		t.Fatal(err)
	}
	r, w, _ := os.Pipe()
	stdout := os.Stdout
	os.Stdout = w
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { _, _ = io.Copy(&out, r); close(done) }()
	runErr := run(bin, "../../examples", time.Millisecond)
	os.Stdout = stdout
	w.Close()
	<-done
	t.Log(out.String())
	if runErr != nil {
		t.Fatal(runErr)
	}
	text := out.String()
	// alice's two LeasedIPs share one address; bob's has another.
	ips := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && strings.HasPrefix(f[0], "lease-") && (f[1] == "web-http" || f[1] == "web-https") {
			ips[f[0]+"/"+f[1]] = f[4]
		}
	}
	if a, b, c := ips["lease-alice/web-http"], ips["lease-alice/web-https"], ips["lease-bob/web-http"]; a == "" || a != b || a == c {
		t.Errorf("leased IPs: alice %q and %q should be equal and differ from bob's %q", a, b, c)
	}
	for _, want := range []string{
		"web.shard-a.apps.example.test  True      Admitted",
		"web.shard-b.apps.example.test  False     HostnameInUse",
		"TransferredAway",
		"test-pool",
		"shardgate-system/shard-a RouteConfiguration",
	} {
		if !strings.Contains(strings.Join(strings.Fields(text), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}
