package image

import (
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// RefAnnotation names an image of an OCI layout by its reference, as
// `skopeo`, `crane` and containerd's importer read it.
const RefAnnotation = "org.opencontainers.image.ref.name"

// WriteLayout writes img as the only image of a fresh OCI image layout in
// dir (replacing what was there), annotated with its reference.
func WriteLayout(dir, ref string, img v1.Image) error {
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
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{RefAnnotation: ref})); err != nil {
		return fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	return nil
}

// WriteTarball writes img, tagged ref, as a tarball that `docker load` and
// `kind load image-archive` accept.
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
