package version

import (
	"runtime"
	"strings"
	"testing"
)

// TestString: `shardgate version` names the version (the image tag in an
// image) and, separately, the commit.
func TestString(t *testing.T) {
	v, c := Version, Commit
	t.Cleanup(func() { Version, Commit = v, c })
	Version, Commit = "v1.2.3", "0123456789abcdef0123456789abcdef01234567"
	want := "shardgate v1.2.3 (commit 0123456789abcdef0123456789abcdef01234567, " + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")"
	if got := String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if Revision() != Commit {
		t.Errorf("Revision() = %q, want the Commit set at link time", Revision())
	}
	Commit = ""
	if got := String(); !strings.HasPrefix(got, "shardgate v1.2.3 (") {
		t.Errorf("String() without a commit = %q", got)
	}
}
