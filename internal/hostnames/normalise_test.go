package hostnames

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/net/idna"
)

func TestNormalise(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	// 4 labels of 63 plus 3 dots = 255; trim to exactly 253 and 254.
	long253 := label63 + "." + label63 + "." + label63 + "." + strings.Repeat("b", 61)
	long254 := label63 + "." + label63 + "." + label63 + "." + strings.Repeat("b", 62)

	tests := []struct {
		in   string
		want string // "" means: must be refused as InvalidHostname
	}{
		{"example.com", "example.com"},
		{"  Example.COM\t", "example.com"},
		{"API.Tenant.Example.Com", "api.tenant.example.com"},
		{"localhost", "localhost"},
		{"a-b.c-d.example", "a-b.c-d.example"},
		{"123.example.com", "123.example.com"},
		{long253, long253},
		{label63 + ".com", label63 + ".com"},
		// IDNA: unicode and punycode spellings are one name.
		{"аррӏе.com", "xn--80ak6aa92e.com"},
		{"xn--80ak6aa92e.com", "xn--80ak6aa92e.com"},
		{"XN--80AK6AA92E.COM", "xn--80ak6aa92e.com"},
		{"Bücher.Example", "xn--bcher-kva.example"},
		{"BÜCHER.example", "xn--bcher-kva.example"},
		{"ｅｘａｍｐｌｅ。com", "example.com"}, // full-width letters, ideographic full stop
		{"faß.de", "xn--fa-hia.de"},    // non-transitional: ß is kept

		{"", ""},
		{"   ", ""},
		{"*.example.com", ""},
		{"a.*.example.com", ""},
		{"*", ""},
		{"example.com.", ""},
		{"example.com。", ""}, // a trailing dot in disguise
		{".example.com", ""},
		{"a..example.com", ""},
		{long254, ""},
		{strings.Repeat("a", 64) + ".com", ""},
		{"under_score.com", ""},
		{"sp ace.com", ""},
		{"-lead.com", ""},
		{"trail-.com", ""},
		{"ab--cd.com", ""},  // reserved IDNA form
		{"xn--abc.com", ""}, // invalid punycode
		{"xn--.com", ""},
		{"xn--example-.com", ""}, // punycode of plain ASCII is refused
		{"1.2.3.4", ""},
		{"foo.123", ""},
		{"exa\x00mple.com", ""},
		{"exa/mple.com", ""},
		{"\xff.com", ""},
	}
	for _, tt := range tests {
		got, err := Normalise(tt.in)
		if tt.want == "" {
			var herr *Error
			if !errors.As(err, &herr) || herr.Reason != ReasonInvalidHostname {
				t.Errorf("Normalise(%q) = %q, %v; want an *Error with reason InvalidHostname", tt.in, got, err)
			}
			if got != "" {
				t.Errorf("Normalise(%q) returned %q with an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Normalise(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestNormaliseErrorMessages(t *testing.T) {
	tests := []struct{ in, contains string }{
		{"", "empty"},
		{"*.example.com", "wildcard"},
		{"example.com.", "trailing dot"},
		{strings.Repeat("a", 64) + ".com", "at most 63"},
		{strings.Repeat("a.", 127) + "com", "at most 253"},
		{"1.2.3.4", "numeric"},
	}
	for _, tt := range tests {
		_, err := Normalise(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.contains) {
			t.Errorf("Normalise(%q) error = %v; want it to mention %q", tt.in, err, tt.contains)
		}
	}
	// A hostile, huge input does not make a huge message.
	_, err := Normalise(strings.Repeat("x", 100000))
	if err == nil || len(err.Error()) > 1000 {
		t.Errorf("error for a 100000-byte name is %d bytes long", len(err.Error()))
	}
}

// TestNormaliseFastPathMatchesIDNA checks that the ASCII fast path gives what
// the IDNA Lookup profile gives for the inputs it accepts.
func TestNormaliseFastPathMatchesIDNA(t *testing.T) {
	for _, in := range []string{
		"example.com", "EXAMPLE.com", "a-b.c", "ab-cd.com", "abc--d.com", "a--b.com", "ab-.com",
		"-ab.com", "a.b.c.d.e.f", "0.a", "xn-a.com", "XN-A.COM",
	} {
		fast, ok := lowerSimpleASCII(in)
		if !ok {
			continue
		}
		slow, err := idna.Lookup.ToASCII(in)
		if err != nil {
			if checkDNS(fast, false) == "" {
				t.Errorf("%q: IDNA refuses (%v) but the fast path accepts %q", in, err, fast)
			}
			continue
		}
		if slow != fast {
			t.Errorf("%q: fast path %q, IDNA %q", in, fast, slow)
		}
	}
}
