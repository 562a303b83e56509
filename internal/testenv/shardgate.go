package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/shardgate/shardgate/internal/manager"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// BuildShardgate builds cmd/shardgate once per test process and returns the
// binary's path. The Go build cache makes repeated builds cheap.
func BuildShardgate() (string, error) {
	buildOnce.Do(func() {
		root, err := Root()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "shardgate-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "shardgate")
		// Built as the image builds it (static, paths trimmed), whatever
		// the caller's environment: what tests and the bench measure is
		// that binary.
		cmd := exec.Command("go", "build", "-trimpath", "-o", buildPath, "./cmd/shardgate")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("testenv: go build ./cmd/shardgate: %w\n%s", err, out)
		}
	})
	return buildPath, buildErr
}

// StartShardgate runs the built binary's `controller` command against this
// control plane. args are appended after --kubeconfig.
func (e *Env) StartShardgate(name string, args ...string) (*Process, error) {
	bin, err := BuildShardgate()
	if err != nil {
		return nil, err
	}
	full := append([]string{"controller", "--kubeconfig=" + e.Kubeconfig}, args...)
	return e.StartProcess(name, bin, full, nil)
}

// RunManager runs the shardgate manager in this process until Stop (or
// until the returned stop function is called). The manager uses the
// harness's admin credentials.
func (e *Env) RunManager(opts manager.Options) (stop func() error) {
	opts.RestConfig = e.Config
	// Tests in other packages run at the same time: never bind fixed ports.
	if opts.XDSAddress == "" {
		opts.XDSAddress = "127.0.0.1:0"
	}
	if opts.MetricsAddress == "" {
		opts.MetricsAddress = "0"
	}
	if opts.HealthAddress == "" {
		opts.HealthAddress = "0"
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := manager.Run(ctx, opts)
		if err != nil {
			// A manager that fails to start would otherwise only show as
			// tests timing out.
			fmt.Fprintf(os.Stderr, "testenv: in-process manager failed: %v\n", err)
			opts.Log.Error(err, "in-process manager failed")
		}
		done <- err
	}()
	var once sync.Once
	var result error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case result = <-done:
			case <-time.After(30 * time.Second):
				result = fmt.Errorf("testenv: manager did not stop within 30s")
			}
		})
		return result
	}
	e.Defer(func() { _ = stop() })
	return stop
}
