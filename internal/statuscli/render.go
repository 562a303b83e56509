package statuscli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/liggitt/tabwriter"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"
)

// Format is an output format of `shardgate status`: one of Formats, or
// "jsonpath=TEMPLATE" or "custom-columns=SPEC" as kubectl's -o takes them.
type Format string

const (
	// FormatTable is the default: NAMESPACE, LEASEHOST, SHARD, HOST,
	// ADMITTED, REASON, CERT.
	FormatTable Format = "table"
	// FormatWide adds SOURCE, OWNER, DSEQ, CANONICAL, ROUTE, GATEWAY,
	// RESERVED and CERT-REASON.
	FormatWide Format = "wide"
	// FormatJSON is Document as JSON.
	FormatJSON Format = "json"
	// FormatYAML is Document as YAML, with the same field names.
	FormatYAML Format = "yaml"
)

// Prefixes of the templated formats. The template applies to Document's
// JSON ({"items": [Row, ...]}) for jsonpath, and to each Row's JSON for
// custom-columns, exactly as kubectl applies them to a List and its items.
const (
	JSONPathPrefix      = "jsonpath="
	CustomColumnsPrefix = "custom-columns="
)

// Formats lists the formats without a template, for help and errors.
var Formats = []Format{FormatTable, FormatWide, FormatJSON, FormatYAML}

// ParseFormat accepts "", "table", "wide", "json", "yaml",
// "jsonpath=TEMPLATE" and "custom-columns=NAME:PATH,..."; "" is table. A
// template that does not parse is an error here, before anything is
// listed.
func ParseFormat(s string) (Format, error) {
	if s == "" {
		return FormatTable, nil
	}
	for _, f := range Formats {
		if Format(s) == f {
			return f, nil
		}
	}
	if strings.HasPrefix(s, JSONPathPrefix) || strings.HasPrefix(s, CustomColumnsPrefix) {
		if _, err := NewPrinter(Format(s)); err != nil {
			return "", err
		}
		return Format(s), nil
	}
	names := make([]string, 0, len(Formats)+2)
	for _, f := range Formats {
		names = append(names, string(f))
	}
	names = append(names, JSONPathPrefix+"TEMPLATE", CustomColumnsPrefix+"SPEC")
	return "", fmt.Errorf("unknown output format %q; use one of %s", s, strings.Join(names, ", "))
}

// Document is what -o json and -o yaml print: {"items": [Row, ...]}. Items
// is never null.
type Document struct {
	Items []Row `json:"items"`
}

// tableColumns are the columns of the table formats, in order; the wide
// ones only -o wide shows (kubectl's priority 1), where they are. The
// default table stays under 108 columns for typical rows (100 without
// CERT): an Akash owner address alone is 44 characters.
var tableColumns = []struct {
	name string
	wide bool
}{
	{"SOURCE", true}, {"NAMESPACE", false}, {"LEASEHOST", false}, {"OWNER", true}, {"DSEQ", true},
	{"SHARD", false}, {"HOST", false}, {"ADMITTED", false}, {"REASON", false},
	{"CANONICAL", true}, {"ROUTE", true}, {"GATEWAY", true}, {"RESERVED", true},
	// Added with automatic HTTPS, after every earlier column in both
	// formats, so that no earlier column moves.
	{"CERT", false}, {"CERT-REASON", true},
}

// watchWidths are the least widths (padding included) the columns of a
// watched table get, so that rows of later changes, whose cells are often
// wider than those of the first listing, still line up with its header.
var watchWidths = map[string]int{
	"SOURCE": 15, "NAMESPACE": 20, "LEASEHOST": 20, "OWNER": 48, "DSEQ": 10, "SHARD": 14,
	"HOST": 36, "ADMITTED": 11, "REASON": 18, "CERT": 10, "CERT-REASON": 20, "CANONICAL": 36, "ROUTE": 20, "GATEWAY": 24,
}

