/*
Copyright The shardgate Authors.
*/

package translate

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/internal/ir"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGolden translates every testdata/<case>.in.yaml (an ir.Gateway) and
// compares the resources with <case>.out.yaml. Every golden must also pass
// Validate: a golden Envoy would reject is a bug, not a fixture.
func TestGolden(t *testing.T) {
	ins, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) < 40 {
		t.Errorf("want at least 40 golden cases, have %d", len(ins))
	}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".in.yaml")
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

			got, err := res.YAML()
			if err != nil {
				t.Fatal(err)
			}
			out := strings.TrimSuffix(in, ".in.yaml") + ".out.yaml"
			if *update {
				if err := os.WriteFile(out, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the translation; run with -update and review the diff.\ngot:\n%s", out, got)
			}
		})
	}
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
