package hostnames

import (
	"slices"
	"strings"
	"testing"
)

func TestBlockListMatch(t *testing.T) {
	b := MustBlockList(
		"exact.example.org",
		".example.com",
		"  .Shouty.NET  ",
		"UPPER.example.io",
		"xn--80ak6aa92e.com", // the Cyrillic "аррӏе.com"
		".bücher.example",    // unicode suffix entry
		"trailing.example.dev.",
		".deep.a.example.org",
	)
	tests := []struct {
		host      string
		wantEntry string // "" means not blocked
	}{
		{"exact.example.org", "exact.example.org"},
		{"EXACT.Example.ORG", "exact.example.org"},
		{"sub.exact.example.org", ""}, // exact entries do not block subdomains
		{"example.org", ""},

		{"example.com", ".example.com"}, // a suffix entry blocks its apex
		{"a.example.com", ".example.com"},
		{"a.b.example.com", ".example.com"},
		{"x.y.z.w.example.com", ".example.com"},
		{"A.B.EXAMPLE.COM", ".example.com"},
		{"notexample.com", ""},
		{"example.com.evil.net", ""},
		{"com", ""},

		{"shouty.net", ".shouty.net"}, // uppercase, padded entry
		{"www.SHOUTY.net", ".shouty.net"},
		{"upper.example.io", "upper.example.io"},
		{"Upper.Example.IO", "upper.example.io"},

		{"аррӏе.com", "xn--80ak6aa92e.com"}, // unicode request, punycode entry
		{"XN--80AK6AA92E.com", "xn--80ak6aa92e.com"},
		{"apple.com", ""}, // not a confusable fold
		{"shop.BÜCHER.example", ".xn--bcher-kva.example"},
		{"xn--bcher-kva.example", ".xn--bcher-kva.example"},

		{"trailing.example.dev", "trailing.example.dev"},

		{"deep.a.example.org", ".deep.a.example.org"},
		{"x.deep.a.example.org", ".deep.a.example.org"},
		{"a.example.org", ""},

		{"*.example.com", ""}, // invalid names are never "blocked"; they are invalid
		{"", ""},
	}
	for _, tt := range tests {
		entry, blocked := b.Match(tt.host)
		if blocked != (tt.wantEntry != "") || entry != tt.wantEntry {
			t.Errorf("Match(%q) = %q, %v; want %q, %v", tt.host, entry, blocked, tt.wantEntry, tt.wantEntry != "")
		}
	}
}

func TestBlockListPrecedence(t *testing.T) {
	b := MustBlockList(".example.com", ".a.example.com", "b.a.example.com")
	tests := []struct{ host, want string }{
		{"b.a.example.com", "b.a.example.com"},  // exact beats suffixes
		{"c.b.a.example.com", ".a.example.com"}, // longest suffix beats shorter
		{"a.example.com", ".a.example.com"},
		{"z.example.com", ".example.com"},
	}
	for _, tt := range tests {
		if got, _ := b.Match(tt.host); got != tt.want {
			t.Errorf("Match(%q) = %q; want %q", tt.host, got, tt.want)
		}
	}
}

func TestNewBlockListRefusesInvalidEntries(t *testing.T) {
	for _, entry := range []string{"", "  ", ".", "..", "*.example.com", "a.*.com", "bad_name.com", "a..b", strings.Repeat("x", 64) + ".com", "xn--abc.com"} {
		if b, err := NewBlockList("ok.example", entry); err == nil {
			t.Errorf("NewBlockList(%q) = %v; want an error", entry, b.Entries())
		}
	}
	_, err := NewBlockList("*.example.com")
	if err == nil || !strings.Contains(err.Error(), `".example.com"`) {
		t.Errorf("wildcard entry error %v does not suggest the suffix form", err)
	}
}

func TestBlockListEntries(t *testing.T) {
	b := MustBlockList("B.example", "a.example", ".C.example", "a.example", "b.example.")
	want := []string{".c.example", "a.example", "b.example"}
	if got := b.Entries(); !slices.Equal(got, want) {
		t.Errorf("Entries() = %q; want %q", got, want)
	}
	if b.Len() != 3 {
		t.Errorf("Len() = %d; want 3", b.Len())
	}
	var nilList *BlockList
	if _, blocked := nilList.Match("example.com"); blocked || nilList.Len() != 0 || nilList.Entries() != nil {
		t.Error("a nil block list must block nothing")
	}
}
