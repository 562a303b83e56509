package main

import (
	"fmt"
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

// shellWords splits a command line as a POSIX shell would for the words
// the docs use: quotes ('...', "...") and $(...) stay inside one word.
func shellWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'' || c == '"':
			end := strings.IndexByte(line[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("unterminated %c", c)
			}
			cur.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '$' && i+1 < len(line) && line[i+1] == '(':
			depth, j := 0, i+1
			for ; j < len(line); j++ {
				if line[j] == '(' {
					depth++
				} else if line[j] == ')' {
					if depth--; depth == 0 {
						break
					}
				}
			}
			if j == len(line) {
				return nil, fmt.Errorf("unterminated $(")
			}
			cur.WriteString("SUBSTITUTED")
			i = j
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// docInvocations returns the `shardgate ...` command lines of the shell
// blocks of a Markdown document, continuation lines joined and anything
// after a pipe, `&` or a comment dropped.
func docInvocations(doc string) []string {
	var out []string
	inBlock := false
	var pending string
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock && strings.TrimPrefix(line, "```") == "sh"
			continue
		}
		if !inBlock {
			continue
		}
		line = pending + strings.TrimSpace(line)
		if strings.HasSuffix(line, `\`) {
			pending = strings.TrimSuffix(line, `\`)
			continue
		}
		pending = ""
		for _, prefix := range []string{"shardgate ", "bin/shardgate "} {
			if strings.HasPrefix(line, prefix) {
				out = append(out, strings.TrimPrefix(line, prefix))
			}
		}
	}
	return out
}

// TestTroubleshootingCommandsParse: every `shardgate ...` command in
// docs/troubleshooting.md names a real subcommand and parses against its
// flags and arguments.
func TestTroubleshootingCommandsParse(t *testing.T) {
	lines := docInvocations(readDoc(t, "troubleshooting.md"))
	if len(lines) < 5 {
		t.Fatalf("found only %d shardgate commands: %q", len(lines), lines)
	}
	for _, line := range lines {
		words, err := shellWords(line)
		if err != nil {
			t.Errorf("shardgate %s: %v", line, err)
			continue
		}
		for i, w := range words {
			if w == "|" || w == "&" || w == "&&" || w == ";" || strings.HasPrefix(w, "#") {
				words = words[:i]
				break
			}
		}
		root := rootCommand()
		cmd, rest, err := root.Find(words)
		if err != nil || cmd == root || !cmd.Runnable() {
			t.Errorf("shardgate %s: no such command (%v)", line, err)
			continue
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Errorf("shardgate %s: %v", line, err)
			continue
		}
		if cmd.Args != nil {
			if err := cmd.Args(cmd, cmd.Flags().Args()); err != nil {
				t.Errorf("shardgate %s: %v", line, err)
			}
		}
	}
}
