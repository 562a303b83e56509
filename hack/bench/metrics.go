package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// scrapeClient reads shardgate's metrics and profiles without asking for
// gzip. The bench reads them many times a second while it waits for
// shardgate to settle, and the peer's only to see that it is up (its
// settling is read from the apiserver): each gzipped answer would leave
// a compressor of about a megabyte in shardgate's heap, there for the
// bench alone, in the RSS measured a few seconds later.
var scrapeClient = &http.Client{Transport: &http.Transport{DisableCompression: true}}

// scrape reads a Prometheus text endpoint and sums each metric's samples
// over their labels.
func scrape(ctx context.Context, url string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := scrapeClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	for s.Scan() {
		line := s.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.IndexAny(line, "{ ")
		if i < 0 {
			continue
		}
		name, rest := line[:i], line[i:]
		if rest[0] == '{' {
			rest = rest[strings.LastIndexByte(rest, '}')+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		out[name] += v
	}
	return out, s.Err()
}

// procMem is what /proc/<pid>/status says of a process's memory, in
// bytes.
type procMem struct {
	RSS, HWM int64 // VmRSS, VmHWM
	// Anon and File split RSS: anonymous memory (the Go heap, stacks,
	// runtime) and mapped file pages (the binary's own text and data).
	Anon, File int64 // RssAnon, RssFile
}

// procMemory reads pid's procMem.
func procMemory(pid int) (procMem, error) {
	var m procMem
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, err
	}
	defer f.Close()
	fields := map[string]*int64{"VmRSS": &m.RSS, "VmHWM": &m.HWM, "RssAnon": &m.Anon, "RssFile": &m.File}
	s := bufio.NewScanner(f)
	for s.Scan() {
		key, val, ok := strings.Cut(s.Text(), ":")
		dst := fields[key]
		if !ok || dst == nil {
			continue
		}
		v := strings.Fields(val) // "123456 kB"
		if len(v) != 2 || v[1] != "kB" {
			return m, fmt.Errorf("/proc/%d/status: unexpected %s line %q", pid, key, val)
		}
		kb, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil {
			return m, err
		}
		*dst = kb << 10
	}
	if m.RSS == 0 {
		return m, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
	}
	return m, s.Err()
}

// clockTicks is USER_HZ, the unit of /proc's CPU times (100 on Linux).
const clockTicks = 100

// procCPU is the CPU time (user and system) pid has used, from
// /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command (field 2) may hold spaces: the fields that follow start
	// after its closing parenthesis. utime and stime are fields 14 and 15.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command", pid, len(f))
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// machineCPU is the CPU time every CPU of the machine has spent busy (all
// but idle and iowait), from /proc/stat.
func machineCPU() (time.Duration, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var ticks int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// cpuMark is shardgate's and the machine's CPU time at one moment.
type cpuMark struct{ shardgate, machine time.Duration }

// cpuNow reads a cpuMark; errors leave the figures zero (the CPU figures
// are information, not a measurement the bench depends on).
func (b *bench) cpuNow() cpuMark {
	var m cpuMark
	if b.proc != nil {
		m.shardgate, _ = procCPU(b.proc.PID())
	}
	m.machine, _ = machineCPU()
	return m
}

// cpuSince describes the CPU shardgate and the whole machine used since m.
func (b *bench) cpuSince(m cpuMark) string {
	n := b.cpuNow()
	return fmt.Sprintf("CPU: shardgate %s, the machine %s", ms(n.shardgate-m.shardgate), ms(n.machine-m.machine))
}

// statusWritesMetric is shardgate's count of status writes.
const statusWritesMetric = "shardgate_status_writes_total"

// translations says how many translations shardgate ran between two
// scrapes of its metrics, and the time they took.
func translations(before, after map[string]float64) string {
	const name = "shardgate_translate_duration_seconds"
	n := after[name+"_count"] - before[name+"_count"]
	sum := time.Duration((after[name+"_sum"] - before[name+"_sum"]) * float64(time.Second))
	return fmt.Sprintf("%.0f translations taking %s", n, ms(sum))
}

// allocated says what shardgate allocated between two scrapes of its
// metrics (the Go collector's running total, exact at each scrape, unlike
// a heap profile's, which stops at the last collection), per sample of n,
// and how many collections ran.
func allocated(before, after map[string]float64, n int) string {
	bytes := after["go_memstats_alloc_bytes_total"] - before["go_memstats_alloc_bytes_total"]
	gcs := after["go_gc_duration_seconds_count"] - before["go_gc_duration_seconds_count"]
	return fmt.Sprintf("allocated %.1f MB, %.0f KB per sample; %.0f garbage collections", bytes/1e6, bytes/1e3/float64(max(n, 1)), gcs)
}
