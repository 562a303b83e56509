// Package metricsource reads the Prometheus metrics the product defines from
// its Go source: every prometheus.New<Kind>[Vec](prometheus.<Kind>Opts{Name:
// "..."}, []string{labels...}) call in the non-test files of cmd/,
// controllers/, internal/, sharding/ and xds/. The docs and chart tests use
// it, so that the metrics reference and the alert rules cannot drift from
// the code. It is read only by tests; nothing in the controller imports it.
package metricsource

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Metric is one metric the code defines.
type Metric struct {
	Name   string
	Type   string   // counter, gauge, histogram or summary
	Labels []string // nil for a metric without labels
	Where  string   // the defining file, relative to the repository root
}

var ctor = regexp.MustCompile(`^New(Counter|Gauge|Histogram|Summary)(Vec)?$`)

// Scan finds every metric defined under root. A definition it cannot read
// whole (a name that is not a string literal, one built from Namespace or
// Subsystem, labels that are not a list of string literals) is an error,
// so that no metric escapes the checks built on it.
func Scan(root string) (map[string]Metric, error) {
	out := map[string]Metric{}
	fset := token.NewFileSet()
	var problems []string
	for _, dir := range []string{"cmd", "controllers", "internal", "sharding", "xds"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testenv" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			ast.Inspect(f, func(n ast.Node) bool {
				m, problem := read(n, rel)
				if problem != "" {
					problems = append(problems, problem)
				}
				if m != nil {
					out[m.Name] = *m
				}
				return true
			})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", dir, err)
		}
	}
	if len(problems) > 0 {
		return out, fmt.Errorf("metric definitions that cannot be read:\n  %s", strings.Join(problems, "\n  "))
	}
	return out, nil
}

// read returns the metric n defines, if it is a prometheus.New* call, or
// why it cannot be read.
func read(n ast.Node, rel string) (*Metric, string) {
	call, ok := n.(*ast.CallExpr)
	if !ok {
		return nil, ""
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return nil, ""
	}
	pkg, ok := sel.X.(*ast.Ident)
	kind := ctor.FindStringSubmatch(sel.Sel.Name)
	if !ok || pkg.Name != "prometheus" || kind == nil || len(call.Args) == 0 {
		return nil, ""
	}
	opts, ok := call.Args[0].(*ast.CompositeLit)
	if !ok {
		return nil, fmt.Sprintf("%s: %s without an options literal", rel, sel.Sel.Name)
	}
	m := &Metric{Type: strings.ToLower(kind[1]), Where: rel}
	for _, el := range opts.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		k, ok := kv.Key.(*ast.Ident)
		if !ok {
			continue
		}
		switch k.Name {
		case "Namespace", "Subsystem":
			return nil, fmt.Sprintf("%s: a metric built from %s (whole names only)", rel, k.Name)
		case "Name":
			lit, ok := kv.Value.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return nil, fmt.Sprintf("%s: a metric whose Name is not a string literal", rel)
			}
			m.Name, _ = strconv.Unquote(lit.Value)
		}
	}
	if kind[2] == "Vec" {
		var labels *ast.CompositeLit
		if len(call.Args) > 1 {
			labels, _ = call.Args[1].(*ast.CompositeLit)
		}
		if labels == nil {
			return nil, fmt.Sprintf("%s: the labels of %s are not a literal list", rel, m.Name)
		}
		for _, el := range labels.Elts {
			lit, ok := el.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return nil, fmt.Sprintf("%s: a label of %s is not a string literal", rel, m.Name)
			}
			l, _ := strconv.Unquote(lit.Value)
			m.Labels = append(m.Labels, l)
		}
		if len(m.Labels) == 0 {
			return nil, fmt.Sprintf("%s: %s %s with no labels", rel, sel.Sel.Name, m.Name)
		}
	}
	return m, ""
}
