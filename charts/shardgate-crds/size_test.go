package shardgatecrds_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"sigs.k8s.io/yaml"
)

// releaseLimit is what Helm's release record may take: it is stored in one
// Secret (or ConfigMap), whose data the apiserver caps at 1 MiB. The test
// keeps a margin for the labels, the status notes and later growth.
const releaseLimit = 1 << 20

// TestReleaseSize: the release Helm stores for each option fits in its
// Secret. Helm stores the release as JSON, gzipped (best compression) and
// base64-encoded (pkg/storage/driver encodeRelease); the JSON holds the
// chart's own templates and files (not its subcharts') and the rendered
// manifest. Both Gateway API channels as files of this chart would not fit
// (about 1.2 MB); in the subchart they are left out of the record.
func TestReleaseSize(t *testing.T) {
	helm := tool(t, "helm")
	for _, set := range []string{"", "akash.enabled=true", "gatewayAPI.channel=standard,akash.enabled=true"} {
		args := []string{"template", "crds", ".", "--namespace", "shardgate-system", "--kube-version", kubeVersion}
		values := map[string]any{}
		if set != "" {
			args = append(args, "--set", set)
			for _, kv := range strings.Split(set, ",") {
				k, v, _ := strings.Cut(kv, "=")
				section, key, _ := strings.Cut(k, ".")
				if values[section] == nil {
					values[section] = map[string]any{}
				}
				var parsed any
				if err := yaml.Unmarshal([]byte(v), &parsed); err != nil {
					t.Fatal(err)
				}
				values[section].(map[string]any)[key] = parsed
			}
		}
		manifest, err := exec.Command(helm, args...).Output()
		if err != nil {
			t.Fatalf("helm %v: %v", args, err)
		}
		chrt, err := loader.Load(".")
		if err != nil {
			t.Fatal(err)
		}
		if err := chartutil.ProcessDependenciesWithMerge(chrt, values); err != nil {
			t.Fatal(err)
		}
		rel := &release.Release{
			Name: "crds", Namespace: "shardgate-system", Version: 1,
			Info:  &release.Info{Status: release.StatusDeployed},
			Chart: chrt, Config: values, Manifest: string(manifest),
		}
		b, err := json.Marshal(rel)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		size := base64.StdEncoding.EncodedLen(buf.Len())
		t.Logf("--set %q: manifest %d bytes, release record %d bytes (limit %d)", set, len(manifest), size, releaseLimit)
		if size > releaseLimit*3/4 {
			t.Errorf("--set %q: the release record is %d bytes, over 3/4 of the %d Helm can store", set, size, releaseLimit)
		}
	}
}
