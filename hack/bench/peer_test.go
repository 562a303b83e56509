package main

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// TestPeerRows checks the comparison rows: shardgate's figure over the
// peer's, PASS at ≤ 1.00 and MISS above, NOT MEASURED when either side
// lacks the figure, and no rows without a peer run.
func TestPeerRows(t *testing.T) {
	cfg := smokeConfig()
	if got := peerRows(cfg, &Results{}); len(got) != 0 {
		t.Fatalf("rows without a peer run: %v", got)
	}
	r := &Results{
		FloodWith:     []time.Duration{2 * time.Second, 2 * time.Second},
		FloodAccepted: []time.Duration{500 * time.Millisecond},
		Memory:        []MemoryFigure{{Routes: cfg.FloodRoutes, Services: 55, RSS: 100 << 20, Anon: 30 << 20}},
		Propagation:   SampleSet{Routes: cfg.PropagationRoutes, Samples: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}},
		Peer: &PeerResults{
			Name: peerContour, Version: "contour v1.33.8",
			Flood:         []time.Duration{time.Second, 3 * time.Second},
			FloodAccepted: []time.Duration{time.Second},
			Memory: []MemoryFigure{{Routes: cfg.FloodRoutes, Services: 55, RSS: 80 << 20, Anon: 40 << 20},
				{Routes: cfg.PropagationRoutes, Services: 105, RSS: 90 << 20}},
			Propagation:          SampleSet{Routes: cfg.PropagationRoutes, Samples: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}},
			VersionRSS:           40 << 20,
			ShardgateVersionRSS:  50 << 20,
			VersionAnon:          10 << 20,
			ShardgateVersionAnon: 5 << 20,
		},
	}
	want := map[string]struct{ value, verdict string }{
		"route Creates":      {"shardgate 2000.0 ms, contour 2000.0 ms: 1.00×", "PASS"},
		"Accepted after":     {"shardgate 500.0 ms, contour 1000.0 ms: 0.50×", "PASS"},
		" RSS settled, 50 ":  {"shardgate 100.0 MiB, contour 80.0 MiB: 1.25×", "MISS"},
		" RSS settled, 100 ": {"not measured for both", "NOT MEASURED"},
		"anonymous RSS settled (without the binary's file pages), 50 ": {"shardgate 30.0 MiB, contour 40.0 MiB: 0.75×", "PASS"},
		"`version` peak RSS":              {"shardgate 50.0 MiB, contour 40.0 MiB: 1.25×", "MISS"},
		"`version` anonymous RSS at exit": {"shardgate 5.0 MiB, contour 10.0 MiB: 0.50×", "PASS"},
		"RDS p50":                         {"shardgate 10.0 ms, contour 100.0 ms: 0.10×", "PASS"},
		"RDS p99":                         {"shardgate 20.0 ms, contour 200.0 ms: 0.10×", "PASS"},
	}
	seen := map[string]bool{}
	for _, row := range rows(cfg, r) {
		if !strings.HasPrefix(row.figure, "vs contour: ") {
			continue
		}
		for key, w := range want {
			if !strings.Contains(row.figure, key) {
				continue
			}
			seen[key] = true
			if row.value != w.value || row.verdict != w.verdict {
				t.Errorf("%s: %q %s, want %q %s", row.figure, row.value, row.verdict, w.value, w.verdict)
			}
			if row.target != "≤ 1.00×" {
				t.Errorf("%s: target %q", row.figure, row.target)
			}
		}
	}
	for key := range want {
		if !seen[key] {
			t.Errorf("no row for %q", key)
		}
	}
	// Propagation at different sizes is no comparison.
	r.Propagation.Routes++
	for _, row := range peerRows(cfg, r) {
		if strings.Contains(row.figure, "RDS p50") && row.verdict != "NOT MEASURED" {
			t.Errorf("%s: %s with shardgate's figure at another size", row.figure, row.verdict)
		}
	}
}

// TestPeerSmoke measures Contour on the smoke workload, as make bench does
// after shardgate, and checks that every peer figure was measured. It
// needs bin/contour (make contour), which make test does not build: it is
// skipped without it.
func TestPeerSmoke(t *testing.T) {
	testenv.Require(t)
	dir, err := peerDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := peerAssets(dir); err != nil {
		t.Skipf("%v (the peer is built by make contour only)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := smokeConfig()
	cfg.Peer = peerContour
	var out bytes.Buffer
	res := &Results{}
	err = runPeer(ctx, cfg, &out, res)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	p := res.Peer
	if len(p.Flood) != cfg.FloodRounds || len(p.FloodAccepted) != cfg.FloodRounds {
		t.Errorf("flood: %d/%d rounds timed, want %d", len(p.Flood), len(p.FloodAccepted), cfg.FloodRounds)
	}
	wantSizes := []int{cfg.FloodRoutes, cfg.PropagationRoutes}
	if len(p.Memory) != len(wantSizes) {
		t.Fatalf("memory: %d figures, want %d", len(p.Memory), len(wantSizes))
	}
	for i, m := range p.Memory {
		if m.Routes != wantSizes[i] || m.Services < m.Routes+cfg.ExtraServices || m.RSS <= 0 {
			t.Errorf("memory %d: %+v, want %d routes and ≥ %d Services", i, m, wantSizes[i], wantSizes[i]+cfg.ExtraServices)
		}
	}
	if s := p.Propagation; s.Routes != cfg.PropagationRoutes || len(s.Samples) != cfg.Samples || s.Late > 0 {
		t.Errorf("propagation: %d routes present, %d samples (%d timed out), want %d and %d", s.Routes, len(s.Samples), s.Late, cfg.PropagationRoutes, cfg.Samples)
	}
	if p.VersionRSS <= 0 || p.ShardgateVersionRSS <= 0 || p.VersionAnon <= 0 || p.ShardgateVersionAnon <= 0 || !strings.Contains(p.Version, "v1.") {
		t.Errorf("version: peak RSS %d (shardgate %d), %q", p.VersionRSS, p.ShardgateVersionRSS, p.Version)
	}
}

// TestPeakRSS checks that a child's peak RSS is its own, not the bench's:
// the bench grows far past what `shardgate version` needs before running
// it, and the figure must stay below that growth.
func TestPeakRSS(t *testing.T) {
	bin, err := testenv.BuildShardgate()
	if err != nil {
		t.Fatal(err)
	}
	ballast := make([]byte, 256<<20)
	for i := range ballast {
		ballast[i] = 1 // touched: resident
	}
	pm, out, err := peakRSS(context.Background(), bin, "version")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("shardgate version: peak RSS %s, at exit anonymous %s and file %s; printed %q", mib(pm.HWM), mib(pm.Anon), mib(pm.File), out)
	if pm.HWM <= 1<<20 || pm.HWM >= 192<<20 || pm.Anon <= 0 || pm.Anon > pm.HWM {
		t.Errorf("peak RSS %s, anonymous %s: want the child's own (over 1 MiB, below the bench's 256 MiB ballast)", mib(pm.HWM), mib(pm.Anon))
	}
	if strings.TrimSpace(out) == "" {
		t.Errorf("no output captured")
	}
	runtime.KeepAlive(ballast)
}
