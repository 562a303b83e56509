package config

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/shardgate/shardgate/internal/testwait"
)

const waitTimeout = 30 * time.Second

// startWatcher creates a Watcher on path, runs it until the test ends and
// waits until it is watching. pollInterval 0 means "effectively never", so
// tests of the fsnotify path cannot be rescued by the re-stat fallback.
func startWatcher(t *testing.T, path string, pollInterval time.Duration) *Watcher {
	t.Helper()
	w, err := NewWatcher(path, testLogger(t))
	if err != nil {
		t.Fatalf("NewWatcher: %v", err)
	}
	if pollInterval == 0 {
		pollInterval = time.Hour
	}
	w.pollInterval = pollInterval

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
		case <-time.After(waitTimeout):
			t.Error("Run did not return after cancel")
		}
	})
	select {
	case <-w.ready:
	case <-time.After(waitTimeout):
		t.Fatal("watcher not ready")
	}
	return w
}

func testLogger(t *testing.T) logr.Logger {
	return funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{Verbosity: 1})
}

// receive reads configs from ch until one satisfies ok, or fails the test at
// the deadline.
func receive(t *testing.T, ch <-chan Config, what string, ok func(Config) bool) Config {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		select {
		case c, open := <-ch:
			if !open {
				t.Fatalf("subscription closed while waiting for %s", what)
			}
			if ok(c) {
				return c
			}
		case <-deadline.C:
			t.Fatalf("timed out after %s waiting for %s", waitTimeout, what)
		}
	}
}

func blocks(want ...string) func(Config) bool {
	return func(c Config) bool { return reflect.DeepEqual(c.BlockedHostnames, want) }
}

func TestNewWatcherInitialLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")

	if _, err := NewWatcher(path, logr.Discard()); err == nil {
		t.Fatal("NewWatcher on a missing file: want an error")
	}
	writeFile(t, path, "blockedHostname: [a.example]\n")
	if _, err := NewWatcher(path, logr.Discard()); err == nil || !strings.Contains(err.Error(), `unknown key "blockedHostname"`) {
		t.Fatalf("NewWatcher on an invalid file: error = %v", err)
	}
	writeFile(t, path, "blockedHostnames: [A.example]\n")
	w, err := NewWatcher(path, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Current().BlockedHostnames; !reflect.DeepEqual(got, []string{"a.example"}) {
		t.Fatalf("Current().BlockedHostnames = %q", got)
	}
	if w.LastError() != nil || w.ReloadFailures() != 0 {
		t.Fatalf("fresh watcher: LastError = %v, ReloadFailures = %d", w.LastError(), w.ReloadFailures())
	}
	if w.NeedLeaderElection() {
		t.Fatal("NeedLeaderElection() = true; every replica needs the config")
	}
}

// (a) New content written in place reaches a subscriber.
func TestWatcherWriteInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, "blockedHostnames: [a.example]\n")
	w := startWatcher(t, path, 0)
	sub := w.Subscribe()

	writeFile(t, path, "blockedHostnames: [a.example, .B.example]\n")
	got := receive(t, sub, "the new block list", blocks(".b.example", "a.example"))
	if !reflect.DeepEqual(w.Current(), got) {
		t.Fatalf("Current() = %+v, want what subscribers got: %+v", w.Current(), got)
	}
	if w.LastError() != nil {
		t.Fatalf("LastError() = %v", w.LastError())
	}
}

// (b) An invalid file keeps the last good config; fixing it is picked up.
func TestWatcherInvalidThenFixed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, "blockedHostnames: [a.example]\n")
	w := startWatcher(t, path, 0)
	sub := w.Subscribe()
	before := w.Current()

	writeFile(t, path, "blockedHostnames: [a.example, \"a..b\"]\n")
	testwait.For(t, "LastError() to report the invalid file", func() bool { return w.LastError() != nil })
	if err := w.LastError(); !strings.Contains(err.Error(), `blockedHostnames[1]: "a..b"`) ||
		!strings.HasPrefix(err.Error(), "config "+path+": ") {
		t.Fatalf("LastError() = %v", err)
	}
	if w.ReloadFailures() == 0 {
		t.Fatal("ReloadFailures() = 0 after a failed reload")
	}
	if !reflect.DeepEqual(w.Current(), before) {
		t.Fatalf("Current() changed to %+v after an invalid file, want %+v", w.Current(), before)
	}
	select {
	case c := <-sub:
		t.Fatalf("subscriber notified of %+v after an invalid file", c)
	default:
	}

	writeFile(t, path, "blockedHostnames: [a.example, c.example]\n")
	receive(t, sub, "the fixed block list", blocks("a.example", "c.example"))
	testwait.For(t, "LastError() to clear", func() bool { return w.LastError() == nil })
	if got := w.Current().BlockedHostnames; !reflect.DeepEqual(got, []string{"a.example", "c.example"}) {
		t.Fatalf("Current().BlockedHostnames = %q", got)
	}
}

