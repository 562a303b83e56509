package statuscli

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

func cond(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg}
}

func TestRowsFor(t *testing.T) {
	lh := func(ns, name string, conds []metav1.Condition, shards ...shardgatev1alpha1.ShardStatus) shardgatev1alpha1.LeaseHost {
		return shardgatev1alpha1.LeaseHost{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: shardgatev1alpha1.LeaseHostSpec{
				Lease:    shardgatev1alpha1.LeaseRef{Owner: "o", DSeq: 9, GSeq: 2, OSeq: 3},
				Hostname: name + ".example.test",
			},
			Status: shardgatev1alpha1.LeaseHostStatus{Conditions: conds, Shards: shards, Route: name},
		}
	}
	shard := func(name string, conds ...metav1.Condition) shardgatev1alpha1.ShardStatus {
		return shardgatev1alpha1.ShardStatus{Name: name, Gateway: "infra/" + name, Host: "h." + name, CanonicalHostname: "router-" + name, Conditions: conds}
	}
	reservedTrue := []metav1.Condition{cond("Ready", "True", "Ready", ""), cond("Reserved", "True", "Reserved", "held")}
	reservedFalse := []metav1.Condition{cond("Reserved", "False", "HostnameInUse", "in use")}

	type view struct{ ns, lh, shard, host, reserved, admitted, reason, message string }
	cases := []struct {
		name  string
		items []shardgatev1alpha1.LeaseHost
		want  []view
	}{
		{"admitted per shard, sorted by shard",
			[]shardgatev1alpha1.LeaseHost{lh("a", "x", reservedTrue,
				shard("s2", cond("Admitted", "False", "NotAdmitted", "no listener")),
				shard("s1", cond("Admitted", "True", "Admitted", "ok")))},
			[]view{
				{"a", "x", "s1", "h.s1", "True", "True", "Admitted", "ok"},
				{"a", "x", "s2", "h.s2", "True", "False", "NotAdmitted", "no listener"},
			}},
		{"Reserved=False takes precedence over the shard's reason",
			[]shardgatev1alpha1.LeaseHost{lh("a", "x", reservedFalse, shard("s1", cond("Admitted", "False", "NotAdmitted", "stale")))},
			[]view{{"a", "x", "s1", "h.s1", "False", "False", "HostnameInUse", "in use"}}},
		{"no shard entries, refused: the requested host and the Reserved reason",
			[]shardgatev1alpha1.LeaseHost{lh("a", "x", reservedFalse)},
			[]view{{"a", "x", "", "x.example.test", "False", "False", "HostnameInUse", "in use"}}},
		{"no shard entries, reserved: never admitted",
			[]shardgatev1alpha1.LeaseHost{lh("a", "x", reservedTrue)},
			[]view{{"a", "x", "", "x.example.test", "True", "", "Reserved", "held"}}},
		{"no shard entries, reserved, Ready=False: the Ready reason",
			[]shardgatev1alpha1.LeaseHost{lh("a", "x", append(reservedTrue[1:], cond("Ready", "False", "NoShards", "no shard selects it")))},
			[]view{{"a", "x", "", "x.example.test", "True", "", "NoShards", "no shard selects it"}}},
		{"no shard entries, refused: Reserved wins over Ready",
			[]shardgatev1alpha1.LeaseHost{lh("a", "x", append(reservedFalse, cond("Ready", "False", "NoShards", "n")))},
			[]view{{"a", "x", "", "x.example.test", "False", "False", "HostnameInUse", "in use"}}},
		{"no status at all",
			[]shardgatev1alpha1.LeaseHost{lh("a", "x", nil)},
			[]view{{"a", "x", "", "x.example.test", "", "", "", ""}}},
		{"a shard entry without an Admitted condition",
			[]shardgatev1alpha1.LeaseHost{lh("a", "x", reservedTrue, shard("s1"))},
			[]view{{"a", "x", "s1", "h.s1", "True", "", "", ""}}},
		{"a shard entry with CertificateReady keeps Admitted as the reason",
			[]shardgatev1alpha1.LeaseHost{lh("a", "x", reservedTrue,
				shard("s1", cond("Admitted", "True", "Admitted", "ok"), cond("CertificateReady", "False", "Backoff", "404")))},
			[]view{{"a", "x", "s1", "h.s1", "True", "True", "Admitted", "ok"}}},
		{"sorted by namespace, then LeaseHost",
			[]shardgatev1alpha1.LeaseHost{lh("b", "a", nil), lh("a", "z", nil), lh("a", "b", nil)},
			[]view{
				{"a", "b", "", "b.example.test", "", "", "", ""},
				{"a", "z", "", "z.example.test", "", "", "", ""},
				{"b", "a", "", "a.example.test", "", "", "", ""},
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []view
			for _, r := range RowsFor(tc.items) {
				if r.Owner != "o" || r.DSeq != 9 || r.GSeq != 2 || r.OSeq != 3 || r.Route != r.LeaseHost {
					t.Errorf("lease fields not carried: %+v", r)
				}
				got = append(got, view{r.Namespace, r.LeaseHost, r.Shard, r.Host, r.Reserved, r.Admitted, r.Reason, r.Message})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("rows:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestRowsForCertificate: a shard entry's CertificateReady condition fills
// the certificate fields; an entry without one, and a LeaseHost without
// entries, leave them empty.
func TestRowsForCertificate(t *testing.T) {
	items := []shardgatev1alpha1.LeaseHost{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x"},
		Status: shardgatev1alpha1.LeaseHostStatus{Shards: []shardgatev1alpha1.ShardStatus{
			{Name: "s1", Conditions: []metav1.Condition{cond("Admitted", "True", "Admitted", "ok"), cond("CertificateReady", "False", "Backoff", "got 404")}},
			{Name: "s2", Conditions: []metav1.Condition{cond("Admitted", "True", "Admitted", "ok"), cond("CertificateReady", "True", "ShardCertificate", "wildcard")}},
			{Name: "s3", Conditions: []metav1.Condition{cond("Admitted", "True", "Admitted", "ok")}},
		}},
	}, {ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "y"}}}
	type view struct{ shard, status, reason, message string }
	var got []view
	for _, r := range RowsFor(items) {
		got = append(got, view{r.Shard, r.Certificate, r.CertificateReason, r.CertificateMessage})
	}
	want := []view{{"s1", "False", "Backoff", "got 404"}, {"s2", "True", "ShardCertificate", "wildcard"}, {"s3", "", "", ""}, {"", "", "", ""}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("certificate fields:\n got %+v\nwant %+v", got, want)
	}
	var table bytes.Buffer
	if err := Render(RowsFor(items), FormatWide, &table); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	if h := strings.Fields(lines[0]); h[len(h)-2] != "CERT" || h[len(h)-1] != "CERT-REASON" {
		t.Errorf("wide header does not end in CERT CERT-REASON: %q", lines[0])
	}
	for i, w := range [][2]string{{"False", "Backoff"}, {"True", "ShardCertificate"}, {"-", "-"}, {"-", "-"}} {
		f := strings.Fields(lines[i+1])
		if f[len(f)-2] != w[0] || f[len(f)-1] != w[1] {
			t.Errorf("row %d ends %q, want %q", i, f[len(f)-2:], w)
		}
	}
}

func TestFilter(t *testing.T) {
	rows := []Row{
		{LeaseHost: "1", Owner: "alice", Shard: "shard-a", Gateway: "infra/shard-a"},
		{LeaseHost: "2", Owner: "alice", Shard: "shard-b", Gateway: "infra/shard-b"},
		{LeaseHost: "3", Owner: "bob", Shard: "shard-a", Gateway: "infra/shard-a"},
		{LeaseHost: "4", Owner: "bob"},
	}
	cases := []struct {
		f    Filter
		want string
	}{
		{Filter{}, "1234"},
		{Filter{Owner: "alice"}, "12"},
		{Filter{Owner: "ALICE"}, ""}, // owners are compared verbatim, as ownership does
		{Filter{Shard: "shard-a"}, "13"},
		{Filter{Shard: "infra/shard-b"}, "2"},
		{Filter{Owner: "bob", Shard: "shard-a"}, "3"},
		{Filter{Shard: "nope"}, ""},
	}
	for _, tc := range cases {
		var got string
		for _, r := range tc.f.Apply(rows) {
			got += r.LeaseHost
		}
		if got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.f, got, tc.want)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"": FormatTable, "table": FormatTable, "wide": FormatWide, "json": FormatJSON, "yaml": FormatYAML} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"JSON", "xml", "name"} {
		if _, err := ParseFormat(in); err == nil {
			t.Errorf("ParseFormat(%q) accepted", in)
		}
	}
}

func TestRenderEmpty(t *testing.T) {
	for format, want := range map[Format]string{
		// As kubectl: an empty table prints nothing (Execute says so on stderr).
		FormatTable:                         "",
		FormatJSON:                          "{\n  \"items\": []\n}\n",
		FormatYAML:                          "items: []\n",
		JSONPathPrefix + "{.items[*].host}": "",
		CustomColumnsPrefix + "HOST:.host":  "",
	} {
		var b bytes.Buffer
		if err := Render(nil, format, &b); err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Errorf("%s: got %q, want %q", format, b.String(), want)
		}
	}
	if err := Render(nil, "xml", &bytes.Buffer{}); err == nil {
		t.Error("Render accepted format xml")
	}
}

func TestRenderTemplates(t *testing.T) {
	rows := []Row{
		{Source: "LeaseHost", Namespace: "t", LeaseHost: "web", Shard: "shard-a", Host: "web.a.test", Admitted: "True", Reason: "Admitted",
			Certificate: "True", CertificateReason: "Issued"},
		{Source: "ProviderHost", Namespace: "t", LeaseHost: "web", Shard: "shard-b", Host: "web.b.test", Admitted: "False", Reason: "HostnameInUse"},
	}
	for format, want := range map[Format]string{
		JSONPathPrefix + `{range .items[*]}{.shard}={.admitted}{"\n"}{end}`: "shard-a=True\nshard-b=False\n",
		JSONPathPrefix + "{.items[1].reason}":                               "HostnameInUse",
		CustomColumnsPrefix + "SHARD:.shard,HOST:{.host},GW:gateway":        "SHARD     HOST         GW\nshard-a   web.a.test   -\nshard-b   web.b.test   -\n",
		FormatTable: "NAMESPACE   LEASEHOST   SHARD     HOST         ADMITTED   REASON          CERT\n" +
			"t           web         shard-a   web.a.test   True       Admitted        True\n" +
			"t           web         shard-b   web.b.test   False      HostnameInUse   -\n",
		FormatWide: "SOURCE         NAMESPACE   LEASEHOST   OWNER   DSEQ   SHARD     HOST         ADMITTED   REASON          CANONICAL   ROUTE   GATEWAY   RESERVED   CERT   CERT-REASON\n" +
			"LeaseHost      t           web         -       0      shard-a   web.a.test   True       Admitted        -           -       -         -          True   Issued\n" +
			"ProviderHost   t           web         -       0      shard-b   web.b.test   False      HostnameInUse   -           -       -         -          -      -\n",
	} {
		if _, err := ParseFormat(string(format)); err != nil {
			t.Fatalf("ParseFormat(%q): %v", format, err)
		}
		var b bytes.Buffer
		if err := Render(rows, format, &b); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if b.String() != want {
			t.Errorf("%s:\ngot  %q\nwant %q", format, b.String(), want)
		}
	}
	for _, bad := range []string{"jsonpath=", "jsonpath={.items[", "custom-columns=", "custom-columns=HOST", "custom-columns=:.host"} {
		if _, err := ParseFormat(bad); err == nil {
			t.Errorf("ParseFormat(%q) accepted", bad)
		}
	}
}

func TestPrinterKeepsOneHeaderAcrossCalls(t *testing.T) {
	p, err := NewPrinter(FormatTable)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, host := range []string{"a.test", "b.test"} {
		if err := p.Print([]Row{{Namespace: "t", LeaseHost: "x", Host: host}}, &b); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(b.String(), "NAMESPACE"); n != 1 {
		t.Errorf("%d headers, want 1:\n%s", n, b.String())
	}
	if !strings.Contains(b.String(), "a.test") || !strings.Contains(b.String(), "b.test") {
		t.Errorf("rows missing:\n%s", b.String())
	}
}

// TestWatchedRowsKeepTheHeaderColumns: rows printed after the header, with
// cells narrower or wider than the first ones, start where its columns do.
func TestWatchedRowsKeepTheHeaderColumns(t *testing.T) {
	for _, format := range []Format{FormatTable, FormatWide, CustomColumnsPrefix + "NS:.namespace,HOST:.host,REASON:.reason"} {
		p, err := NewPrinter(format)
		if err != nil {
			t.Fatal(err)
		}
		p.Watching()
		var b bytes.Buffer
		batches := [][]Row{
			{{Source: "LeaseHost", Namespace: "tenant-a", LeaseHost: "web", Shard: "shard-a", Host: "web.shard-a.apps.example.test", Admitted: "True", Reason: "Admitted"}},
			{{Source: "LeaseHost", Namespace: "b", LeaseHost: "x", Shard: "s", Host: "x.test", Admitted: "False", Reason: "Blocked"}},
			{{Source: "ProviderHost", Namespace: "0123456789abcdef", LeaseHost: "a-longer-name", Owner: "akash1alice0000000000000000000000000000000", DSeq: 123456,
				Shard: "shard-b", Host: "a-longer-name.shard-b.example", Admitted: "Unknown", Reason: "HostnameInUse", Gateway: "infra/shard-b"}},
			// Wider than any column: it may push its own row, no other.
			// (The row before is too, for custom-columns, whose columns
			// start as wide as the first listing needs.)
			{{Source: "LeaseHost", Namespace: strings.Repeat("n", 50), LeaseHost: "y", Host: strings.Repeat("h", 70), Reason: "Pending"}},
			{{Source: "LeaseHost", Namespace: "c", LeaseHost: "z", Shard: "s", Host: "z.test", Admitted: "True", Reason: "Admitted"}},
		}
		for _, rows := range batches {
			if err := p.Print(rows, &b); err != nil {
				t.Fatal(err)
			}
		}
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		if len(lines) != 6 {
			t.Fatalf("%s: %d lines, want a header and 5 rows:\n%s", format, len(lines), b.String())
		}
		header := columnStarts(lines[0])
		for i, line := range lines[1:] {
			if i == 3 || (i == 2 && strings.HasPrefix(string(format), CustomColumnsPrefix)) {
				continue // the rows wider than the columns
			}
			if got := columnStarts(line); !reflect.DeepEqual(got, header) {
				t.Errorf("%s: a row's columns start at %v, the header's at %v:\n%s", format, got, header, b.String())
			}
		}
	}
}

// columnStarts returns where the cells of a table line start.
func columnStarts(line string) []int {
	var at []int
	for i := range line {
		if line[i] != ' ' && (i == 0 || (i >= 2 && line[i-1] == ' ' && line[i-2] == ' ')) {
			at = append(at, i)
		}
	}
	return at
}

func TestFilterUnknown(t *testing.T) {
	rows := []Row{
		{Namespace: "a", Owner: "alice", Shard: "s2", Gateway: "infra/s2"},
		{Namespace: "a", Owner: "alice", Shard: "s1", Gateway: "infra/s1"},
		{Namespace: "a", Owner: "bob"},
	}
	for _, tc := range []struct {
		filter Filter
		rows   []Row
		want   string
	}{
		{Filter{}, rows, ""},
		{Filter{Shard: "s1"}, rows, ""},
		{Filter{Shard: "infra/s2"}, rows, ""},
		{Filter{Owner: "bob"}, rows, ""},
		{Filter{Owner: "bob", Shard: "s1"}, rows, ""},
		{Filter{Shard: "s3"}, rows, "no shard named s3 serves a LeaseHost in namespace a; shards: s1, s2"},
		{Filter{Shard: "s1"}, rows[2:], "no shard named s1 serves a LeaseHost in namespace a; no LeaseHost there has a shard entry"},
		{Filter{Owner: "carol", Shard: "s1"}, rows, "no LeaseHosts of owner carol in namespace a"},
		{Filter{Owner: "carol", Shard: "s3"}, rows, "no shard named s3 serves a LeaseHost in namespace a; shards: s1, s2"},
	} {
		err := tc.filter.unknown(tc.rows, "a")
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.filter, got, tc.want)
		}
	}
}

