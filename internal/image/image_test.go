package image_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
// OCI layout, the OCI archive and the docker-archives it wrote, and checks
// what a cluster will run: an image index for linux/amd64 and linux/arm64
// whose digest is the one printed, the entrypoint, the non-root user, the
// labels, the tag (the chart's appVersion) and static binaries whose
// version is that tag.
func TestMakeImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the controller binary for two platforms")
	}
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	appVersion, repository := chartImage(t, root)
	commit, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	rev := strings.TrimSpace(string(commit))
	// A tag found nowhere else in a binary, so that the one binary that
	// cannot run here is still seen to carry it (TestMakeImageDefaults
	// checks the default tag is the appVersion).
	tag := appVersion + "-imagetest"
	bin := t.TempDir()
	cmd := exec.Command("make", "--no-print-directory", "-C", root, "image", "BIN="+bin, "IMAGE_TAG="+tag)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	ref := repository + ":" + tag
	_, printed, ok := strings.Cut(string(out), ref+"@")
	if !ok {
		t.Fatalf("make image did not print %s@<digest>:\n%s", ref, out)
	}
	printed, _, _ = strings.Cut(printed, "\n")

	// The OCI layout: one image index, named by its reference, whose
	// digest was printed, holding one image per platform.
	layoutDir := filepath.Join(bin, "image", "oci")
	lidx, err := layout.ImageIndexFromPath(layoutDir)
	if err != nil {
		t.Fatalf("load OCI layout: %v", err)
	}
	im, err := lidx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("OCI layout holds %d entries, want 1: %+v", len(im.Manifests), im.Manifests)
	}
	desc := im.Manifests[0]
	if got := desc.Annotations[image.RefAnnotation]; got != ref {
		t.Errorf("layout reference = %q, want %q", got, ref)
	}
	if desc.MediaType != types.OCIImageIndex {
		t.Fatalf("layout entry media type = %s, want %s", desc.MediaType, types.OCIImageIndex)
	}
	raw, err := os.ReadFile(filepath.Join(layoutDir, "blobs", "sha256", desc.Digest.Hex))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(raw); printed != "sha256:"+hex.EncodeToString(sum[:]) || printed != desc.Digest.String() {
		t.Errorf("printed %s; the layout's entry is %s, its index bytes hash to sha256:%x", printed, desc.Digest, sum)
	}
	idx, err := lidx.ImageIndex(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	platforms, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if v := platforms.Annotations["org.opencontainers.image.version"]; v != tag {
		t.Errorf("image index annotation version = %q, want %q", v, tag)
	}
	var got []string
	for _, d := range platforms.Manifests {
		got = append(got, d.Platform.String())
	}
	if !slices.Equal(got, []string{"linux/amd64", "linux/arm64"}) {
		t.Fatalf("image index platforms = %v, want [linux/amd64 linux/arm64]", got)
	}

	// The OCI archive holds the same index.
	archive, err := os.ReadFile(filepath.Join(bin, "image", "shardgate-oci.tar"))
	if err != nil {
		t.Fatal(err)
	}
	if !tarHas(t, archive, "blobs/sha256/"+desc.Digest.Hex, raw) {
		t.Errorf("shardgate-oci.tar lacks the image index %s", desc.Digest)
	}

	for _, arch := range []string{"amd64", "arm64"} {
		fromLayout, err := image.PlatformImage(idx, "linux", arch)
		if err != nil {
			t.Fatal(err)
		}
		checkImage(t, fromLayout, arch, tag, rev)

		// Each platform's docker-archive holds that image under the same tag.
		tarPath := filepath.Join(bin, "image", "shardgate-"+arch+".tar")
		fromTar, err := tarball.ImageFromPath(tarPath, nil)
		if err != nil {
			t.Fatalf("load tarball: %v", err)
		}
		manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(tarPath) })
		if err != nil {
			t.Fatal(err)
		}
		if len(manifest) != 1 || !slices.Contains(manifest[0].RepoTags, ref) {
			t.Errorf("%s tags = %+v, want [%s]", tarPath, manifest, ref)
		}
		a, _ := fromLayout.ConfigName()
		b, _ := fromTar.ConfigName()
		if a != b {
			t.Errorf("the layout's linux/%s config %s differs from %s's %s", arch, a, tarPath, b)
		}

		// The binary is static, built for its platform, and its version is
		// the image tag, with the commit.
		shardgate := extract(t, fromLayout, "shardgate")
		f, err := elf.NewFile(bytes.NewReader(shardgate))
		if err != nil {
			t.Fatalf("linux/%s /shardgate is not an ELF binary: %v", arch, err)
		}
		if want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]; f.Machine != want {
			t.Errorf("linux/%s /shardgate is built for %s", arch, f.Machine)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("linux/%s /shardgate is dynamically linked (PT_INTERP): the image has no libc", arch)
			}
		}
		if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
			t.Errorf("linux/%s /shardgate needs shared libraries %v", arch, libs)
		}
		bi, err := buildinfo.Read(bytes.NewReader(shardgate))
		if err != nil {
			t.Fatalf("linux/%s /shardgate build info: %v", arch, err)
		}
		for _, s := range bi.Settings {
			if (s.Key == "GOARCH" && s.Value != arch) || (s.Key == "CGO_ENABLED" && s.Value != "0") {
				t.Errorf("linux/%s /shardgate was built with %s=%s", arch, s.Key, s.Value)
			}
		}
		if arch != runtime.GOARCH || runtime.GOOS != "linux" {
			// Not runnable here: the tag, which no dependency carries, must
			// still be in its data.
			if !bytes.Contains(shardgate, []byte(tag)) {
				t.Errorf("linux/%s /shardgate does not contain its version %q", arch, tag)
			}
			continue
		}
		exe := filepath.Join(t.TempDir(), "shardgate")
		if err := os.WriteFile(exe, shardgate, 0o755); err != nil {
			t.Fatal(err)
		}
		vout, err := exec.Command(exe, "version").CombinedOutput()
		if want := "shardgate " + tag + " (commit " + rev + ", "; err != nil || !strings.HasPrefix(string(vout), want) {
			t.Errorf("/shardgate version: %v: %q, want %q...", err, vout, want)
		}
		if passwd := string(extract(t, fromLayout, "etc/passwd")); !strings.Contains(passwd, "nonroot:x:65532:65532:") {
			t.Errorf("/etc/passwd has no nonroot user 65532:\n%s", passwd)
		}
	}
}