// Printer prints rows in one format. It keeps state between calls, as
// kubectl's printers do: a table prints its header once, and every table
// goes through one tab writer that remembers its column widths (kubectl get
// --watch's), so that --watch prints the rows of each change under the
// first header, in its columns.
type Printer struct {
	format  Format
	table   printers.ResourcePrinter // table, wide and custom-columns
	path    *printers.JSONPathPrinter
	columns []customColumn
	// tw is the tab writer of the table formats, for out. When watching,
	// widths are the column widths the header was printed with (at least
	// watchWidths), which every later row is laid out in.
	tw       *tabwriter.Writer
	out      io.Writer
	watching bool
	fixed    bool
	widths   []int
}

// Watching readies p for --watch: the columns of its table are as wide as
// the first listing needs, and at least as watchWidths says, and stay so:
// every later row is laid out in the header's columns. A cell wider than
// its column pushes the rest of its row right, and of the rows printed with
// it (the rows of one object), and no others.
func (p *Printer) Watching() {
	if p.table == nil {
		return
	}
	p.watching, p.widths = true, nil
	if p.columns != nil {
		return
	}
	for _, c := range tableColumns {
		if !c.wide || p.format == FormatWide {
			p.widths = append(p.widths, max(watchWidths[c.name], len(c.name)+tabPadding))
		}
	}
}

// tabPadding is the padding of cli-runtime's tab writer: three spaces.
const tabPadding = 3

// printTable prints t through the printer's tab writer for w (cli-runtime's,
// the one kubectl uses), in fixed columns when watching.
func (p *Printer) printTable(t *metav1.Table, w io.Writer) error {
	if p.tw == nil || p.out != w {
		p.tw, p.out = printers.GetNewTabWriter(w), w
	}
	if p.watching && p.widths != nil {
		p.tw.SetRememberedWidths(p.widths)
	}
	if err := p.table.PrintObj(t, p.tw); err != nil {
		return err
	}
	if err := p.tw.Flush(); err != nil {
		return err
	}
	if p.watching && !p.fixed && len(t.Rows) > 0 {
		// The header's columns, for every later row.
		p.widths, p.fixed = p.tw.RememberedWidths(), true
	}
	return nil
}

type customColumn struct {
	header string
	path   *jsonpath.JSONPath
}

// NewPrinter returns a printer for format (see ParseFormat).
func NewPrinter(format Format) (*Printer, error) {
	p := &Printer{format: format}
	s := string(format)
	switch {
	case format == FormatTable || format == "":
		p.format = FormatTable
		p.table = printers.NewTablePrinter(printers.PrintOptions{})
	case format == FormatWide:
		p.table = printers.NewTablePrinter(printers.PrintOptions{Wide: true})
	case format == FormatJSON || format == FormatYAML:
	case strings.HasPrefix(s, JSONPathPrefix):
		tmpl := strings.TrimPrefix(s, JSONPathPrefix)
		if tmpl == "" {
			return nil, errors.New("jsonpath template is empty")
		}
		jp, err := printers.NewJSONPathPrinter(tmpl)
		if err != nil {
			return nil, fmt.Errorf("parse jsonpath template %q: %w", tmpl, err)
		}
		jp.AllowMissingKeys(true)
		p.path = jp
	case strings.HasPrefix(s, CustomColumnsPrefix):
		cols, err := parseCustomColumns(strings.TrimPrefix(s, CustomColumnsPrefix))
		if err != nil {
			return nil, err
		}
		p.columns = cols
		p.table = printers.NewTablePrinter(printers.PrintOptions{})
	default:
		_, err := ParseFormat(s)
		if err == nil {
			err = fmt.Errorf("unknown output format %q", s)
		}
		return nil, err
	}
	return p, nil
}

// parseCustomColumns reads kubectl's custom-columns spec:
// "NAME:PATH[,NAME:PATH...]", where PATH is a JSONPath expression, with or
// without braces and the leading dot (".host", "{.host}" and "host" are one
// column).
func parseCustomColumns(spec string) ([]customColumn, error) {
	if spec == "" {
		return nil, errors.New("custom-columns needs at least one NAME:PATH column")
	}
	var cols []customColumn
	for _, part := range strings.Split(spec, ",") {
		name, path, ok := strings.Cut(part, ":")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("custom-columns column %q is not NAME:PATH", part)
		}
		expr := strings.TrimSuffix(strings.TrimPrefix(path, "{"), "}")
		if !strings.HasPrefix(expr, ".") {
			expr = "." + expr
		}
		jp := jsonpath.New(name).AllowMissingKeys(true)
		if err := jp.Parse("{" + expr + "}"); err != nil {
			return nil, fmt.Errorf("custom-columns column %s: parse %q: %w", name, path, err)
		}
		cols = append(cols, customColumn{header: name, path: jp})
	}
	return cols, nil
}

