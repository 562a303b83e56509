// Package image assembles the controller's OCI image without a container
// runtime: the static shardgate binary on an empty base, run as the
// unprivileged uid 65532, with OCI labels. `make image` (hack/image) writes
// it as an OCI image layout and as a `docker load` tarball; the Dockerfile
// at the repository root builds the same image where Docker is available.
//
// It owns the image's configuration (entrypoint, user, labels, platform)
// and its file system; it must never build the binary itself, nor reach a
// registry: the result is written to local files only.
package image