// (c) A Kubernetes ConfigMap volume update: the "..data" symlink is swapped
// atomically to a new timestamped directory.
func TestWatcherConfigMapSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	writeVersion := func(version, content string) {
		t.Helper()
		if err := os.Mkdir(filepath.Join(dir, version), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, version, "config.yaml"), content)
	}
	// swap points ..data at version the way the kubelet does: a new symlink
	// under a temporary name renamed over the old one, then the old version
	// directory removed.
	swap := func(version, old string) {
		t.Helper()
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(version, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			t.Fatal(err)
		}
	}

	writeVersion("..2026_a", "blockedHostnames: [a.example]\n")
	if err := os.Symlink("..2026_a", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.yaml")
	if err := os.Symlink(filepath.Join("..data", "config.yaml"), path); err != nil {
		t.Fatal(err)
	}

	w := startWatcher(t, path, 0)
	sub := w.Subscribe()
	if got := w.Current().BlockedHostnames; !reflect.DeepEqual(got, []string{"a.example"}) {
		t.Fatalf("initial BlockedHostnames = %q", got)
	}

	// Same length as the first version, so only the swap itself can be
	// noticed, not a size change.
	writeVersion("..2026_b", "blockedHostnames: [b.example]\n")
	swap("..2026_b", "..2026_a")
	receive(t, sub, "the block list after the first swap", blocks("b.example"))

	writeVersion("..2026_c", "blockedHostnames: [c.example, .d.example]\n")
	swap("..2026_c", "..2026_b")
	receive(t, sub, "the block list after the second swap", blocks(".d.example", "c.example"))
	if w.LastError() != nil {
		t.Fatalf("LastError() = %v", w.LastError())
	}
}

// An editor-style save: write a temporary file, rename it over the original.
func TestWatcherRenameReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	writeFile(t, path, "blockedHostnames: [a.example]\n")
	w := startWatcher(t, path, 0)
	sub := w.Subscribe()

	tmp := filepath.Join(dir, ".config.yaml.swp")
	writeFile(t, tmp, "blockedHostnames: [z.example]\n")
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	receive(t, sub, "the renamed-in block list", blocks("z.example"))
}

// A deleted file is a failed reload (last good config kept); recreating it
// is picked up.
func TestWatcherRemoveAndRecreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, "blockedHostnames: [a.example]\n")
	w := startWatcher(t, path, 0)
	sub := w.Subscribe()

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "LastError() after removal", func() bool { return w.LastError() != nil })
	if got := w.Current().BlockedHostnames; !reflect.DeepEqual(got, []string{"a.example"}) {
		t.Fatalf("Current().BlockedHostnames = %q after removal, want the last good list", got)
	}

	writeFile(t, path, "blockedHostnames: [r.example]\n")
	receive(t, sub, "the recreated block list", blocks("r.example"))
	if w.LastError() != nil {
		t.Fatalf("LastError() = %v after recreating", w.LastError())
	}
}

// A change that parses to the same Config (comments, order, case) is not
// announced.
func TestWatcherNoNotificationWithoutChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, "blockedHostnames: [a.example, b.example]\n")
	w := startWatcher(t, path, 0)
	sub := w.Subscribe()

	n := w.reloads.Load()
	writeFile(t, path, "# same list, other spelling\nblockedHostnames:\n  - B.example\n  - a.example.\ncontrollerName: \"\"\n")
	testwait.For(t, "the watcher to reload", func() bool { return w.reloads.Load() > n })
	select {
	case c := <-sub:
		t.Fatalf("subscriber notified of an unchanged config: %+v", c)
	default:
	}
	if w.LastError() != nil {
		t.Fatalf("LastError() = %v", w.LastError())
	}
}

// A subscriber that never reads does not stall the watcher, and holds only
// the latest value.
func TestWatcherSlowSubscriberLatestWins(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, "blockedHostnames: [a.example]\n")
	w := startWatcher(t, path, 0)
	slow := w.Subscribe()
	fast := w.Subscribe()

	for _, name := range []string{"b.example", "c.example", "d.example"} {
		writeFile(t, path, "blockedHostnames: ["+name+"]\n")
		receive(t, fast, name, blocks(name))
	}
	select {
	case c := <-slow:
		if !blocks("d.example")(c) {
			t.Fatalf("slow subscriber got %q, want only the latest", c.BlockedHostnames)
		}
	default:
		t.Fatal("slow subscriber has no value")
	}
	select {
	case c := <-slow:
		t.Fatalf("slow subscriber has a second value %q; the buffer must hold one", c.BlockedHostnames)
	default:
	}
}

// The periodic re-stat catches a change no event reports: here the file is a
// symlink to a file in a directory that is not watched.
func TestWatcherPollFallback(t *testing.T) {
	elsewhere := filepath.Join(t.TempDir(), "real.yaml")
	writeFile(t, elsewhere, "blockedHostnames: [a.example]\n")
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.Symlink(elsewhere, path); err != nil {
		t.Fatal(err)
	}
	w := startWatcher(t, path, 50*time.Millisecond)
	sub := w.Subscribe()

	writeFile(t, elsewhere, "blockedHostnames: [polled.example]\n")
	receive(t, sub, "the polled block list", blocks("polled.example"))
}

// Stopping Run closes subscriptions; Run cannot be started twice.
func TestWatcherRunLifecycle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, "")
	w, err := NewWatcher(path, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	sub := w.Subscribe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	<-w.ready
	if err := w.Run(context.Background()); err == nil {
		t.Fatal("second Run: want an error")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return after cancel")
	}
	assertClosed(t, sub, "subscription after Run returned")
	assertClosed(t, w.Subscribe(), "Subscribe after Run returned")
}

func assertClosed(t *testing.T, ch <-chan Config, what string) {
	t.Helper()
	select {
	case c, open := <-ch:
		if open {
			t.Fatalf("%s: got %+v, want a closed channel", what, c)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("%s: channel not closed", what)
	}
}

// A change made between NewWatcher and Run (before the watch exists, so no
// event reports it) is picked up as soon as Run starts.
func TestWatcherCatchesChangeBeforeRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, "blockedHostnames: [a.example]\n")
	w, err := NewWatcher(path, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, "blockedHostnames: [early.example]\n")
	w.pollInterval = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-w.ready:
	case <-time.After(waitTimeout):
		t.Fatal("watcher not ready")
	}
	if got := w.Current().BlockedHostnames; !reflect.DeepEqual(got, []string{"early.example"}) {
		t.Fatalf("Current().BlockedHostnames = %q once Run is watching, want [early.example]", got)
	}
}
