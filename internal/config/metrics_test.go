package config

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/shardgate/shardgate/internal/logging"
	"github.com/shardgate/shardgate/internal/testwait"
)

// syncBuffer is a bytes.Buffer safe for the logger's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// gauge reads a gauge from controller-runtime's registry, the one the
// metrics endpoint serves.
func gauge(t *testing.T, name string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		if f.GetType() != dto.MetricType_GAUGE || len(f.GetMetric()) != 1 {
			t.Fatalf("%s: type %s with %d series, want one gauge", name, f.GetType(), len(f.GetMetric()))
		}
		return f.GetMetric()[0].GetGauge().GetValue()
	}
	t.Fatalf("%s is not in controller-runtime's metrics registry", name)
	return 0
}

const (
	successful = "shardgate_config_last_reload_successful"
	successTS  = "shardgate_config_last_reload_success_timestamp_seconds"
)

// A broken live edit flips shardgate_config_last_reload_successful to 0 and
// logs one line naming the file and the error, without a stack trace (with
// the process's real logger); fixing the file sets it back to 1 and moves
// the success timestamp forward.
func TestWatcherReloadMetricsAndLog(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			var out syncBuffer
			log, err := logging.NewTo(&out, "info", format)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "config.yaml")
			writeFile(t, path, "blockedHostnames: [a.example]\n")
			start := float64(time.Now().Add(-time.Second).Unix())
			w, err := NewWatcher(path, log)
			if err != nil {
				t.Fatal(err)
			}
			if got := gauge(t, successful); got != 1 {
				t.Fatalf("%s = %v after the initial load, want 1", successful, got)
			}
			initial := gauge(t, successTS)
			if initial < start {
				t.Fatalf("%s = %v after the initial load, want at least %v", successTS, initial, start)
			}
			w.pollInterval = time.Hour // fsnotify only
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- w.Run(ctx) }()
			defer func() { cancel(); <-done }()
			<-w.ready

			writeFile(t, path, "blockedHostnames: [a.example, \"a..b\"]\n")
			testwait.For(t, successful+" to be 0", func() bool { return gauge(t, successful) == 0 })
			if got := gauge(t, successTS); got != initial {
				t.Errorf("%s moved to %v on a failed reload, want %v", successTS, got, initial)
			}
			testwait.For(t, "the failure to be logged", func() bool { return strings.Contains(out.String(), "config reload failed") })
			var line string
			for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if strings.Contains(l, "config reload failed") {
					line = l
				}
			}
			for _, want := range []string{`"file": "` + path + `"`, `blockedHostnames[1]: \"a..b\" is not a valid hostname`} {
				if format == "json" {
					want = strings.ReplaceAll(want, `": "`, `":"`)
				}
				if !strings.Contains(line, want) {
					t.Errorf("the log line does not hold %s:\n%s", want, line)
				}
			}
			for _, frame := range []string{"goroutine", ".go:", "stacktrace"} {
				if strings.Contains(out.String(), frame) {
					t.Errorf("the log holds %q, a stack trace:\n%s", frame, out.String())
				}
			}
			if n := strings.Count(out.String(), "config reload failed"); n != 1 {
				t.Errorf("%d lines say config reload failed, want 1:\n%s", n, out.String())
			}

			writeFile(t, path, "blockedHostnames: [a.example, c.example]\n")
			testwait.For(t, successful+" to be 1 again", func() bool { return gauge(t, successful) == 1 })
			if got := gauge(t, successTS); got <= initial {
				t.Errorf("%s = %v after the fix, want more than %v", successTS, got, initial)
			}
		})
	}
}

// Without a config file the configuration in force (defaults and flags)
// counts as loaded at start: the gauges do not fire a reload alert.
func TestRecordStaticLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, "xds: [broken]\n")
	if _, err := NewWatcher(path, testLogger(t)); err == nil {
		t.Fatal("NewWatcher accepted a broken file")
	}
	if got := gauge(t, successful); got != 0 {
		t.Fatalf("%s = %v after a failed initial load, want 0", successful, got)
	}
	before := gauge(t, successTS)
	RecordStaticLoad()
	if got := gauge(t, successful); got != 1 {
		t.Fatalf("%s = %v after RecordStaticLoad, want 1", successful, got)
	}
	if got := gauge(t, successTS); got <= before || got < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Fatalf("%s = %v after RecordStaticLoad (before: %v), want about now", successTS, got, before)
	}
}
