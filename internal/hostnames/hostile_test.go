package hostnames

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/net/idna"
)

// punycode spells a Unicode name in its ASCII form without the script rules,
// so tests can feed the "xn--" spelling of a name Normalise refuses.
func punycode(t *testing.T, s string) string {
	t.Helper()
	a, err := idna.Punycode.ToASCII(s)
	if err != nil {
		t.Fatalf("punycode %q: %v", s, err)
	}
	return a
}

// TestHostileHostnames is the hostname part of the hostile-input matrix
// (RELIABILITY.md, "Hostile input"). Each row is one requested name against
// one block list, with the exact outcome: the reason (Reserved when the name
// is admitted) and a fragment the message must contain.
func TestHostileHostnames(t *testing.T) {
	blocked := MustBlockList(".apple.com", ".paypal.com", "example.com", ".pay.example", ".blocked.test")
	long := func(n int) string { // a valid name of exactly n characters
		var b strings.Builder
		for b.Len() < n {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			l := min(50, n-b.Len())
			if l <= 0 {
				break
			}
			b.WriteString(strings.Repeat("a", l))
		}
		s := b.String()
		if s[len(s)-1] == '.' {
			s = s[:len(s)-1] + "a"
		}
		return s[:n]
	}
	tests := []struct {
		name   string
		host   string
		reason Reason
		detail string // must appear in the decision message
	}{
		// IDN homographs (the rule is in the package doc).
		{"cyrillic whole-script look-alike of a blocked name", "аррӏе.com", ReasonBlocked, "look-alike"},
		{"cyrillic look-alike spelled in punycode", "xn--80ak6aa92e.com", ReasonBlocked, `".apple.com"`},
		{"cyrillic look-alike in uppercase punycode", "XN--80AK6AA92E.COM", ReasonBlocked, `".apple.com"`},
		{"cyrillic look-alike below a blocked suffix", "www.аррӏе.com", ReasonBlocked, `".apple.com"`},
		{"cyrillic look-alike of a blocked subdomain label", "ѕһор.раураӏ.com", ReasonBlocked, `".paypal.com"`},
		{"greek whole-script look-alike", "ραγ.example", ReasonBlocked, `".pay.example"`},
		{"mixed latin and cyrillic label", "pаypal.com", ReasonInvalidHostname, "mixes Latin and Cyrillic"},
		{"mixed latin and cyrillic label in punycode", punycode(t, "pаypal.com"), ReasonInvalidHostname, "mixes Latin and Cyrillic"},
		{"mixed greek and cyrillic label", "αрр.example", ReasonInvalidHostname, "mixes Greek and Cyrillic"},
		{"mixed latin and greek label", "αpple.com", ReasonInvalidHostname, "mixes Greek and Latin"},
		{"soft hyphen is mapped away", "pay\u00adpal.com", ReasonBlocked, `".paypal.com"`},
		{"full-width letters fold to ASCII", "ＥＸＡＭＰＬＥ.com", ReasonBlocked, `"example.com"`},
		{"ideographic full stop is a dot", "example。com", ReasonBlocked, `"example.com"`},
		{"zero-width joiner is refused", "pay\u200dpal.com", ReasonInvalidHostname, "internationalised"},
		{"genuine russian name is admitted", "пример.рф", ReasonReserved, "reserved"},
		{"latin with diacritics is admitted", "bücher.example", ReasonReserved, "reserved"},
		{"cyrillic name with non-look-alike letters is admitted", "яблоко.com", ReasonReserved, "reserved"},
		{"cjk mixed with latin is admitted", "shop中文.example", ReasonReserved, "reserved"},
		// Case and trailing-dot tricks.
		{"uppercase spelling of a blocked name", "EXAMPLE.com", ReasonBlocked, `"example.com"`},
		{"trailing dot is refused", "example.com.", ReasonInvalidHostname, "trailing dot"},
		{"trailing dot on an unblocked name is refused", "free.test.", ReasonInvalidHostname, "trailing dot"},
		{"two trailing dots are refused", "free.test..", ReasonInvalidHostname, ""},
		{"uppercase below a blocked suffix", "X.BLOCKED.TEST", ReasonBlocked, `".blocked.test"`},
		// Malformed names.
		{"empty", "", ReasonInvalidHostname, "empty"},
		{"white space only", " \t ", ReasonInvalidHostname, "empty"},
		{"single wildcard", "*", ReasonInvalidHostname, "wildcards"},
		{"double wildcard", "*.*.example.com", ReasonInvalidHostname, "wildcards"},
		{"wildcard below a free domain", "*.free.test", ReasonInvalidHostname, "wildcards"},
		{"254 characters", long(254), ReasonInvalidHostname, "at most 253"},
		{"253 characters is admitted", long(253), ReasonReserved, "reserved"},
		{"64-character label", strings.Repeat("a", 64) + ".test", ReasonInvalidHostname, "at most 63"},
		{"63-character label is admitted", strings.Repeat("a", 63) + ".test", ReasonReserved, "reserved"},
		{"null byte", "a\x00b.test", ReasonInvalidHostname, ""},
		{"newline", "a\nb.test", ReasonInvalidHostname, ""},
		{"DEL character", "a\x7fb.test", ReasonInvalidHostname, ""},
		{"invalid UTF-8", "a\xffb.test", ReasonInvalidHostname, "UTF-8"},
		{"empty label", "a..test", ReasonInvalidHostname, "empty label"},
		{"leading dot", ".a.test", ReasonInvalidHostname, "empty label"},
		{"IPv4 address", "192.0.2.1", ReasonInvalidHostname, "numeric"},
		{"invalid punycode label", "xn--zz-.test", ReasonInvalidHostname, ""},
		{"1 MB hostname", strings.Repeat("a.", 500000) + "test", ReasonInvalidHostname, "at most 253"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(blocked)
			d, _ := e.Upsert(lh("u", 0, "alice", 1, tt.host))
			if d.Reason != tt.reason {
				t.Fatalf("Upsert(%q) = %s %q; want %s", tt.host, d.Reason, d.Message, tt.reason)
			}
			if !strings.Contains(d.Message, tt.detail) {
				t.Fatalf("Upsert(%q) message %q does not contain %q", tt.host, d.Message, tt.detail)
			}
			if len(d.Message) > 1024 {
				t.Fatalf("message is %d bytes long; a hostile name must not blow up status", len(d.Message))
			}
			// The pre-flight check agrees with the engine, and a refused name is
			// held by nobody.
			err := e.CanReserve("bob", tt.host)
			var herr *Error
			switch tt.reason {
			case ReasonReserved:
				if _, ok := e.Holder(tt.host); !ok {
					t.Fatalf("%q admitted but not held", tt.host)
				}
				if !errors.As(err, &herr) || herr.Reason != ReasonHostnameInUse {
					t.Fatalf("CanReserve by another owner = %v; want HostnameInUse", err)
				}
			default:
				if _, ok := e.Holder(tt.host); ok {
					t.Fatalf("refused %q is held", tt.host)
				}
				if !errors.As(err, &herr) || herr.Reason != tt.reason {
					t.Fatalf("CanReserve(%q) = %v; want %s", tt.host, err, tt.reason)
				}
			}
		})
	}
}

