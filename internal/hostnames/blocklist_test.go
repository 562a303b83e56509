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

// TestReservedForTheProvider: a shard's canonical hostname and apex domain
// are refused like exact block-list entries, with a message saying why, and
// a claim on one is revoked when it becomes reserved.
func TestReservedForTheProvider(t *testing.T) {
	base := MustBlockList(".blocked.test", "router-x.apps.test")
	b := base.WithReserved(map[string]string{
		"router-gw.apps.test": "it is the canonical hostname of shard default/gw",
		"Apps.Test":           "it is the apex domain of shard default/gw",
		"bad name":            "skipped",
	})
	for _, tc := range []struct {
		host, entry, why string
	}{
		{"router-gw.apps.test", "router-gw.apps.test", "it is the canonical hostname of shard default/gw"},
		{"ROUTER-GW.apps.test", "router-gw.apps.test", "it is the canonical hostname of shard default/gw"},
		{"apps.test", "apps.test", "it is the apex domain of shard default/gw"},
		{"router-x.apps.test", "router-x.apps.test", ""}, // an ordinary entry keeps its message
		{"x.blocked.test", ".blocked.test", ""},
	} {
		entry, blocked := b.Match(tc.host)
		if !blocked || entry != tc.entry {
			t.Errorf("Match(%q) = %q, %v; want %q", tc.host, entry, blocked, tc.entry)
		}
		if why, ok := b.Reserved(entry); why != tc.why || ok != (tc.why != "") {
			t.Errorf("Reserved(%q) = %q, %v; want %q", entry, why, ok, tc.why)
		}
	}
	for _, free := range []string{"a.apps.test", "router-gw2.apps.test", "www.router-gw.apps.test", "test"} {
		if entry, blocked := b.Match(free); blocked {
			t.Errorf("Match(%q) blocked by %q", free, entry)
		}
	}
	if got := b.Entries(); !slices.Equal(got, base.Entries()) {
		t.Errorf("Entries() = %q; reserved names must not be listed as entries (%q)", got, base.Entries())
	}

	e := New(base)
	e.Upsert(lh("a1", 1, "alice", 1, "router-gw.apps.test"))
	e.Upsert(lh("b1", 2, "bob", 1, "apps.test"))
	changes := e.SetBlockList(b)
	if len(changes) != 2 {
		t.Fatalf("changes %+v; want both claims revoked", changes)
	}
	for _, c := range changes {
		if c.New.Reason != ReasonBlocked || !strings.Contains(c.New.Message, "reserved for the provider's shard") || c.New.Reserved {
			t.Errorf("%s: %+v", c.UID, c.New)
		}
	}
	if err := e.CanReserve("carol", "apps.test"); err == nil || !strings.Contains(err.Error(), "apex domain") {
		t.Errorf("CanReserve(apps.test) = %v", err)
	}
	checkInvariants(t, e)
}
