/*
Copyright The shardgate Authors.
*/

package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A component that crashes at start-up is started again until it stays up,
// and nothing is started again once Stop has begun.
func TestStartRestartingStartsACrashedProcessAgain(t *testing.T) {
	dir := t.TempDir()
	e := &Env{Dir: dir}
	t.Cleanup(func() { _ = e.Stop() })
	runs := filepath.Join(dir, "runs")
	// Each run appends a line; the first two exit with status 2 as a Go
	// fatal error does, the third stays up.
	script := `echo run >> "$1"; n=$(wc -l < "$1"); if [ "$n" -le 2 ]; then echo "fatal error: concurrent map writes"; exit 2; fi; exec sleep 300`
	if err := e.startRestarting("crashy", "/bin/sh", []string{"-c", script, "sh", runs}, nil, 5); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		data, _ := os.ReadFile(runs)
		return strings.Count(string(data), "run\n")
	}
	// Three runs, the third still up: it is the one that stays.
	if err := e.waitFor(context.Background(), time.Minute, "a third run that stays up", func(context.Context) (bool, error) {
		procs := e.Processes()
		if n := len(procs); n > 3 {
			return false, fmt.Errorf("%d processes started, want 3", n)
		} else if n < 3 || count() < 3 {
			return false, nil
		}
		done, _ := procs[2].Exited()
		return !done, nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := len(e.Processes()); n != 3 {
		t.Fatalf("%d processes started, want 3", n)
	}
	live := e.Processes()[2]
	for i, p := range e.Processes()[:2] {
		done, err := p.Exited()
		if !done || err == nil || !strings.Contains(err.Error(), "exit status 2") {
			t.Errorf("run %d: exited %v (%v), want exit status 2", i+1, done, err)
		}
	}
	if log := live.Tail(10); !strings.Contains(log, "concurrent map writes") {
		t.Errorf("the log lost the crashed runs' output:\n%s", log)
	}

	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	if done, _ := live.Exited(); !done {
		t.Fatalf("pid %d still runs after Stop", live.PID())
	}
	// Stop has waited for the supervisor to return.
	if n := len(e.Processes()); n != 3 {
		t.Errorf("%d processes after Stop, want 3", n)
	}
	if n := count(); n != 3 {
		t.Errorf("the process ran %d times, want 3 (started again after Stop)", n)
	}
}

// A component that never stays up is started at most restarts times more.
func TestStartRestartingGivesUp(t *testing.T) {
	dir := t.TempDir()
	e := &Env{Dir: dir}
	t.Cleanup(func() { _ = e.Stop() })
	runs := filepath.Join(dir, "runs")
	if err := e.startRestarting("broken", "/bin/sh", []string{"-c", `echo run >> "$1"; exit 3`, "sh", runs}, nil, 2); err != nil {
		t.Fatal(err)
	}
	if err := e.waitFor(context.Background(), time.Minute, "three runs, all exited", func(context.Context) (bool, error) {
		procs := e.Processes()
		if len(procs) != 3 {
			return false, nil
		}
		for _, p := range procs {
			if done, _ := p.Exited(); !done {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(e.Processes()); n != 3 {
		t.Errorf("%d runs, want 3: one start and two restarts", n)
	}
	data, _ := os.ReadFile(runs)
	if n := strings.Count(string(data), "run\n"); n != 3 {
		t.Errorf("the process ran %d times, want 3", n)
	}
}