// TestHomographBlockEntries: block-list entries are not subject to the
// script rule (blocking is always safe), and an entry in Unicode blocks its
// punycode spelling.
func TestHomographBlockEntries(t *testing.T) {
	b, err := NewBlockList("pаypal.com", ".аррӏе.net")
	if err != nil {
		t.Fatalf("mixed-script entry refused: %v", err)
	}
	if e, ok := b.Match("www.xn--80ak6aa92e.net"); !ok || e != ".xn--80ak6aa92e.net" {
		t.Fatalf("Match = %q, %v", e, ok)
	}
	// An ASCII request is never blocked by a non-ASCII entry's skeleton:
	// the skeleton applies to requests only.
	if e, ok := b.Match("apple.net"); ok {
		t.Fatalf("apple.net blocked by %q", e)
	}
}

// TestSkeleton pins the skeleton of a few names.
func TestSkeleton(t *testing.T) {
	for in, want := range map[string]string{
		"example.com":             "example.com",
		"xn--80ak6aa92e.com":      "apple.com",
		"xn--bcher-kva.example":   "xn--bcher-kva.example", // ü is not a look-alike
		punycode(t, "ѕһор.com"):   "shop.com",
		punycode(t, "пример.com"): punycode(t, "пример.com"),
	} {
		got, _ := skeleton(in)
		if got != want {
			t.Errorf("skeleton(%q) = %q; want %q", in, got, want)
		}
	}
}
