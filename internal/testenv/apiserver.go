package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// StopAPIServer kills kube-apiserver with SIGKILL: an outage, not a drain
// (a graceful stop waits for open watches and takes up to envtest's stop
// timeout). etcd and everything else keep running. StartAPIServer brings it
// back on the same address with the same certificates, so Config, Client
// and Kubeconfig keep working.
func (e *Env) StopAPIServer() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.env == nil || e.env.ControlPlane.APIServer == nil {
		return errors.New("testenv: no apiserver")
	}
	as := e.env.ControlPlane.APIServer
	pids := apiserverPIDs(as.CertDir)
	if len(pids) == 0 {
		return fmt.Errorf("testenv: no kube-apiserver process for %s", as.CertDir)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("testenv: kill kube-apiserver %d: %w", pid, err)
		}
	}
	// envtest reaps its child; Stop then finds it exited and only resets
	// its state, so that Start can run it again.
	deadline := time.Now().Add(10 * time.Second)
	for len(apiserverPIDs(as.CertDir)) > 0 {
		if time.Now().After(deadline) {
			return errors.New("testenv: kube-apiserver still running 10s after SIGKILL")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := as.Stop(); err != nil {
		return fmt.Errorf("testenv: stop kube-apiserver: %w", err)
	}
	return nil
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the
// same secure port (envtest keeps SecureServing.Port once chosen), with the
// same serving certificate and client CA (kept in its CertDir and in
// memory), against the same etcd. It returns once /healthz answers.
//
// The port was free while the apiserver was down; another test process
// could in principle take it in between, in which case Start fails.
func (e *Env) StartAPIServer(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.env == nil || e.env.ControlPlane.APIServer == nil {
		return errors.New("testenv: no apiserver")
	}
	as := e.env.ControlPlane.APIServer
	port := as.SecureServing.Port
	if err := as.Start(); err != nil {
		return fmt.Errorf("testenv: restart kube-apiserver: %w", err)
	}
	if as.SecureServing.Port != port {
		return fmt.Errorf("testenv: kube-apiserver came back on port %s, not %s", as.SecureServing.Port, port)
	}
	return ctx.Err()
}

// RestartAPIServer stops kube-apiserver (see StopAPIServer), leaves it down
// for downtime, and starts it again on the same port with the same data.
func (e *Env) RestartAPIServer(ctx context.Context, downtime time.Duration) error {
	if err := e.StopAPIServer(); err != nil {
		return err
	}
	select {
	case <-time.After(downtime):
	case <-ctx.Done():
	}
	return e.StartAPIServer(ctx)
}

// apiserverPIDs lists the kube-apiserver processes whose arguments name
// certDir.
func apiserverPIDs(certDir string) []int {
	var out []int
	for _, pid := range processesMentioning(certDir) {
		cmdline, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "cmdline"))
		if err != nil {
			continue
		}
		argv0, _, _ := strings.Cut(string(cmdline), "\x00")
		if filepath.Base(argv0) != "kube-apiserver" {
			continue
		}
		// A reaped-but-listed or zombie process is gone for our purposes.
		stat, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "stat"))
		if err == nil {
			if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] == "Z" {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}
