package statuscli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"
)

// Format is an output format of `shardgate status`.
type Format string

const (
	// FormatTable is the default: NAMESPACE, LEASEHOST, OWNER, DSEQ, SHARD,
	// HOST, ADMITTED, REASON.
	FormatTable Format = "table"
	// FormatWide adds CANONICAL, ROUTE, GATEWAY and RESERVED.
	FormatWide Format = "wide"
	// FormatJSON is Document as JSON.
	FormatJSON Format = "json"
	// FormatYAML is Document as YAML, with the same field names.
	FormatYAML Format = "yaml"
)

// Formats lists the accepted formats, for help and errors.
var Formats = []Format{FormatTable, FormatWide, FormatJSON, FormatYAML}

// ParseFormat accepts "", "table", "wide", "json" and "yaml"; "" is table.
func ParseFormat(s string) (Format, error) {
	if s == "" {
		return FormatTable, nil
	}
	for _, f := range Formats {
		if Format(s) == f {
			return f, nil
		}
	}
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return "", fmt.Errorf("unknown output format %q; use one of %s", s, strings.Join(names, ", "))
}

// Document is what -o json and -o yaml print: {"items": [Row, ...]}. Items
// is never null.
type Document struct {
	Items []Row `json:"items"`
}

var (
	tableColumns = []string{"NAMESPACE", "LEASEHOST", "OWNER", "DSEQ", "SHARD", "HOST", "ADMITTED", "REASON"}
	wideColumns  = append(append([]string{}, tableColumns...), "CANONICAL", "ROUTE", "GATEWAY", "RESERVED")
)

// Render writes rows to w in format. It is pure: the same rows give the same
// bytes. Tables print "-" for empty cells; an empty row list prints only the
// header.
func Render(rows []Row, format Format, w io.Writer) error {
	switch format {
	case FormatTable, "":
		return renderTable(rows, false, w)
	case FormatWide:
		return renderTable(rows, true, w)
	case FormatJSON:
		b, err := json.MarshalIndent(document(rows), "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case FormatYAML:
		b, err := yaml.Marshal(document(rows))
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	default:
		_, err := ParseFormat(string(format))
		return err
	}
}

func document(rows []Row) Document {
	if rows == nil {
		rows = []Row{}
	}
	return Document{Items: rows}
}

func renderTable(rows []Row, wide bool, w io.Writer) error {
	// The same tabwriter settings as kubectl's tables.
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	cols := tableColumns
	if wide {
		cols = wideColumns
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, r := range rows {
		cells := []string{r.Namespace, r.LeaseHost, r.Owner, strconv.FormatUint(r.DSeq, 10), r.Shard, r.Host, r.Admitted, r.Reason}
		if wide {
			cells = append(cells, r.CanonicalHostname, r.Route, r.Gateway, r.Reserved)
		}
		for i, c := range cells {
			cells[i] = cell(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// cell keeps one value on one table line: empty becomes "-", and control
// characters (tabs, newlines) become spaces so they cannot break columns.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