// Print writes rows to w. An empty row list prints nothing in the table
// formats (as kubectl does; Execute says so on stderr) and an empty list
// in the others.
func (p *Printer) Print(rows []Row, w io.Writer) error {
	items := make([]any, len(rows))
	for i := range rows {
		items[i] = rows[i]
	}
	return p.print(document(rows), items, func() *metav1.Table { return rowTable(rows) }, w)
}

// print writes doc (json, yaml, jsonpath), its items (custom-columns) or
// table() (table, wide) to w.
func (p *Printer) print(doc any, items []any, table func() *metav1.Table, w io.Writer) error {
	switch {
	case p.format == FormatJSON:
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case p.format == FormatYAML:
		b, err := yaml.Marshal(doc)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case p.path != nil:
		obj, err := toUnstructured(doc)
		if err != nil {
			return err
		}
		return p.path.PrintObj(&unstructured.Unstructured{Object: obj}, w)
	case p.columns != nil:
		t, err := p.customTable(items)
		if err != nil {
			return err
		}
		return p.printTable(t, w)
	default:
		return p.printTable(table(), w)
	}
}

// Render writes rows to w in format with a new Printer. It is pure: the
// same rows give the same bytes.
func Render(rows []Row, format Format, w io.Writer) error {
	p, err := NewPrinter(format)
	if err != nil {
		return err
	}
	return p.Print(rows, w)
}

func document(rows []Row) Document {
	if rows == nil {
		rows = []Row{}
	}
	return Document{Items: rows}
}

func toUnstructured(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	return out, json.Unmarshal(b, &out)
}

// rowTable is rows as a meta.k8s.io Table, the wide columns at priority 1,
// for cli-runtime's table printer (the one kubectl uses).
func rowTable(rows []Row) *metav1.Table {
	t := &metav1.Table{}
	for _, c := range tableColumns {
		def := metav1.TableColumnDefinition{Name: c.name, Type: "string"}
		if c.wide {
			def.Priority = 1
		}
		t.ColumnDefinitions = append(t.ColumnDefinitions, def)
	}
	for _, r := range rows {
		cells := []string{r.Source, r.Namespace, r.LeaseHost, r.Owner, strconv.FormatUint(r.DSeq, 10), r.Shard, r.Host, r.Admitted, r.Reason,
			r.CanonicalHostname, r.Route, r.Gateway, r.Reserved, r.Certificate, r.CertificateReason}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cellValues(cells)})
	}
	return t
}

func (p *Printer) customTable(items []any) (*metav1.Table, error) {
	t := &metav1.Table{}
	for _, c := range p.columns {
		t.ColumnDefinitions = append(t.ColumnDefinitions, metav1.TableColumnDefinition{Name: c.header, Type: "string"})
	}
	for _, item := range items {
		obj, err := toUnstructured(item)
		if err != nil {
			return nil, err
		}
		var cells []any
		for _, c := range p.columns {
			results, err := c.path.FindResults(obj)
			if err != nil {
				return nil, fmt.Errorf("custom-columns column %s: %w", c.header, err)
			}
			var values []string
			for _, set := range results {
				for _, v := range set {
					values = append(values, fmt.Sprint(v.Interface()))
				}
			}
			if len(values) == 0 {
				cells = append(cells, "<none>") // a missing field, as kubectl prints it
				continue
			}
			cells = append(cells, cell(strings.Join(values, ",")))
		}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells})
	}
	return t, nil
}

func cellValues(cells []string) []any {
	out := make([]any, len(cells))
	for i, c := range cells {
		out[i] = cell(c)
	}
	return out
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
