package docs_test

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/config"
)

// configKeys returns the dotted key paths of the config file's leaves (the
// JSON/YAML keys of config.Config, nested structs walked).
func configKeys(prefix string, t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		key := prefix + name
		ft := f.Type
		if ft.Kind() == reflect.Struct {
			out = append(out, configKeys(key+".", ft)...)
			continue
		}
		out = append(out, key)
	}
	return out
}

// documentedKeys returns the keys the config-file table of
// docs/configuration.md documents. A row's first cell names keys in
// backticks; a name without a dot after a dotted one shares its parent
// ("`xds.tls.certFile`, `keyFile`" is xds.tls.certFile and xds.tls.keyFile).
func documentedKeys(t *testing.T, doc string) map[string]bool {
	t.Helper()
	_, text, ok := strings.Cut(doc, "\n## The config file\n")
	if !ok {
		t.Fatal(`docs/configuration.md has no "## The config file" section`)
	}
	text, _, _ = strings.Cut(text, "\n## ")
	tick := regexp.MustCompile("`([^`]+)`")
	keys := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first, _, _ := strings.Cut(line, " | ")
		parent := ""
		for _, m := range tick.FindAllStringSubmatch(first, -1) {
			k := m[1]
			if i := strings.LastIndex(k, "."); i >= 0 {
				parent = k[:i+1]
			} else {
				k = parent + k
			}
			keys[k] = true
		}
	}
	return keys
}

// TestEveryConfigKeyDocumented: every key of the config file's schema has
// a row in docs/configuration.md, and every key the table lists exists.
func TestEveryConfigKeyDocumented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root(t), "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := documentedKeys(t, string(data))
	keys := configKeys("", reflect.TypeFor[config.Config]())
	if len(keys) < 25 {
		t.Fatalf("found only %d config keys: %v", len(keys), keys)
	}
	schema := map[string]bool{}
	var missing []string
	for _, k := range keys {
		schema[k] = true
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d config keys have no row in docs/configuration.md's config-file table:\n  %s", len(missing), len(keys), strings.Join(missing, "\n  "))
	}
	var stale []string
	for k := range documented {
		if !schema[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("docs/configuration.md documents config keys the schema does not have:\n  %s", strings.Join(stale, "\n  "))
	}
}
