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
	for _, want := range []string{
		"web.shard-a.apps.example.test  True      Admitted",
		"web.shard-b.apps.example.test  False     HostnameInUse",
		"TransferredAway",
	} {
		if !strings.Contains(strings.Join(strings.Fields(text), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}
