package main

import (
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// report prints what was written. The first line is REF@DIGEST with the
// digest of the image index: the digest a registry shows for REF once the
// layout or the OCI archive is pushed unchanged, and the value of the
// chart's image.digest. The per-platform lines give each image manifest's
// digest (what a registry resolves REF to for that platform) and its
// config's, which a classic `docker load` shows as the image ID.
func report(out io.Writer, f flags, idx v1.ImageIndex) error {
	digest, err := idx.Digest()
	if err != nil {
		return fmt.Errorf("image index digest: %w", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return fmt.Errorf("image index: %w", err)
	}
	fmt.Fprintf(out, "%s@%s\n", f.ref, digest)
	fmt.Fprintf(out, "  %s is the digest of the OCI image index (%d platforms): what a registry shows for %s after\n", digest, len(im.Manifests), f.ref)
	fmt.Fprintf(out, "  the push below, and what the chart's image.digest takes.\n")
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return fmt.Errorf("image %s: %w", d.Digest, err)
		}
		config, err := img.ConfigName()
		if err != nil {
			return fmt.Errorf("image %s config: %w", d.Digest, err)
		}
		fmt.Fprintf(out, "  %-12s image manifest %s (config %s: the image ID a classic docker load shows)\n", d.Platform.OS+"/"+d.Platform.Architecture, d.Digest, config)
	}
	if f.layout != "" {
		fmt.Fprintf(out, "  OCI layout:  %s (crane push %s %s)\n", f.layout, f.layout, f.ref)
	}
	if f.archive != "" {
		fmt.Fprintf(out, "  OCI archive: %s (skopeo copy --all oci-archive:%s docker://%s)\n", f.archive, f.archive, f.ref)
	}
	for _, a := range f.dockerArchives {
		fmt.Fprintf(out, "  %s only: %s (docker load -i %s, kind load image-archive %s)\n", a.platform, a.path, a.path, a.path)
	}
	return nil
}