// TestMakeImageDefaults: by default `make image` tags the image with the
// chart's appVersion, builds linux/amd64 and linux/arm64, and links that
// same version and the commit into each binary (a dry run: nothing is
// built).
func TestMakeImageDefaults(t *testing.T) {
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	appVersion, repository := chartImage(t, root)
	commit, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	out, err := exec.Command("make", "--no-print-directory", "-n", "-C", root, "image", "BIN="+t.TempDir()).CombinedOutput()
	if err != nil {
		t.Fatalf("make -n image: %v\n%s", err, out)
	}
	dry := string(out)
	const pkg = "github.com/shardgate/shardgate/internal/version"
	for _, want := range []string{
		"-X " + pkg + ".Version=" + appVersion + " ",
		"-X " + pkg + ".Commit=" + strings.TrimSpace(string(commit)),
		"--tag " + repository + ":" + appVersion + " ",
		"--version " + appVersion + " ",
		"--binary linux/amd64=", "--binary linux/arm64=",
		"--docker-archive linux/amd64=", "--docker-archive linux/arm64=",
	} {
		if !strings.Contains(dry, want) {
			t.Errorf("make -n image does not run %q:\n%s", want, dry)
		}
	}
}

// tarHas reports whether the tar holds name with exactly data.
func tarHas(t *testing.T, archive []byte, name string, data []byte) bool {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == name {
			b, err := io.ReadAll(tr)
			return err == nil && bytes.Equal(b, data)
		}
	}
}

