package image

import (
	"fmt"
	"maps"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Platform is one image of a multi-platform image: a static binary built
// for OS/Arch (GOOS/GOARCH).
type Platform struct {
	OS, Arch string
	// Binary is the path of the binary built for OS/Arch.
	Binary string
}

// String is "os/arch", as registries and `docker --platform` write it.
func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Annotations are the OCI annotations of the image index: those of Labels
// that describe the release (title, source, version, revision, licenses)
// and the creation time, so a registry shows them without fetching a
// config.
func Annotations(o Options) map[string]string {
	a := maps.Clone(Labels(o))
	delete(a, "org.opencontainers.image.description")
	a["org.opencontainers.image.created"] = o.Created.UTC().Format("2006-01-02T15:04:05Z")
	return a
}

// BuildIndex assembles one image per platform, each with o's version,
// revision and creation time (o.Binary, o.OS and o.Arch are ignored), into
// an OCI image index whose descriptors name each image's platform. The
// index's digest is the one a registry shows for the tag after the index
// is pushed unchanged (`crane push`, `skopeo copy --all`).
func BuildIndex(o Options, platforms []Platform) (v1.ImageIndex, error) {
	if len(platforms) == 0 {
		return nil, fmt.Errorf("image index: no platforms")
	}
	seen := map[string]bool{}
	adds := make([]mutate.IndexAddendum, 0, len(platforms))
	for _, p := range platforms {
		if p.OS == "" || p.Arch == "" {
			return nil, fmt.Errorf("image index: platform %q: os and arch are required", p)
		}
		if seen[p.String()] {
			return nil, fmt.Errorf("image index: platform %s given twice", p)
		}
		seen[p.String()] = true
		po := o
		po.Binary, po.OS, po.Arch = p.Binary, p.OS, p.Arch
		img, err := Build(po)
		if err != nil {
			return nil, fmt.Errorf("image index: %s: %w", p, err)
		}
		adds = append(adds, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{
				MediaType: types.OCIManifestSchema1,
				Platform:  &v1.Platform{OS: p.OS, Architecture: p.Arch},
			},
		})
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	idx = mutate.AppendManifests(idx, adds...)
	annotated, ok := mutate.Annotations(idx, Annotations(o)).(v1.ImageIndex)
	if !ok {
		return nil, fmt.Errorf("image index: annotations dropped the index")
	}
	return annotated, nil
}

// PlatformImage is the image of idx for os/arch.
func PlatformImage(idx v1.ImageIndex, os, arch string) (v1.Image, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("image index: %w", err)
	}
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.OS == os && d.Platform.Architecture == arch {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("image index has no %s/%s image", os, arch)
}

// ParsePlatform reads "os/arch=path" (the --binary flag of hack/image).
func ParsePlatform(s string) (Platform, error) {
	var p Platform
	plat, bin, ok := strings.Cut(s, "=")
	if !ok || bin == "" {
		return p, fmt.Errorf("binary %q: want os/arch=path", s)
	}
	goos, arch, ok := strings.Cut(plat, "/")
	if !ok || goos == "" || arch == "" {
		return p, fmt.Errorf("binary %q: platform %q is not os/arch", s, plat)
	}
	return Platform{OS: goos, Arch: arch, Binary: bin}, nil
}
