package image_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Masterminds/semver/v3"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/internal/image"
	"github.com/shardgate/shardgate/internal/testenv"
)

// TestMakeImage runs `make image` into a scratch bin directory, loads the
// OCI layout and the tarball it wrote, and checks what a cluster will run:
// the entrypoint, the non-root user, the labels, the tag (the chart's
// appVersion) and a static binary that starts on its own.
func TestMakeImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the controller binary")
	}
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	appVersion, repository := chartImage(t, root)
	bin := t.TempDir()
	cmd := exec.Command("make", "--no-print-directory", "-C", root, "image", "BIN="+bin, "IMAGE_ARCH="+runtime.GOARCH)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	ref := repository + ":" + appVersion
	if !strings.Contains(string(out), ref+"@sha256:") {
		t.Errorf("make image did not print %s@<digest>:\n%s", ref, out)
	}

	// The OCI layout: one image, named by its reference.
	idx, err := layout.ImageIndexFromPath(filepath.Join(bin, "image", "oci"))
	if err != nil {
		t.Fatalf("load OCI layout: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("OCI layout holds %d manifests, want 1: %+v", len(im.Manifests), im.Manifests)
	}
	desc := im.Manifests[0]
	if got := desc.Annotations[image.RefAnnotation]; got != ref {
		t.Errorf("layout reference = %q, want %q", got, ref)
	}
	if desc.MediaType != types.OCIManifestSchema1 {
		t.Errorf("manifest media type = %s, want %s", desc.MediaType, types.OCIManifestSchema1)
	}
	fromLayout, err := idx.Image(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	checkImage(t, fromLayout, appVersion)

	// The tarball holds the same image under the same tag.
	tarPath := filepath.Join(bin, "image", "shardgate.tar")
	fromTar, err := tarball.ImageFromPath(tarPath, nil)
	if err != nil {
		t.Fatalf("load tarball: %v", err)
	}
	manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(tarPath) })
	if err != nil {
		t.Fatal(err)
	}
	if len(manifest) != 1 || !slices.Contains(manifest[0].RepoTags, ref) {
		t.Errorf("tarball tags = %+v, want [%s]", manifest, ref)
	}
	a, _ := fromLayout.ConfigName()
	b, _ := fromTar.ConfigName()
	if a != b {
		t.Errorf("the layout's config %s differs from the tarball's %s", a, b)
	}

	// The binary in the image is static and runs alone.
	shardgate := extract(t, fromLayout, "shardgate")
	f, err := elf.NewFile(bytes.NewReader(shardgate))
	if err != nil {
		t.Fatalf("/shardgate is not an ELF binary: %v", err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("/shardgate is dynamically linked (PT_INTERP): the image has no libc")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("/shardgate needs shared libraries %v", libs)
	}
	exe := filepath.Join(t.TempDir(), "shardgate")
	if err := os.WriteFile(exe, shardgate, 0o755); err != nil {
		t.Fatal(err)
	}
	vout, err := exec.Command(exe, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(vout), "shardgate ") {
		t.Errorf("/shardgate version: %v: %q", err, vout)
	}
	if passwd := string(extract(t, fromLayout, "etc/passwd")); !strings.Contains(passwd, "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot user 65532:\n%s", passwd)
	}
}

func checkImage(t *testing.T, img v1.Image, appVersion string) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if !slices.Equal(c.Entrypoint, []string{"/shardgate"}) {
		t.Errorf("entrypoint = %q, want [/shardgate]", c.Entrypoint)
	}
	if !slices.Equal(c.Cmd, []string{"controller"}) {
		t.Errorf("cmd = %q, want [controller]", c.Cmd)
	}
	if c.User != "65532:65532" {
		t.Errorf("user = %q, want 65532:65532 (non-root)", c.User)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform = %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	want := map[string]string{
		"org.opencontainers.image.title":    "shardgate",
		"org.opencontainers.image.source":   "https://github.com/shardgate/shardgate",
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.version":  appVersion,
	}
	for k, v := range want {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q (labels: %v)", k, c.Labels[k], v, c.Labels)
		}
	}
	if rev := c.Labels["org.opencontainers.image.revision"]; len(rev) != 40 {
		t.Errorf("label org.opencontainers.image.revision = %q, want the commit", rev)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Errorf("layers: %d, %v; want one (an empty base plus the binary)", len(layers), err)
	}
}

// extract returns a file of the image's file system.
func extract(t *testing.T, img v1.Image, path string) []byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(bufio.NewReader(rc))
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			seen = append(seen, h.Name)
			if h.Name == path {
				data, err := io.ReadAll(tr)
				rc.Close()
				if err != nil {
					t.Fatal(err)
				}
				return data
			}
		}
		rc.Close()
	}
	t.Fatalf("no %s in the image; files: %v", path, seen)
	return nil
}

// chartImage reads the chart's appVersion, which must be a release version
// (the image tag), and its default image repository.
func chartImage(t *testing.T, root string) (appVersion, repository string) {
	t.Helper()
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	var values struct {
		Image struct {
			Repository string `json:"repository"`
		} `json:"image"`
	}
	readYAML(t, filepath.Join(root, "charts", "shardgate", "Chart.yaml"), &chart)
	readYAML(t, filepath.Join(root, "charts", "shardgate", "values.yaml"), &values)
	if _, err := semver.StrictNewVersion(strings.TrimPrefix(chart.AppVersion, "v")); err != nil || !strings.HasPrefix(chart.AppVersion, "v") {
		t.Fatalf("Chart.yaml appVersion %q is not a release version vMAJOR.MINOR.PATCH: %v", chart.AppVersion, err)
	}
	return chart.AppVersion, values.Image.Repository
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestBuildReproducible: the same binary and options give the same digest.
func TestBuildReproducible(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "shardgate")
	if err := os.WriteFile(bin, []byte("\x7fELF not really"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := image.Options{Binary: bin, OS: "linux", Arch: "arm64", Version: "v1.2.3", Created: time.Unix(1700000000, 0).UTC()}
	a, err := image.Build(o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := image.Build(o)
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Errorf("two builds of the same input: %s and %s", da, db)
	}
	cf, _ := a.ConfigFile()
	if cf.Architecture != "arm64" || !cf.Created.Time.Equal(o.Created) {
		t.Errorf("config: arch %s created %s", cf.Architecture, cf.Created)
	}
	if _, err := image.Build(image.Options{Binary: bin, OS: "linux", Arch: "amd64"}); err == nil {
		t.Error("an image without a version was built")
	}
}

// TestDockerfileAgrees: the Dockerfile builds the image `make image` builds
// (same user, entrypoint, command, license label, static build).
func TestDockerfileAgrees(t *testing.T) {
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(data)
	for _, want := range []string{
		"\nUSER " + image.User + "\n",
		"\nENTRYPOINT [\"" + image.Entrypoint + "\"]\n",
		"\nCMD [\"controller\"]\n",
		"CGO_ENABLED=0",
		`org.opencontainers.image.licenses="Apache-2.0"`,
		"FROM gcr.io/distroless/static",
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", strings.TrimSpace(want))
		}
	}
}
