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

// MissingAssets lists the assets that are not built under root.
func MissingAssets(root string) []string {
	var missing []string
	for _, f := range assetFiles {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			missing = append(missing, f)
		}
	}
	return missing
}

// Require skips t when the assets are missing and CI is unset. Under CI a
// missing asset is a failure: CI must never pass by skipping.
func Require(t testing.TB) {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	missing := MissingAssets(root)
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
