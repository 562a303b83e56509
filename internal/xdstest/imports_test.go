package xdstest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The test-support packages are imported by tests only: no other file of
// the module imports them.
func TestOnlyTestsImportTheTestSupportPackages(t *testing.T) {
	root := filepath.Join("..", "..")
	support := map[string]bool{
		"github.com/shardgate/shardgate/internal/xdstest":  true,
		"github.com/shardgate/shardgate/internal/testwait": true,
		"github.com/shardgate/shardgate/internal/irtest":   true,
	}
	own := map[string]bool{
		filepath.Join(root, "internal", "xdstest"):  true,
		filepath.Join(root, "internal", "testwait"): true,
		filepath.Join(root, "internal", "irtest"):   true,
	}
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if own[path] || d.Name() == "bin" || (d.Name() != "." && d.Name() != ".." && strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); support[p] {
				t.Errorf("%s imports %s, which only tests may import", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d files: the walk did not cover the module", checked)
	}
}
