package image

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// RefAnnotation names an image of an OCI layout by its reference, as
// `skopeo`, `crane` and containerd's importer read it.
const RefAnnotation = "org.opencontainers.image.ref.name"

// ContainerdNameAnnotation names an image of an OCI layout for containerd's
// importer (`ctr images import`, and `docker load` with the containerd image
// store), which reads it before RefAnnotation.
const ContainerdNameAnnotation = "io.containerd.image.name"

// WriteLayout writes idx as the only entry of a fresh OCI image layout in
// dir (replacing what was there), annotated with its reference. The entry
// is the image index itself, so `crane push dir REF` and `skopeo copy --all
// oci:dir docker://REF` push it byte for byte, and the registry shows the
// index's digest for REF.
func WriteLayout(dir, ref string, idx v1.ImageIndex) error {
	if _, err := name.NewTag(ref, name.StrictValidation); err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefAnnotation: ref, ContainerdNameAnnotation: ref})); err != nil {
		return fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	return nil
}

// WriteOCIArchive writes idx as an OCI layout in a tar file (the
// `oci-archive:` of skopeo, what `ctr images import` reads): the layout of
// WriteLayout, its entries in a fixed order with the modification time
// mtime, so that the same index gives the same file.
func WriteOCIArchive(path, ref string, idx v1.ImageIndex, mtime time.Time) error {
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".oci-archive-")
	if err != nil {
		return fmt.Errorf("OCI archive %s: %w", path, err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "layout")
	if err := WriteLayout(dir, ref, idx); err != nil {
		return err
	}
	if err := tarDir(path, dir, mtime); err != nil {
		return fmt.Errorf("OCI archive %s: %w", path, err)
	}
	return nil
}

// tarDir writes the files and directories below dir into a tar at path,
// sorted by name, root-owned, with fixed modes and the time mtime.
func tarDir(path, dir string, mtime time.Time) error {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			names = append(names, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, p := range names {
		if err := addFile(tw, dir, p, mtime); err != nil {
			f.Close()
			return err
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func addFile(tw *tar.Writer, dir, p string, mtime time.Time) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return err
	}
	h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: mtime, Mode: 0o644, Format: tar.FormatPAX}
	if st.IsDir() {
		h.Name += "/"
		h.Typeflag, h.Mode = tar.TypeDir, 0o755
		return tw.WriteHeader(h)
	}
	h.Typeflag, h.Size = tar.TypeReg, st.Size()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	src, err := os.Open(p)
	if err != nil {
		return err
	}
	defer src.Close()
	if _, err := io.Copy(tw, src); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	return nil
}

// WriteTarball writes img, tagged ref, as a single-platform tarball that
// `docker load` and `kind load image-archive` accept (a docker-archive holds
// one image per tag, not an index).
func WriteTarball(path, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		return fmt.Errorf("image tarball %s: %w", path, err)
	}
	return nil
}
