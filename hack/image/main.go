// Command image writes the controller image built by `make image`: the
// static binary given by --binary, assembled by internal/image into an OCI
// image layout (--layout) and a `docker load` tarball (--tarball). It needs
// no container runtime and no network.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/shardgate/shardgate/internal/image"
)

func main() {
	var (
		o                      image.Options
		ref, layoutDir, tarOut string
		epoch                  string
	)
	flag.StringVar(&o.Binary, "binary", "", "static linux shardgate binary")
	flag.StringVar(&o.OS, "os", "linux", "the binary's GOOS")
	flag.StringVar(&o.Arch, "arch", "amd64", "the binary's GOARCH")
	flag.StringVar(&o.Version, "version", "", "release version (the chart's appVersion)")
	flag.StringVar(&o.Revision, "revision", "", "source commit")
	flag.StringVar(&epoch, "created", "0", "creation time in Unix seconds (the commit's, for a reproducible image)")
	flag.StringVar(&ref, "tag", "", "image reference, e.g. ghcr.io/shardgate/shardgate:v0.1.0")
	flag.StringVar(&layoutDir, "layout", "", "OCI image layout directory to write")
	flag.StringVar(&tarOut, "tarball", "", "docker-load tarball to write")
	flag.Parse()
	if err := run(o, epoch, ref, layoutDir, tarOut); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(o image.Options, epoch, ref, layoutDir, tarOut string) error {
	secs, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return fmt.Errorf("--created %q: %w", epoch, err)
	}
	o.Created = time.Unix(secs, 0).UTC()
	if ref == "" || (layoutDir == "" && tarOut == "") {
		return fmt.Errorf("--tag and at least one of --layout, --tarball are required")
	}
	img, err := image.Build(o)
	if err != nil {
		return err
	}
	if layoutDir != "" {
		if err := image.WriteLayout(layoutDir, ref, img); err != nil {
			return err
		}
	}
	if tarOut != "" {
		if err := image.WriteTarball(tarOut, ref, img); err != nil {
			return err
		}
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s@%s\n", ref, digest)
	if layoutDir != "" {
		fmt.Printf("  OCI layout: %s\n", layoutDir)
	}
	if tarOut != "" {
		fmt.Printf("  tarball:    %s (docker load -i %s)\n", tarOut, tarOut)
	}
	return nil
}
