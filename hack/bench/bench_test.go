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
	n := cfg.FloodRoutes
	if len(res.FloodWithout) != cfg.FloodRounds || len(res.FloodWith) != cfg.FloodRounds || len(res.FloodAccepted) != cfg.FloodRounds {
		t.Errorf("flood: %d/%d/%d rounds timed, want %d", len(res.FloodWithout), len(res.FloodWith), len(res.FloodAccepted), cfg.FloodRounds)
	}
	if res.Attached != n || res.Accepted != n {
		t.Errorf("flood: attached %d, accepted %d, want %d", res.Attached, res.Accepted, n)
	}
	for _, w := range res.FloodWrites {
		if w < float64(n) {
			t.Errorf("flood: %.0f status writes counted for %d new routes", w, n)
		}
	}
	// Memory at N, P and M routes, each route with its own Service (the
	// samples taken in between add routes before M).
	wantSizes := []int{n, cfg.PropagationRoutes, cfg.MemoryRoutes}
	if len(res.Memory) != len(wantSizes) {
		t.Fatalf("memory: %d figures, want %d", len(res.Memory), len(wantSizes))
	}
	for i, m := range res.Memory {
		if m.Routes < wantSizes[i] || (i < 2 && m.Routes != wantSizes[i]) || m.Services < m.Routes+cfg.ExtraServices || m.RSS <= 0 || m.HeapInuse <= 0 {
			t.Errorf("memory %d: %+v, want %d routes and ≥ %d Services", i, m, wantSizes[i], wantSizes[i]+cfg.ExtraServices)
		}
	}
	sets := append([]SampleSet{res.Propagation, res.PropagationB2B, res.Churn, res.PropagationLarge, res.PropagationLargeB2B}, res.Tenant...)
	sets = append(sets, res.TenantB2B...)
	// Tenant flow at N, P and M routes, spaced and back to back.
	if len(res.Tenant) != 3 || len(res.TenantB2B) != 3 {
		t.Errorf("tenant flow: %d phases, %d back to back, want 3", len(res.Tenant), len(res.TenantB2B))
	}
	for i, s := range sets {
		if len(s.Samples) != cfg.Samples || s.Late > 0 {
			t.Errorf("sample set %d: %d samples (%d timed out), want %d", i, len(s.Samples), s.Late, cfg.Samples)
		}
	}
	for _, s := range append(res.Tenant, res.TenantB2B...) {
		if len(s.FromService) != cfg.Samples {
			t.Errorf("tenant flow: %d Service → RDS samples, want %d", len(s.FromService), cfg.Samples)
		}
	}
	if f := res.LeaseHostFlow; len(f.Samples) != cfg.Samples || f.Late > 0 || len(f.FromService) != len(f.Samples) {
		t.Errorf("LeaseHost flow: %d samples (%d timed out, %d from the Service), want %d", len(f.Samples), f.Late, len(f.FromService), cfg.Samples)
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
