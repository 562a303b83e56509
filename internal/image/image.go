package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/shardgate/shardgate/internal/config"
)

// The image's fixed configuration; the Dockerfile states the same.
const (
	// Entrypoint is the binary's path in the image.
	Entrypoint = "/shardgate"
	// UID and GID: the conventional "nonroot" user of distroless images.
	UID = 65532
	GID = 65532
	// User is the config's User field.
	User = "65532:65532"
	// Source is the project's source repository (the OCI source label).
	Source = "https://github.com/shardgate/shardgate"
)

// Options describe one image.
type Options struct {
	// Binary is the path of a static linux shardgate binary.
	Binary string
	// OS and Arch are the binary's platform (GOOS, GOARCH).
	OS, Arch string
	// Version is the release the image is tagged with (the chart's
	// appVersion), Revision the source commit; both become labels.
	Version, Revision string
	// Created is the image's creation time; a fixed time (the commit's)
	// keeps the image reproducible.
	Created time.Time
}

// Labels are the OCI annotations of the image's config.
func Labels(o Options) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "shardgate",
		"org.opencontainers.image.description": "Gateway API ingress controller for multi-tenant compute providers",
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.url":         Source,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.version":     o.Version,
	}
	if o.Revision != "" {
		l["org.opencontainers.image.revision"] = o.Revision
	}
	return l
}

// Build assembles the image: one layer holding the binary, a passwd and
// group entry for the nonroot user, and an empty /tmp, on an empty base.
func Build(o Options) (v1.Image, error) {
	if o.Binary == "" || o.OS == "" || o.Arch == "" || o.Version == "" {
		return nil, fmt.Errorf("image: binary, os, arch and version are required")
	}
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	layerTar, err := rootfs(bin, o.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{CreatedBy: "shardgate make image", Created: v1.Time{Time: o.Created}},
	})
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	ports, err := exposedPorts()
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = o.OS, o.Arch
	cf.Created = v1.Time{Time: o.Created}
	cf.Config = v1.Config{
		Entrypoint: []string{Entrypoint},
		// The default command; the chart passes its own arguments.
		Cmd:          []string{"controller"},
		User:         User,
		WorkingDir:   "/",
		Env:          []string{"PATH=/"},
		Labels:       Labels(o),
		ExposedPorts: ports,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	return img, nil
}

// DefaultPorts are the TCP ports the controller listens on by default, as
// internal/config defines them: metrics, health probes, xDS, and the Akash
// operators' HTTP API (akash.apiAddress, served in Akash mode). The image
// config's ExposedPorts lists each of them.
var DefaultPorts = []string{
	config.DefaultMetricsAddress,
	config.DefaultHealthAddress,
	config.DefaultXDSAddress,
	config.DefaultAkashAPIAddress,
}

// exposedPorts is ExposedPorts: "<port>/tcp" for each of DefaultPorts.
func exposedPorts() (map[string]struct{}, error) {
	ports := make(map[string]struct{}, len(DefaultPorts))
	for _, addr := range DefaultPorts {
		_, port, err := net.SplitHostPort(addr)
		if err != nil || port == "" {
			return nil, fmt.Errorf("image: default listen address %q has no port: %v", addr, err)
		}
		ports[port+"/tcp"] = struct{}{}
	}
	return ports, nil
}

// rootfs is the layer's tar: /shardgate (0755, root-owned so the process
// cannot rewrite it), /etc/passwd and /etc/group naming the nonroot user,
// and a world-writable sticky /tmp.
func rootfs(bin []byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, GID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID)
	entries := []struct {
		name string
		mode int64
		dir  bool
		data []byte
		uid  int
	}{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, dir: true, uid: UID},
		{name: "shardgate", mode: 0o755, data: bin},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: created, Uid: e.uid, Gid: e.uid, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("image layer %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("image layer %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
