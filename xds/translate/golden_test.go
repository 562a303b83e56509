/*
Copyright The shardgate Authors.
*/

package translate

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/internal/irtest"
	"github.com/shardgate/shardgate/xds/endpoints"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/out")

// goldenKinds are the resource types of a translation, one golden file
// each, in the order YAML renders them; and "endpoints", the clusters' load
// assignments, which xds/endpoints builds (goldenEndpoints).
var goldenKinds = []string{"listeners", "routes", "clusters", "endpoints", "secrets"}

// goldenDir holds the expected translations: testdata/out/<case>.<kind>.yaml
// for each resource type the case translates to, so that a change to one
// type's translation is one small diff. A type with no resources has no
// file.
const goldenDir = "testdata/out"

// TestGolden translates every testdata/<case>.in.yaml (an ir.Gateway whose
// clusters may list endpoints, see loadEndpoints) and compares each
// resource type with its golden file; the load assignments are
// xds/endpoints' of those endpoints. Every golden must also
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
			gw := irtest.LoadGateway(t, in)
			res, err := Translate(gw)
			if err != nil {
				t.Fatalf("Translate: %v", err)
			}
			if err := Validate(res); err != nil {
				t.Fatalf("Validate:\n%v", err)
			}
			assertSorted(t, res)

			// Determinism: a second translation is identical.
			again, err := Translate(irtest.LoadGateway(t, in))
			if err != nil {
				t.Fatal(err)
			}
			assertEqualResources(t, res, again)

			got, err := goldenFiles(res)
			if err != nil {
				t.Fatal(err)
			}
			if got["endpoints"], err = goldenEndpoints(gw, loadEndpoints(t, in)); err != nil {
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

// caseEndpoint is an endpoint a case's cluster lists: Ready false stands
// for an endpoint an EndpointSlice lists as not ready, which xds/endpoints'
// table leaves out.
type caseEndpoint struct {
	IP    string `json:"ip"`
	Port  int32  `json:"port"`
	Ready bool   `json:"ready"`
}

// loadEndpoints reads the endpoints a case's clusters list, by cluster.
func loadEndpoints(t testing.TB, path string) map[string][]caseEndpoint {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Clusters []struct {
			Name      string         `json:"name"`
			Endpoints []caseEndpoint `json:"endpoints"`
		} `json:"clusters"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string][]caseEndpoint{}
	for _, c := range doc.Clusters {
		out[c.Name] = c.Endpoints
	}
	return out
}

// goldenEndpoints renders, as goldenFiles renders a type, the load
// assignments xds/endpoints gives gw's clusters with the ready endpoints
// eps lists (nil when gw has no cluster).
func goldenEndpoints(gw *ir.Gateway, eps map[string][]caseEndpoint) ([]byte, error) {
	clusters := slices.SortedFunc(slices.Values(gw.Clusters), func(a, b *ir.Cluster) int { return strings.Compare(a.Name, b.Name) })
	var list []any
	for _, c := range clusters {
		var ready []endpoints.Endpoint
		for _, e := range eps[c.Name] {
			if e.Ready {
				ready = append(ready, endpoints.Endpoint{IP: e.IP, Port: e.Port})
			}
		}
		cla := endpoints.Assignment(c.Name, ready, endpoints.ClusterOf(c).NoEndpoints)
		if err := cla.ValidateAll(); err != nil {
			return nil, fmt.Errorf("load assignment %s: %w", c.Name, err)
		}
		j, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(cla)
		if err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal(j, &v); err != nil {
			return nil, err
		}
		list = append(list, v)
	}
	if len(list) == 0 {
		return nil, nil
	}
	return yaml.Marshal(list)
}

func assertSorted(t *testing.T, r *Resources) {
	t.Helper()
	check := func(kind string, names []string) {
		if !slices.IsSorted(names) {
			t.Errorf("%s not sorted by name: %q", kind, names)
		}
	}
	var ls, rs, cs, ss []string
	for _, l := range r.Listeners {
		ls = append(ls, l.GetName())
	}
	for _, x := range r.Routes {
		rs = append(rs, x.GetName())
	}
	for _, c := range r.Clusters {
		cs = append(cs, c.GetName())
	}
	for _, s := range r.Secrets {
		ss = append(ss, s.GetName())
	}
	check("listeners", ls)
	check("routes", rs)
	check("clusters", cs)
	check("secrets", ss)
}

func assertEqualResources(t *testing.T, a, b *Resources) {
	t.Helper()
	irtest.AssertSameMessages(t, "listeners", a.Listeners, b.Listeners)
	irtest.AssertSameMessages(t, "routes", a.Routes, b.Routes)
	irtest.AssertSameMessages(t, "clusters", a.Clusters, b.Clusters)
	irtest.AssertSameMessages(t, "secrets", a.Secrets, b.Secrets)
}