func TestRetiredRowsAreNotUnadmitted(t *testing.T) {
	rows := []Row{
		{Admitted: "True", Reason: "Admitted"},
		{Admitted: "False", Reason: "HostnameInUse"},
		{Admitted: "False", Reason: "TransferredAway"},
		{Admitted: "", Reason: "TransferredAway"},
		{Admitted: "Unknown", Reason: "Pending"},
	}
	if n := countUnadmitted(rows); n != 2 {
		t.Errorf("unadmitted = %d, want 2 (TransferredAway is retired, not unadmitted)", n)
	}
}

func TestRenderKeepsOneRowPerLine(t *testing.T) {
	var b bytes.Buffer
	rows := []Row{{Namespace: "a", LeaseHost: "x", Reason: "Bad\tReason\nsplit"}}
	if err := Render(rows, FormatTable, &b); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "\n"); n != 2 {
		t.Errorf("%d lines, want 2:\n%s", n, b.String())
	}
}

// TestHelpNamesEveryJSONField keeps the documented contract and the struct
// tags together.
func TestHelpNamesEveryJSONField(t *testing.T) {
	b, err := json.Marshal(Row{})
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	want := []string{"source", "namespace", "leaseHost", "owner", "dseq", "gseq", "oseq", "shard", "gateway", "host",
		"canonicalHostname", "route", "reserved", "admitted", "reason", "message", "certificate", "certificateReason", "certificateMessage"}
	if len(fields) != len(want) {
		t.Errorf("Row has %d JSON fields, the contract %d: %v", len(fields), len(want), fields)
	}
	for _, f := range want {
		if _, ok := fields[f]; !ok {
			t.Errorf("Row has no JSON field %q (every field is always present)", f)
		}
		if !strings.Contains(Help, f) {
			t.Errorf("the help does not document JSON field %q", f)
		}
	}
}

// TestCertificateFromEvent: a ProviderHost's CertificateReady as its latest
// Certify Event tells it.
func TestCertificateFromEvent(t *testing.T) {
	for _, tc := range []struct{ reason, status string }{
		{shardgatev1alpha1.ReasonCertificateIssued, "True"},
		{shardgatev1alpha1.ReasonShardCertificate, "True"},
		{shardgatev1alpha1.ReasonCertificateIssuing, "False"},
		{shardgatev1alpha1.ReasonCertificateQueued, "False"},
		{shardgatev1alpha1.ReasonCertificateBackoff, "False"},
		{"Failed", "False"}, // cert-manager's own
		{shardgatev1alpha1.ReasonCertificateRevoked, ""},
	} {
		status, reason, msg := certificateFromEvent(eventsv1.Event{Reason: tc.reason, Note: "note"})
		wantReason, wantMsg := tc.reason, "note"
		if tc.status == "" {
			wantReason, wantMsg = "", ""
		}
		if status != tc.status || reason != wantReason || msg != wantMsg {
			t.Errorf("%s: got %q %q %q, want %q %q %q", tc.reason, status, reason, msg, tc.status, wantReason, wantMsg)
		}
	}
}
