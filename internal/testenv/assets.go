package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// assetFiles are what hack/envtest-assets.sh must have produced.
var assetFiles = []string{
	"bin/k8s/kube-apiserver",
	"bin/k8s/etcd",
	"bin/k8s/kube-controller-manager",
	"bin/k8s/kube-scheduler",
	"bin/k8s/kwok",
	"bin/k8s/metallb-controller",
	"bin/crds/gateway-api/experimental",
	"bin/crds/metallb",
	"bin/kwok-stages",
}

// certManagerAssets are what Options.CertManager needs on top.
var certManagerAssets = []string{
	"bin/k8s/pebble",
	"bin/k8s/cert-manager-controller",
	"bin/crds/cert-manager",
}

// MissingAssets lists the assets that are not built under root.
func MissingAssets(root string) []string {
	return missing(root, assetFiles)
}

func missing(root string, files []string) []string {
	var out []string
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			out = append(out, f)
		}
	}
	return out
}

// MissingCertManagerAssets lists the assets of Options.CertManager that
// are not built under root.
func MissingCertManagerAssets(root string) []string {
	return missing(root, certManagerAssets)
}

// RequireCertManager is Require for a test that starts Pebble and
// cert-manager's controller (Options.CertManager).
func RequireCertManager(t testing.TB) {
	t.Helper()
	Require(t)
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	skipOrFail(t, MissingCertManagerAssets(root))
}

// Require skips t when the assets are missing and CI is unset. Under CI a
// missing asset is a failure: CI must never pass by skipping.
func Require(t testing.TB) {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	skipOrFail(t, MissingAssets(root))
}

func skipOrFail(t testing.TB, missing []string) {
	t.Helper()
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("test control plane assets missing (%s): run `make envtest-assets`", strings.Join(missing, ", "))
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (CI is set, so this is a failure, not a skip)")
	}
	t.Skip(msg)
}

// Root finds the repository root: the nearest parent with our go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isOurModule(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: repository root (go.mod of github.com/shardgate/shardgate) not found")
		}
		dir = parent
	}
}

func isOurModule(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	return s.Scan() && strings.TrimSpace(s.Text()) == "module github.com/shardgate/shardgate"
}

func killPID(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
