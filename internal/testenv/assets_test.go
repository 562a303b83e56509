package testenv

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The cert-manager assets are checked apart from the control plane's: a
// tree without them still runs every other test.
func TestMissingCertManagerAssets(t *testing.T) {
	root := t.TempDir()
	if got := MissingCertManagerAssets(root); !slices.Equal(got, certManagerAssets) {
		t.Fatalf("empty root: missing %v, want %v", got, certManagerAssets)
	}
	for _, f := range []string{"bin/k8s/pebble", "bin/crds/cert-manager"} {
		if err := os.MkdirAll(filepath.Join(root, f), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := MissingCertManagerAssets(root), []string{"bin/k8s/cert-manager-controller"}; !slices.Equal(got, want) {
		t.Fatalf("missing %v, want %v", got, want)
	}
	if got := MissingAssets(root); slices.Contains(got, "bin/k8s/pebble") || len(got) != len(assetFiles) {
		t.Fatalf("MissingAssets = %v: the control plane's list must not include cert-manager's assets", got)
	}
}
