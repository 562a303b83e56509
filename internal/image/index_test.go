package image_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/image"
)

// fakeBinaries writes one distinct file per platform, standing in for the
// binaries (the layers must carry each platform's own file).
func fakeBinaries(t *testing.T, arches ...string) []image.Platform {
	t.Helper()
	dir := t.TempDir()
	var ps []image.Platform
	for _, a := range arches {
		p := filepath.Join(dir, "shardgate-"+a)
		if err := os.WriteFile(p, []byte("\x7fELF binary for "+a), 0o755); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, image.Platform{OS: "linux", Arch: a, Binary: p})
	}
	return ps
}

// TestBuildIndex: two platforms give an OCI image index of two image
// manifests, each with its platform, its config's os/architecture and a
// layer holding that platform's binary; the layout on disk holds every
// blob under the sha256 of its bytes, and the index digest is the sha256
// of the index bytes stored there.
func TestBuildIndex(t *testing.T) {
	o := image.Options{Version: "v1.2.3", Revision: strings.Repeat("a", 40), Created: time.Unix(1700000000, 0).UTC()}
	platforms := fakeBinaries(t, "amd64", "arm64")
	idx, err := image.BuildIndex(o, platforms)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	const ref = "registry.example/shardgate:v1.2.3"
	dir := filepath.Join(t.TempDir(), "oci")
	if err := image.WriteLayout(dir, ref, idx); err != nil {
		t.Fatal(err)
	}
	if got := checkLayout(t, os.DirFS(dir), ref, o, platforms); got != digest.String() {
		t.Errorf("layout entry %s, the built index's digest %s", got, digest)
	}

	// The OCI archive: the same layout in a tar, the same on a second write.
	archive := filepath.Join(t.TempDir(), "shardgate-oci.tar")
	if err := image.WriteOCIArchive(archive, ref, idx, o.Created); err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	if got := checkLayout(t, untar(t, first), ref, o, platforms); got != digest.String() {
		t.Errorf("OCI archive entry %s, the built index's digest %s", got, digest)
	}
	again, err := image.BuildIndex(o, platforms)
	if err != nil {
		t.Fatal(err)
	}
	if err := image.WriteOCIArchive(archive, ref, again, o.Created); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(archive)
	if !bytes.Equal(first, second) {
		t.Error("two OCI archives of the same input differ")
	}

	// One platform's image alone, as the docker-archive gets it.
	arm, err := image.PlatformImage(idx, "linux", "arm64")
	if err != nil {
		t.Fatal(err)
	}
	if cf, _ := arm.ConfigFile(); cf.Architecture != "arm64" {
		t.Errorf("PlatformImage(linux/arm64) has architecture %q", cf.Architecture)
	}
	if _, err := image.PlatformImage(idx, "linux", "s390x"); err == nil {
		t.Error("PlatformImage found a linux/s390x image in an amd64+arm64 index")
	}
}

func TestBuildIndexRefusesBadPlatforms(t *testing.T) {
	o := image.Options{Version: "v1.2.3"}
	ps := fakeBinaries(t, "amd64")
	for name, in := range map[string][]image.Platform{
		"none":         nil,
		"twice":        {ps[0], ps[0]},
		"no arch":      {{OS: "linux", Binary: ps[0].Binary}},
		"missing file": {{OS: "linux", Arch: "arm64", Binary: filepath.Join(t.TempDir(), "absent")}},
	} {
		if _, err := image.BuildIndex(o, in); err == nil {
			t.Errorf("%s: BuildIndex(%v) built an index", name, in)
		}
	}
	for _, s := range []string{"linux/amd64", "linux=bin", "/amd64=bin", "linux/=bin", "linux/amd64="} {
		if p, err := image.ParsePlatform(s); err == nil {
			t.Errorf("ParsePlatform(%q) = %+v, want an error", s, p)
		}
	}
	if p, err := image.ParsePlatform("linux/arm64=bin/x"); err != nil || p != (image.Platform{OS: "linux", Arch: "arm64", Binary: "bin/x"}) {
		t.Errorf("ParsePlatform(linux/arm64=bin/x) = %+v, %v", p, err)
	}
}

