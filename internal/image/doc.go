// Package image assembles the controller's OCI image without a container
// runtime: the static shardgate binary on an empty base, run as the
// unprivileged uid 65532, with OCI labels, one image per platform
// (linux/amd64 and linux/arm64 for `make image`) in an OCI image index.
// `make image` (hack/image) writes the index as an OCI image layout and as a
// tar of that layout, and each platform's image alone as a `docker load`
// tarball; the Dockerfile at the repository root builds the same image
// where Docker is available.
//
// It owns the image's configuration (entrypoint, user, labels, exposed
// ports, platform) and its file system; it must never build the binary
// itself, nor reach a registry: the result is written to local files only.
package image
