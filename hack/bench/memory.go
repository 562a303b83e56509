package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// memoryTarget is the RSS target (no GOMEMLIMIT) for a number of routes:
// 60 MiB at 1000 routes + 1100 Services, 90 MiB at 3000, 150 MiB at 10k.
func memoryTarget(routes int) int64 {
	switch {
	case routes <= 1000:
		return 60 << 20
	case routes <= 3000:
		return 90 << 20
	default:
		return 150 << 20
	}
}

// measureMemory lets shardgate settle (status writes still for 1 s, then
// 5 s) and reads its RSS and Go heap with the routes and Services now
// present. After the largest size it saves the heap profile when asked.
func (b *bench) measureMemory(ctx context.Context) error {
	if len(b.res.Memory) == 0 {
		if err := b.logBinary(ctx); err != nil {
			b.logf("memory: binary: %v", err)
		}
	}
	if _, err := b.settledWrites(ctx); err != nil {
		return err
	}
	time.Sleep(5 * time.Second)
	pm, err := procMemory(b.proc.PID())
	if err != nil {
		return err
	}
	mets, err := scrape(ctx, b.metrics)
	if err != nil {
		return err
	}
	f := MemoryFigure{Routes: b.routes, Services: b.services, RSS: pm.RSS, PeakRSS: pm.HWM, Anon: pm.Anon, File: pm.File,
		HeapInuse: int64(mets["go_memstats_heap_inuse_bytes"])}
	b.res.Memory = append(b.res.Memory, f)
	b.logf("memory: %d routes, %d Services: RSS %s (peak %s; anonymous %s, the binary's mapped file pages %s), Go heap in use %s",
		f.Routes, f.Services, mib(f.RSS), mib(f.PeakRSS), mib(f.Anon), mib(f.File), mib(f.HeapInuse))
	largest := b.routes >= max(b.cfg.MemoryRoutes, b.cfg.PropagationRoutes, b.cfg.FloodRoutes)
	if b.cfg.HeapProfile != "" && largest {
		if err := b.saveHeapProfile(ctx); err != nil {
			b.logf("memory: heap profile: %v", err)
		}
	}
	if f.HeapInuse == 0 {
		return errors.New("go_memstats_heap_inuse_bytes missing from shardgate's metrics")
	}
	return nil
}

// logBinary logs what the binary costs before it does anything: its size,
// and the peak RSS of `shardgate version` (the median of five runs), which
// is the binary's pages touched at start-up and its packages' init-time
// allocations. The peak is GNU time's (/usr/bin/time -f %M): a child this
// process starts itself would report, as its maxrss, this process's
// high-water mark too (it is cloned sharing this memory until exec).
func (b *bench) logBinary(ctx context.Context) error {
	bin, err := testenv.BuildShardgate()
	if err != nil {
		return err
	}
	st, err := os.Stat(bin)
	if err != nil {
		return err
	}
	const gnuTime = "/usr/bin/time"
	if _, err := os.Stat(gnuTime); err != nil {
		b.logf("memory: binary %s; no %s to measure `shardgate version`", mib(st.Size()), gnuTime)
		return nil
	}
	var peaks []int64
	for range 5 {
		if err := dropPageCache(bin); err != nil {
			return err
		}
		out, err := exec.CommandContext(ctx, gnuTime, "-f", "%M", bin, "version").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %s version: %w: %s", gnuTime, bin, err, out)
		}
		lines := strings.Fields(strings.TrimSpace(string(out)))
		kb, err := strconv.ParseInt(lines[len(lines)-1], 10, 64)
		if err != nil {
			return fmt.Errorf("%s %s version: peak RSS: %w", gnuTime, bin, err)
		}
		peaks = append(peaks, kb<<10)
	}
	slices.Sort(peaks)
	b.logf("memory: binary %s; `shardgate version` peak RSS %s (median of 5)", mib(st.Size()), mib(peaks[len(peaks)/2]))
	return nil
}

func mib(v int64) string { return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20)) }

// saveHeapProfile fetches shardgate's heap profile (after a GC) into
// cfg.HeapProfile.
func (b *bench) saveHeapProfile(ctx context.Context) error {
	if err := b.saveProfile(ctx, "/debug/pprof/heap?gc=1", b.cfg.HeapProfile); err != nil {
		return err
	}
	b.logf("memory: heap profile saved to %s", b.cfg.HeapProfile)
	return nil
}

// saveProfile fetches one of shardgate's pprof profiles (path and query)
// into the file dst.
func (b *bench) saveProfile(ctx context.Context, path, dst string) error {
	if b.pprof == "" {
		return fmt.Errorf("save %s: shardgate serves no pprof in this run", path)
	}
	url := b.pprof + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := scrapeClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
