package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// TestSmoke runs the bench command's smoke mode in-process and checks that
// every figure was measured. It does not judge the figures against their
// targets: the bench command is a measurement, not a test.
func TestSmoke(t *testing.T) {
	testenv.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := smokeConfig()
	var out bytes.Buffer
	res, err := run(ctx, cfg, &out)
	if res != nil {
		printTable(&out, cfg, res)
	}
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("phases failed: %v", res.Errors)
	}
	n := cfg.AttachRoutes
	if res.Attached != n || res.Accepted != n {
		t.Errorf("attach: attached %d, accepted %d, want %d", res.Attached, res.Accepted, n)
	}
	if res.AttachTotal <= 0 || res.AttachCreate <= 0 || res.Teardown <= 0 {
		t.Errorf("attach: times not measured: %+v", res)
	}
	if res.StatusWrites <= 0 || res.WritesPerRoute <= 0 {
		t.Errorf("attach: no status writes counted")
	}
	if res.MemoryRoutes < cfg.MemoryObjects || res.MemoryServices < cfg.MemoryObjects {
		t.Errorf("memory: %d routes, %d Services loaded, want ≥ %d", res.MemoryRoutes, res.MemoryServices, cfg.MemoryObjects)
	}
	if res.RSS <= 0 || res.HeapInuse <= 0 {
		t.Errorf("memory: RSS %d, heap %d", res.RSS, res.HeapInuse)
	}
	if len(res.Propagation) != cfg.Samples || len(res.Churn) != cfg.Samples {
		t.Errorf("propagation: %d and %d samples, want %d each", len(res.Propagation), len(res.Churn), cfg.Samples)
	}
	if res.PropagationLate > 0 || res.ChurnLate > 0 {
		t.Errorf("propagation: %d and %d samples timed out", res.PropagationLate, res.ChurnLate)
	}
	if res.ChurnUpdates == 0 {
		t.Errorf("churn: no route updates made")
	}
	for _, r := range rows(cfg, res) {
		if r.verdict == "NOT MEASURED" {
			t.Errorf("%s: not measured", r.figure)
		}
	}
}
