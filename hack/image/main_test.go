package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/shardgate/shardgate/internal/image"
)

// TestPrintedDigest: the digest printed after the reference is the sha256
// of the exact image index bytes the OCI layout and the OCI archive hold
// (what a registry shows once they are pushed: an in-process registry
// checks it), not a single platform's
// manifest or config digest; each platform's docker-archive is written.
func TestPrintedDigest(t *testing.T) {
	dir := t.TempDir()
	var f flags
	for _, arch := range []string{"amd64", "arm64"} {
		bin := filepath.Join(dir, "shardgate-linux-"+arch)
		if err := os.WriteFile(bin, []byte("binary for "+arch), 0o755); err != nil {
			t.Fatal(err)
		}
		f.platforms = append(f.platforms, image.Platform{OS: "linux", Arch: arch, Binary: bin})
		f.dockerArchives = append(f.dockerArchives, dockerArchive{platform: image.Platform{OS: "linux", Arch: arch}, path: filepath.Join(dir, "shardgate-"+arch+".tar")})
	}
	f.o.Version, f.epoch = "v9.8.7", "1700000000"
	f.ref = "registry.example/shardgate:v9.8.7"
	f.layout, f.archive = filepath.Join(dir, "oci"), filepath.Join(dir, "shardgate-oci.tar")
	var out bytes.Buffer
	if err := run(&out, f); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(out.String(), "\n")
	printed, ok := strings.CutPrefix(first, f.ref+"@")
	if !ok {
		t.Fatalf("first line %q is not %s@<digest>:\n%s", first, f.ref, out.String())
	}

	// The layout: index.json names one blob, the index; its bytes hash to
	// the printed digest.
	indexJSON, err := os.ReadFile(filepath.Join(f.layout, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	fromLayout := indexDigest(t, indexJSON, func(hex string) ([]byte, error) {
		return os.ReadFile(filepath.Join(f.layout, "blobs", "sha256", hex))
	})
	if fromLayout != printed {
		t.Errorf("printed %s, the layout's image index bytes hash to %s", printed, fromLayout)
	}

	// Pushed byte for byte, as `crane push <layout> REF` and `skopeo copy
	// --all` push it, to a registry, REF resolves to the printed digest.
	if got := pushLayout(t, f.layout, "v9.8.7"); got != printed {
		t.Errorf("after the push the registry shows %s for the tag; make image printed %s", got, printed)
	}

	// The OCI archive: the same.
	files := map[string][]byte{}
	data, err := os.ReadFile(f.archive)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name], _ = io.ReadAll(tr)
	}
	fromArchive := indexDigest(t, files["index.json"], func(hex string) ([]byte, error) {
		b, ok := files["blobs/sha256/"+hex]
		if !ok {
			return nil, os.ErrNotExist
		}
		return b, nil
	})
	if fromArchive != printed {
		t.Errorf("printed %s, the OCI archive's image index bytes hash to %s", printed, fromArchive)
	}

	// Each docker-archive holds its platform's image, tagged ref, and the
	// report names that image's manifest and config digests.
	for _, a := range f.dockerArchives {
		img, err := tarball.ImageFromPath(a.path, nil)
		if err != nil {
			t.Fatalf("%s: %v", a.path, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != a.platform.Arch {
			t.Errorf("%s holds a %s image", a.path, cf.Architecture)
		}
		config, _ := img.ConfigName()
		if !strings.Contains(out.String(), a.platform.String()) || !strings.Contains(out.String(), config.String()) {
			t.Errorf("the report does not name %s and its config %s:\n%s", a.platform, config, out.String())
		}
	}
}

// indexDigest checks index.json has one entry, reads its blob and returns
// "sha256:" + the sha256 of those bytes, failing unless the entry's
// digest says the same.
func indexDigest(t *testing.T, indexJSON []byte, read func(hex string) ([]byte, error)) string {
	t.Helper()
	var top v1.IndexManifest
	if err := json.Unmarshal(indexJSON, &top); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if len(top.Manifests) != 1 {
		t.Fatalf("index.json has %d entries, want 1", len(top.Manifests))
	}
	b, err := read(top.Manifests[0].Digest.Hex)
	if err != nil {
		t.Fatalf("the image index blob: %v", err)
	}
	var idx v1.IndexManifest
	if err := json.Unmarshal(b, &idx); err != nil || len(idx.Manifests) != 2 {
		t.Fatalf("the image index blob: %v, %d manifests, want 2", err, len(idx.Manifests))
	}
	sum := sha256.Sum256(b)
	got := "sha256:" + hex.EncodeToString(sum[:])
	if got != top.Manifests[0].Digest.String() {
		t.Errorf("index.json says %s, the blob hashes to %s", top.Manifests[0].Digest, got)
	}
	return got
}

// pushLayout pushes the image index of an OCI layout to an in-process
// registry over the distribution API, every blob, then each image manifest
// by digest, then the index as tag, and returns the digest the registry
// gives for tag (its Docker-Content-Digest).
func pushLayout(t *testing.T, dir, tag string) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	do := func(method, path, contentType string, body []byte, want int) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %s %s", method, path, resp.Status, msg)
		}
		return resp
	}
	blob := func(d v1.Hash) []byte {
		b, err := os.ReadFile(filepath.Join(dir, "blobs", d.Algorithm, d.Hex))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	entries, err := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		d := v1.Hash{Algorithm: "sha256", Hex: e.Name()}
		do(http.MethodPost, "/v2/shardgate/blobs/uploads/?digest="+d.String(), "application/octet-stream", blob(d), http.StatusCreated)
	}
	var top, index v1.IndexManifest
	indexJSON, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(indexJSON, &top); err != nil || len(top.Manifests) != 1 {
		t.Fatalf("index.json: %v, %d entries", err, len(top.Manifests))
	}
	raw := blob(top.Manifests[0].Digest)
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatal(err)
	}
	for _, m := range index.Manifests {
		do(http.MethodPut, "/v2/shardgate/manifests/"+m.Digest.String(), string(m.MediaType), blob(m.Digest), http.StatusCreated)
	}
	do(http.MethodPut, "/v2/shardgate/manifests/"+tag, string(top.Manifests[0].MediaType), raw, http.StatusCreated)
	return do(http.MethodHead, "/v2/shardgate/manifests/"+tag, "", nil, http.StatusOK).Header.Get("Docker-Content-Digest")
}
