/*
Copyright The shardgate Authors.
*/

package translate

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/internal/ir"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/out")

// goldenKinds are the resource types of a translation, one golden file
// each, in the order YAML renders them.
var goldenKinds = []string{"listeners", "routes", "clusters", "endpoints", "secrets"}

// goldenDir holds the expected translations: testdata/out/<case>.<kind>.yaml
// for each resource type the case translates to, so that a change to one
// type's translation is one small diff. A type with no resources has no
// file.
const goldenDir = "testdata/out"

// TestGolden translates every testdata/<case>.in.yaml (an ir.Gateway) and
// compares each resource type with its golden file. Every golden must also
// pass Validate: a golden Envoy would reject is a bug, not a fixture.
// "go test -update" rewrites the goldens (and removes those of types or
// cases that are gone); review the diff.
func TestGolden(t *testing.T) {
	ins, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) < 40 {
		t.Errorf("want at least 40 golden cases, have %d", len(ins))
	}
	if *update {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]bool{}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".in.yaml")
		cases[name] = true
		t.Run(name, func(t *testing.T) {
			gw := loadGateway(t, in)
			res, err := Translate(gw)
			if err != nil {
				t.Fatalf("Translate: %v", err)
			}
			if err := Validate(res); err != nil {
				t.Fatalf("Validate:\n%v", err)
			}
			assertSorted(t, res)

			// Determinism: a second translation is identical.
			again, err := Translate(loadGateway(t, in))
			if err != nil {
				t.Fatal(err)
			}
			assertEqualResources(t, res, again)

			got, err := goldenFiles(res)
			if err != nil {
				t.Fatal(err)
			}
			for _, kind := range goldenKinds {
				compareGolden(t, filepath.Join(goldenDir, name+"."+kind+".yaml"), got[kind])
			}
		})
	}
	// Every golden file belongs to a case.
	outs, err := filepath.Glob(filepath.Join(goldenDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range outs {
		base := strings.TrimSuffix(filepath.Base(out), ".yaml")
		name, kind, _ := strings.Cut(base, ".")
		if cases[name] && slices.Contains(goldenKinds, kind) {
			continue
		}
		if *update {
			if err := os.Remove(out); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s belongs to no case and resource type; run with -update to remove it", out)
	}
}

// compareGolden compares (or, with -update, writes) one golden file; want
// nil means the file must not exist.
func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if got == nil {
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			return
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	switch {
	case got == nil && os.IsNotExist(err):
		return
	case got == nil && err == nil:
		t.Errorf("%s exists, but the translation has no such resources; run with -update to remove it", path)
		return
	case err != nil:
		t.Errorf("%v (run with -update to create it)", err)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the translation; run with -update and review the diff.\ngot:\n%s", path, got)
	}
}

// goldenFiles splits the YAML rendering of res into one document per
// resource type; a type without resources has none.
func goldenFiles(res *Resources) (map[string][]byte, error) {
	all, err := res.YAML()
	if err != nil {
		return nil, err
	}
	var sections map[string][]any
	if err := yaml.Unmarshal(all, &sections); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, kind := range goldenKinds {
		if len(sections[kind]) == 0 {
			continue
		}
		b, err := yaml.Marshal(sections[kind])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kind, err)
		}
		out[kind] = b
	}
	return out, nil
}

func loadGateway(t testing.TB, path string) *ir.Gateway {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	gw := &ir.Gateway{}
	if err := yaml.UnmarshalStrict(b, gw); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return gw
}

func assertSorted(t *testing.T, r *Resources) {
	t.Helper()
	check := func(kind string, names []string) {
		if !slices.IsSorted(names) {
			t.Errorf("%s not sorted by name: %q", kind, names)
		}
	}
	var ls, rs, cs, es, ss []string
	for _, l := range r.Listeners {
		ls = append(ls, l.GetName())
	}
	for _, x := range r.Routes {
		rs = append(rs, x.GetName())
	}
	for _, c := range r.Clusters {
		cs = append(cs, c.GetName())
	}
	for _, e := range r.Endpoints {
		es = append(es, e.GetClusterName())
	}
	for _, s := range r.Secrets {
		ss = append(ss, s.GetName())
	}
	check("listeners", ls)
	check("routes", rs)
	check("clusters", cs)
	check("endpoints", es)
	check("secrets", ss)
}

func assertEqualResources(t *testing.T, a, b *Resources) {
	t.Helper()
	eq := func(kind string, x, y []proto.Message) {
		if len(x) != len(y) {
			t.Fatalf("%s: %d vs %d resources", kind, len(x), len(y))
		}
		for i := range x {
			if !proto.Equal(x[i], y[i]) {
				t.Errorf("%s #%d differs between two translations", kind, i)
			}
		}
	}
	eq("listeners", messages(a.Listeners), messages(b.Listeners))
	eq("routes", messages(a.Routes), messages(b.Routes))
	eq("clusters", messages(a.Clusters), messages(b.Clusters))
	eq("endpoints", messages(a.Endpoints), messages(b.Endpoints))
	eq("secrets", messages(a.Secrets), messages(b.Secrets))
}
