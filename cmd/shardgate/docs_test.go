package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/shardgate/shardgate/internal/testenv"
)

// readDoc returns a file of docs/.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	r, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(r, "docs", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section returns the text under the heading line (exactly) up to the next
// heading of the same or a higher level.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("no heading %q", heading)
	}
	level := strings.Repeat("#", strings.Count(strings.Fields(heading)[0], "#"))
	end := regexp.MustCompile(`(?m)^#{1,` + string(rune('0'+len(level))) + `} `)
	if loc := end.FindStringIndex(rest); loc != nil {
		rest = rest[:loc[0]]
	}
	return rest
}

// tableRows maps the backticked names of the first cell of each table row
// of text to the whole row.
func tableRows(text string) map[string]string {
	rows := map[string]string{}
	tick := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		cells := strings.Split(line, " | ")
		for _, m := range tick.FindAllStringSubmatch(cells[0], -1) {
			rows[m[1]] = line
		}
	}
	return rows
}

// TestEveryControllerFlagDocumented: every flag of `shardgate controller`
// has a row in docs/configuration.md stating its default, and every flag
// the table lists exists.
func TestEveryControllerFlagDocumented(t *testing.T) {
	rows := tableRows(section(t, readDoc(t, "configuration.md"), "### `shardgate controller`"))
	cmd := controllerCommand()
	n := 0
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		n++
		row, ok := rows["--"+f.Name]
		if !ok {
			t.Errorf("flag --%s (%s) is not in the `shardgate controller` table of docs/configuration.md", f.Name, f.Usage)
			return
		}
		if f.DefValue != "" && !strings.Contains(row, "`"+f.DefValue+"`") {
			t.Errorf("the row of --%s does not state its default `%s`:\n%s", f.Name, f.DefValue, row)
		}
	})
	if n < 10 {
		t.Fatalf("only %d flags found", n)
	}
	for name := range rows {
		if strings.HasPrefix(name, "--") && cmd.Flags().Lookup(strings.TrimPrefix(name, "--")) == nil {
			t.Errorf("docs/configuration.md documents %s, which `shardgate controller` does not have", name)
		}
	}
}
