package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func decodeLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var entries []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q is not one JSON object: %v", line, err)
		}
		entries = append(entries, m)
	}
	return entries
}

// keys returns m's keys, sorted and joined by commas.
func keys(m map[string]any) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), ",")
}

// TestJSONLineFields pins what a JSON line carries: level, ts (RFC 3339 in
// seconds), logger (the joined names, only when named), msg, the key-value
// pairs, error for an error; no caller, no stack trace.
func TestJSONLineFields(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewTo(&buf, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	log.WithName("xds").WithName("server").WithValues("gateway", "shard-a").Info("config reloaded", "changedKeys", []string{"xds"}, "pod", pod)
	log.Error(errors.New("connection refused"), "reconcile failed", "route", "ns/r")
	log.V(1).Info("not at info")

	entries := decodeLines(t, buf.String())
	if len(entries) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(entries), buf.String())
	}
	info, failed := entries[0], entries[1]
	for _, c := range []struct {
		entry map[string]any
		keys  string
	}{
		{info, "changedKeys,gateway,level,logger,msg,pod,ts"},
		{failed, "error,level,msg,route,ts"},
	} {
		if got := keys(c.entry); got != c.keys {
			t.Errorf("line %v: keys %s, want %s", c.entry, got, c.keys)
		}
		ts, _ := c.entry["ts"].(string)
		if _, err := time.Parse(time.RFC3339, ts); err != nil || strings.Contains(ts, ".") {
			t.Errorf("ts %q: want RFC 3339 in whole seconds", ts)
		}
	}
	for k, want := range map[string]any{"level": "info", "logger": "xds.server", "msg": "config reloaded", "gateway": "shard-a"} {
		if info[k] != want {
			t.Errorf("info line %s = %v, want %v", k, info[k], want)
		}
	}
	if got := fmt.Sprint(info["pod"]); got != "map[name:p namespace:ns]" {
		t.Errorf("a Kubernetes object is logged as %s, want its namespace and name", got)
	}
	for k, want := range map[string]any{"level": "error", "msg": "reconcile failed", "error": "connection refused"} {
		if failed[k] != want {
			t.Errorf("error line %s = %v, want %v", k, failed[k], want)
		}
	}
}

// TestTextLine pins the text format: tab-separated ISO 8601 time in
// milliseconds, level, logger name, message, then the pairs as JSON.
func TestTextLine(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewTo(&buf, "debug", "text")
	if err != nil {
		t.Fatal(err)
	}
	log.WithName("xds").V(1).Info("snapshot set", "version", 3)
	log.Error(errors.New("boom"), "reconcile failed")
	want := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\tDEBUG\txds\tsnapshot set\t\{"version": 3\}\n` +
		`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\tERROR\treconcile failed\t\{"error": "boom"\}\n$`)
	if !want.MatchString(buf.String()) {
		t.Fatalf("text lines:\n%s\nwant them to match %s", buf.String(), want)
	}
}

// TestNewSamplesRepeatedMessages: the process logger samples at info and
// debug, not from verbosity 2 on (as controller-runtime's does not).
func TestNewSamplesRepeatedMessages(t *testing.T) {
	const n = 1000 // spread over ten ticks only if logging them takes 9 s
	for _, c := range []struct {
		level, format string
		sampled       bool
	}{
		{"info", "json", true},
		{"debug", "json", true},
		{"info", "text", true},
		{"2", "json", false},
	} {
		var buf bytes.Buffer
		log, err := NewTo(&buf, c.level, c.format)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			log.Info("flood", "i", i)
		}
		got := strings.Count(buf.String(), "\n")
		switch {
		case c.sampled && (got < sampleFirst || got >= n):
			t.Errorf("--log-level=%s --log-format=%s: %d of %d repeated entries written, want the first %d and some dropped", c.level, c.format, got, n, sampleFirst)
		case !c.sampled && got != n:
			t.Errorf("--log-level=%s: %d of %d repeated entries written, want all", c.level, got, n)
		}
	}
}

func TestNewRejectsBadLevelAndFormat(t *testing.T) {
	var buf bytes.Buffer
	for _, c := range [][2]string{{"loud", "json"}, {"11", "json"}, {"info", "xml"}} {
		if _, err := NewTo(&buf, c[0], c[1]); err == nil {
			t.Errorf("NewTo(%q, %q): no error", c[0], c[1])
		}
	}
}
