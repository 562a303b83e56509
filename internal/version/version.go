// Package version holds the build's version, set by the Makefile with
// -ldflags "-X github.com/shardgate/shardgate/internal/version.Version=...".
package version

import (
	"fmt"
	"runtime"
)

// Version is the release or `git describe` of the build.
var Version = "dev"

// String is what `shardgate version` prints.
func String() string {
	return fmt.Sprintf("shardgate %s (%s, %s/%s)", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