// TestExposedPorts: the image exposes every port the controller listens on
// by default, the Akash API's included.
func TestExposedPorts(t *testing.T) {
	ps := fakeBinaries(t, "amd64")
	img, err := image.Build(image.Options{Binary: ps[0].Binary, OS: "linux", Arch: "amd64", Version: "v1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for p := range cf.Config.ExposedPorts {
		got = append(got, p)
	}
	slices.Sort(got)
	want := []string{"18000/tcp", "8080/tcp", "8081/tcp", "8086/tcp"}
	if !slices.Equal(got, want) {
		t.Errorf("ExposedPorts = %v, want %v", got, want)
	}
	for _, addr := range []string{config.DefaultMetricsAddress, config.DefaultHealthAddress, config.DefaultXDSAddress, config.DefaultAkashAPIAddress} {
		if !slices.Contains(got, strings.TrimPrefix(addr, ":")+"/tcp") {
			t.Errorf("the default listen address %s is not exposed: %v", addr, got)
		}
	}
}

// checkLayout reads an OCI image layout from fsys byte by byte, checks it
// holds one image index named ref with one image per platform, every blob
// stored under the sha256 of its bytes with its descriptor's size, and
// returns the index's digest.
func checkLayout(t *testing.T, fsys fs.FS, ref string, o image.Options, platforms []image.Platform) string {
	t.Helper()
	var top v1.IndexManifest
	readJSON(t, fsys, "index.json", &top)
	if len(top.Manifests) != 1 {
		t.Fatalf("index.json holds %d entries, want 1 (the image index)", len(top.Manifests))
	}
	entry := top.Manifests[0]
	if entry.MediaType != types.OCIImageIndex {
		t.Errorf("index.json entry is a %s, want %s", entry.MediaType, types.OCIImageIndex)
	}
	for _, k := range []string{image.RefAnnotation, image.ContainerdNameAnnotation} {
		if entry.Annotations[k] != ref {
			t.Errorf("index.json entry annotation %s = %q, want %q", k, entry.Annotations[k], ref)
		}
	}
	var index v1.IndexManifest
	decode(t, blob(t, fsys, entry), &index)
	if index.MediaType != types.OCIImageIndex || index.SchemaVersion != 2 {
		t.Errorf("image index: media type %s, schema %d", index.MediaType, index.SchemaVersion)
	}
	if v := index.Annotations["org.opencontainers.image.version"]; v != o.Version {
		t.Errorf("image index annotation version = %q, want %q", v, o.Version)
	}
	if r := index.Annotations["org.opencontainers.image.revision"]; r != o.Revision {
		t.Errorf("image index annotation revision = %q, want %q", r, o.Revision)
	}
	if len(index.Manifests) != len(platforms) {
		t.Fatalf("image index holds %d manifests, want %d", len(index.Manifests), len(platforms))
	}
	for i, p := range platforms {
		d := index.Manifests[i]
		if d.Platform == nil || d.Platform.OS != p.OS || d.Platform.Architecture != p.Arch {
			t.Errorf("manifest %d platform = %+v, want %s", i, d.Platform, p)
		}
		if d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("manifest %d media type %s", i, d.MediaType)
		}
		var m v1.Manifest
		decode(t, blob(t, fsys, d), &m)
		var cf v1.ConfigFile
		decode(t, blob(t, fsys, m.Config), &cf)
		if cf.OS != p.OS || cf.Architecture != p.Arch {
			t.Errorf("%s config says %s/%s", p, cf.OS, cf.Architecture)
		}
		if cf.Config.Labels["org.opencontainers.image.version"] != o.Version {
			t.Errorf("%s label version = %q, want %q", p, cf.Config.Labels["org.opencontainers.image.version"], o.Version)
		}
		if len(m.Layers) != 1 || len(cf.RootFS.DiffIDs) != 1 {
			t.Fatalf("%s: %d layers, %d diff IDs; want 1", p, len(m.Layers), len(cf.RootFS.DiffIDs))
		}
		want, _ := os.ReadFile(p.Binary)
		if got := layerFile(t, blob(t, fsys, m.Layers[0]), cf.RootFS.DiffIDs[0], "shardgate"); !bytes.Equal(got, want) {
			t.Errorf("%s layer's /shardgate is %q, want that platform's binary %q", p, got, want)
		}
	}
	return entry.Digest.String()
}

func readJSON(t *testing.T, fsys fs.FS, name string, into any) {
	t.Helper()
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func decode(t *testing.T, data []byte, into any) {
	t.Helper()
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("%T: %v\n%s", into, err, data)
	}
}

// blob is the content of d's blob, checked against d's digest and size.
func blob(t *testing.T, fsys fs.FS, d v1.Descriptor) []byte {
	t.Helper()
	if d.Digest.Algorithm != "sha256" {
		t.Fatalf("descriptor %v: algorithm %s", d.Digest, d.Digest.Algorithm)
	}
	data, err := fs.ReadFile(fsys, "blobs/sha256/"+d.Digest.Hex)
	if err != nil {
		t.Fatalf("blob %s (%s) missing: %v", d.Digest, d.MediaType, err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != d.Digest.Hex {
		t.Errorf("blob %s has sha256 %x", d.Digest, sum)
	}
	if int64(len(data)) != d.Size {
		t.Errorf("blob %s has %d bytes, its descriptor says %d", d.Digest, len(data), d.Size)
	}
	return data
}

// layerFile is a file of a gzipped layer whose uncompressed sha256 must be
// diffID.
func layerFile(t *testing.T, layer []byte, diffID v1.Hash, name string) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		t.Fatalf("layer: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != diffID.Hex {
		t.Errorf("layer's uncompressed sha256 %x, the config's diff ID %s", sum, diffID)
	}
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("no %s in the layer", name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == name {
			data, _ := io.ReadAll(tr)
			return data
		}
	}
}

// untar reads a tar into an in-memory file system.
func untar(t *testing.T, data []byte) fs.FS {
	t.Helper()
	m := fstest.MapFS{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return m
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			m[h.Name] = &fstest.MapFile{Data: b, Mode: 0o644}
		}
	}
}
