// Package version holds the build's version and commit, set by the Makefile
// with -ldflags "-X github.com/shardgate/shardgate/internal/version.Version=...
// -X github.com/shardgate/shardgate/internal/version.Commit=...". `make image`
// sets Version to the image's tag, so that `shardgate version` in a container
// names the tag the container was started from.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release of the build: the image tag for `make image`, `git
// describe` for `make build`, "dev" for a plain `go build`.
var Version = "dev"

// Commit is the source commit of the build (set by the Makefile); when
// empty, the VCS revision the Go toolchain stamped, if any.
var Commit = ""

// Revision is Commit, or else the toolchain's vcs.revision (with "-dirty"
// when the tree was modified), or "" when neither is known.
func Revision() string {
	if Commit != "" {
		return Commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" && dirty {
		rev += "-dirty"
	}
	return rev
}

// String is what `shardgate version` prints: the version, then the commit
// when known, the toolchain and the platform, e.g.
// "shardgate v0.1.0 (commit 0123abcd…, go1.26.0, linux/amd64)".
func String() string {
	if rev := Revision(); rev != "" {
		return fmt.Sprintf("shardgate %s (commit %s, %s, %s/%s)", Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	return fmt.Sprintf("shardgate %s (%s, %s/%s)", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
