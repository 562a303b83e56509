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

// scrape reads a Prometheus text endpoint and sums each metric's samples
// over their labels.
func scrape(ctx context.Context, url string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
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
