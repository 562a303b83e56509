// Command image writes the controller image built by `make image`: the
// static binaries given by --binary (one per platform), assembled by
// internal/image into a multi-platform OCI image index, written as an OCI
// image layout (--layout), the same layout in a tar (--oci-archive) and a
// single-platform `docker load` tarball per --docker-archive. It prints the
// index digest, the one a registry shows after the push. It needs no
// container runtime and no network.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/shardgate/shardgate/internal/image"
)

// dockerArchive is one --docker-archive: the platform whose image to write,
// and the tarball's path.
type dockerArchive struct {
	platform image.Platform
	path     string
}

type flags struct {
	o                    image.Options
	platforms            []image.Platform
	dockerArchives       []dockerArchive
	ref, layout, archive string
	epoch                string
}

func main() {
	var f flags
	flag.Func("binary", "os/arch=path: a static shardgate binary for that platform (repeat for each platform)", func(s string) error {
		p, err := image.ParsePlatform(s)
		f.platforms = append(f.platforms, p)
		return err
	})
	flag.Func("docker-archive", "os/arch=path: write that platform's image as a `docker load` tarball (repeatable)", func(s string) error {
		p, err := image.ParsePlatform(s)
		f.dockerArchives = append(f.dockerArchives, dockerArchive{platform: image.Platform{OS: p.OS, Arch: p.Arch}, path: p.Binary})
		return err
	})
	flag.StringVar(&f.o.Version, "version", "", "release version (the image tag, the chart's appVersion)")
	flag.StringVar(&f.o.Revision, "revision", "", "source commit")
	flag.StringVar(&f.epoch, "created", "0", "creation time in Unix seconds (the commit's, for a reproducible image)")
	flag.StringVar(&f.ref, "tag", "", "image reference, e.g. ghcr.io/shardgate/shardgate:v0.1.0")
	flag.StringVar(&f.layout, "layout", "", "OCI image layout directory to write (holding the image index)")
	flag.StringVar(&f.archive, "oci-archive", "", "the OCI image layout as a tar file to write")
	flag.Parse()
	if err := run(os.Stdout, f); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(out io.Writer, f flags) error {
	secs, err := strconv.ParseInt(f.epoch, 10, 64)
	if err != nil {
		return fmt.Errorf("--created %q: %w", f.epoch, err)
	}
	f.o.Created = time.Unix(secs, 0).UTC()
	if f.ref == "" || len(f.platforms) == 0 || (f.layout == "" && f.archive == "" && len(f.dockerArchives) == 0) {
		return fmt.Errorf("--tag, --binary and at least one of --layout, --oci-archive, --docker-archive are required")
	}
	idx, err := image.BuildIndex(f.o, f.platforms)
	if err != nil {
		return err
	}
	if f.layout != "" {
		if err := image.WriteLayout(f.layout, f.ref, idx); err != nil {
			return err
		}
	}
	if f.archive != "" {
		if err := image.WriteOCIArchive(f.archive, f.ref, idx, f.o.Created); err != nil {
			return err
		}
	}
	for _, a := range f.dockerArchives {
		img, err := image.PlatformImage(idx, a.platform.OS, a.platform.Arch)
		if err != nil {
			return fmt.Errorf("--docker-archive %s: %w", a.platform, err)
		}
		if err := image.WriteTarball(a.path, f.ref, img); err != nil {
			return err
		}
	}
	return report(out, f, idx)
}
