package docs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/internal/testenv"
)

func root(t *testing.T) string {
	t.Helper()
	r, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// reasonConstants returns the string values of the constants named
// Reason* and Condition* in the non-test Go files of dir.
func reasonConstants(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Reason") && !strings.HasPrefix(n.Name, "Condition") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						out[n.Name] = v
					}
				}
			}
		}
	}
	return out
}

// gatewayAPIReasons returns the Gateway API reasons the controller's code
// uses (gatewayv1.<Kind>Reason<Name>, whose value is <Name>).
func gatewayAPIReasons(t *testing.T, r string) []string {
	t.Helper()
	re := regexp.MustCompile(`gatewayv1\.(?:GatewayClass|Gateway|Listener|Route)Reason(\w+)`)
	seen := map[string]bool{}
	for _, dir := range []string{"internal", "controllers", "xds", "sharding"} {
		err := filepath.WalkDir(filepath.Join(r, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testenv" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range re.FindAllStringSubmatch(string(data), -1) {
				seen[m[1]] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestEveryReasonDocumented: every condition type and reason of our API,
// of the shard and hostname rules, and every Gateway API reason the
// controller writes, is in docs/conditions.md.
func TestEveryReasonDocumented(t *testing.T) {
	r := root(t)
	data, err := os.ReadFile(filepath.Join(r, "docs", "conditions.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	documented := func(v string) bool { return strings.Contains(doc, "`"+v+"`") }
	var missing []string
	total := 0
	for _, dir := range []string{"api/v1alpha1", "sharding", "internal/hostnames"} {
		consts := reasonConstants(t, filepath.Join(r, dir))
		if len(consts) == 0 {
			t.Errorf("no Reason or Condition constants found in %s", dir)
		}
		for name, v := range consts {
			total++
			if !documented(v) {
				missing = append(missing, dir+"."+name+" = "+strconv.Quote(v))
			}
		}
	}
	gw := gatewayAPIReasons(t, r)
	if len(gw) < 10 {
		t.Errorf("found only %d Gateway API reasons in the code: %v", len(gw), gw)
	}
	for _, v := range gw {
		total++
		if !documented(v) {
			missing = append(missing, "Gateway API reason "+strconv.Quote(v))
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("%d of %d reasons are not in docs/conditions.md (as `Reason`):\n  %s", len(missing), total, strings.Join(missing, "\n  "))
	}
}

// userFacing are the files a user reads: the README, the docs, the chart,
// the CRDs (kubectl explain), the API types and the examples.
func userFacing(t *testing.T, r string) []string {
	t.Helper()
	var out []string
	for _, f := range []string{"README.md", "CHANGELOG.md", "RELIABILITY.md", "BENCHMARKS.md", "Dockerfile"} {
		out = append(out, filepath.Join(r, f))
	}
	for _, dir := range []string{"docs", "charts/shardgate", "crds", "api", "examples", "conformance", "hack"} {
		err := filepath.WalkDir(filepath.Join(r, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "gateway-api-crds" {
				return filepath.SkipDir // vendored upstream CRDs
			}
			if !d.IsDir() && !strings.HasSuffix(path, "_test.go") {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestNothingPointsOutside: nothing user-facing refers to documents outside
// the repository.
func TestNothingPointsOutside(t *testing.T) {
	r := root(t)
	bad := regexp.MustCompile(`DESIGN(\.md| §)|\.\./shared/|/work/shared`)
	files := userFacing(t, r)
	if len(files) < 50 {
		t.Fatalf("only %d user-facing files found", len(files))
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if bad.MatchString(line) {
				rel, _ := filepath.Rel(r, path)
				t.Errorf("%s:%d points outside the repository: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// TestLinks: every relative link of the Markdown users read resolves to a
// file in the repository.
func TestLinks(t *testing.T) {
	r := root(t)
	// Path-like targets only: generated tables hold validation patterns
	// such as "([-a-z0-9]*[a-z0-9])", which are not links.
	link := regexp.MustCompile(`\]\(([A-Za-z0-9_./#:-]+)\)`)
	var md []string
	for _, path := range userFacing(t, r) {
		if strings.HasSuffix(path, ".md") {
			md = append(md, path)
		}
	}
	checked := 0
	for _, path := range md {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			checked++
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), target)); err != nil {
				rel, _ := filepath.Rel(r, path)
				t.Errorf("%s links to %s, which does not exist", rel, m[1])
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d relative links checked", checked)
	}
}

// TestIngressNginxPageStatesTheDefaults: the figures of
// migrating-from-ingress-nginx.md are the ones the code uses: the idle
// timeout, and every field of the default JSON access log.
func TestIngressNginxPageStatesTheDefaults(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root(t), "docs", "migrating-from-ingress-nginx.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if want := fmt.Sprintf("an idle timeout of %d s", int(ir.DefaultIdleTimeout.Seconds())); !strings.Contains(doc, want) {
		t.Errorf("the page does not say %q", want)
	}
	_, log, ok := strings.Cut(doc, "## The access log")
	if !ok {
		t.Fatal("no access log section")
	}
	log, _, _ = strings.Cut(log, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| `([^`]+)` \\|$")
	got := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(log, -1) {
		got[m[1]] = m[2]
	}
	if want := ir.DefaultAccessLogFields(); !maps.Equal(got, want) {
		t.Errorf("access log fields in the page:\n%v\nin the code:\n%v", got, want)
	}
}