func checkImage(t *testing.T, img v1.Image, arch, appVersion, revision string) {
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
	if cf.OS != "linux" || cf.Architecture != arch {
		t.Errorf("platform = %s/%s, want linux/%s", cf.OS, cf.Architecture, arch)
	}
	if _, ok := c.ExposedPorts["8086/tcp"]; !ok {
		t.Errorf("ExposedPorts %v lack the Akash API's 8086/tcp", c.ExposedPorts)
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
	if rev := c.Labels["org.opencontainers.image.revision"]; rev != revision {
		t.Errorf("label org.opencontainers.image.revision = %q, want the commit %s", rev, revision)
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
		"internal/version.Commit=${REVISION}",
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", strings.TrimSpace(want))
		}
	}
	// EXPOSE lists the ports `make image` exposes.
	var exposed []string
	for _, line := range strings.Split(df, "\n") {
		if rest, ok := strings.CutPrefix(line, "EXPOSE "); ok {
			exposed = append(exposed, strings.Fields(rest)...)
		}
	}
	for _, addr := range image.DefaultPorts {
		if port := addr[strings.LastIndex(addr, ":")+1:]; !slices.Contains(exposed, port) {
			t.Errorf("Dockerfile EXPOSE %v lacks %s (from %s)", exposed, port, addr)
		}
	}
}

// TestDocsLoadWhatMakeImageWrites: every file under bin/image/ the
// documentation names is one `make image` writes (for the Makefile's
// IMAGE_PLATFORMS), every `kind load` recipe loads one of its
// docker-archives (kind cannot load an index, and no Docker image of any
// other tag exists), and a recipe that sets image.tag sets the tag the
// archive carries, the chart's appVersion.
func TestDocsLoadWhatMakeImageWrites(t *testing.T) {
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	appVersion, _ := chartImage(t, root)
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^IMAGE_PLATFORMS\s*\?=\s*(.+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile sets no IMAGE_PLATFORMS")
	}
	written := map[string]bool{"bin/image/oci": true, "bin/image/shardgate-oci.tar": true}
	archives := map[string]bool{}
	for _, p := range strings.Fields(string(m[1])) {
		goos, arch, _ := strings.Cut(p, "/")
		written["bin/image/shardgate-"+goos+"-"+arch] = true
		archives["bin/image/shardgate-"+arch+".tar"] = true
		written["bin/image/shardgate-"+arch+".tar"] = true
	}
	docs := []string{"README.md", "RELIABILITY.md", "conformance/README.md", "charts/shardgate/README.md"}
	mds, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, p := range mds {
		rel, _ := filepath.Rel(root, p)
		docs = append(docs, rel)
	}
	path := regexp.MustCompile(`bin/image/[A-Za-z0-9_.-]+`)
	kindLoad := regexp.MustCompile("kind load ([a-z-]+) ([^\\s`]+)")
	tag := regexp.MustCompile(`image\.tag=([^\s'"]+)`)
	recipes := 0
	for _, doc := range docs {
		data, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for _, p := range path.FindAllString(text, -1) {
			if !written[strings.TrimSuffix(p, ".")] {
				t.Errorf("%s names %s, which make image does not write (it writes %v)", doc, p, slices.Sorted(maps.Keys(written)))
			}
		}
		loads := kindLoad.FindAllStringSubmatch(text, -1)
		for _, l := range loads {
			recipes++
			if l[1] != "image-archive" || !archives[l[2]] {
				t.Errorf("%s: `%s`: load one of make image's docker-archives, %v, with kind load image-archive", doc, l[0], slices.Sorted(maps.Keys(archives)))
			}
		}
		if len(loads) > 0 {
			for _, s := range tag.FindAllStringSubmatch(text, -1) {
				if s[1] != appVersion {
					t.Errorf("%s loads make image's archive, tagged %s, but sets image.tag=%s", doc, appVersion, s[1])
				}
			}
		}
	}
	if recipes < 2 {
		t.Errorf("found %d kind load recipes; the getting-started and conformance guides have one each", recipes)
	}
}
