package akash

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/shardgate/shardgate/internal/version"
)

// VersionInfo is GET /version: the version information the Akash provider's
// operators serve, with their keys (a provider reads it to tell which
// operator build answers). For shardgate, name and server_name are
// "shardgate", version its release, commit the VCS revision it was built
// from, go the toolchain, build_deps the modules it was built with
// ("path@version", "path@version => path@version" when replaced) and
// cosmos_sdk_version empty, as for any build without the Cosmos SDK.
type VersionInfo struct {
	Name             string   `json:"name"`
	AppName          string   `json:"server_name"`
	Version          string   `json:"version"`
	GitCommit        string   `json:"commit"`
	BuildTags        string   `json:"build_tags"`
	GoVersion        string   `json:"go"`
	BuildDeps        []string `json:"build_deps"`
	CosmosSdkVersion string   `json:"cosmos_sdk_version"`
}

// NewVersionInfo is this build's VersionInfo.
func NewVersionInfo() VersionInfo {
	v := VersionInfo{
		Name:      "shardgate",
		AppName:   "shardgate",
		Version:   version.Version,
		GitCommit: version.Revision(),
		GoVersion: fmt.Sprintf("go version %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH),
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "-tags":
			v.BuildTags = s.Value
		}
	}
	for _, d := range bi.Deps {
		v.BuildDeps = append(v.BuildDeps, depString(d))
		if d.Path == "github.com/cosmos/cosmos-sdk" {
			v.CosmosSdkVersion = d.Version
		}
	}
	return v
}

func depString(d *debug.Module) string {
	if d.Replace != nil {
		return fmt.Sprintf("%s@%s => %s@%s", d.Path, d.Version, d.Replace.Path, d.Replace.Version)
	}
	return fmt.Sprintf("%s@%s", d.Path, d.Version)
}
