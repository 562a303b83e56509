package hostnames

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// byteSrc turns fuzzer bytes into choices. When the bytes run out it goes on
// with a generator seeded from them, so a run is a function of its input.
type byteSrc struct {
	data []byte
	rng  *rand.Rand
}

func newByteSrc(data []byte) *byteSrc {
	return &byteSrc{data: data, rng: rand.New(rand.NewPCG(hashString(string(data)), uint64(len(data))))}
}

func (s *byteSrc) done() bool { return len(s.data) == 0 }

func (s *byteSrc) IntN(n int) int {
	if len(s.data) == 0 {
		return s.rng.IntN(n)
	}
	b := s.data[0]
	s.data = s.data[1:]
	return int(b) % n
}

// FuzzEngine decodes the input into a sequence of upserts, removes, object
// deletes and re-creates, and block list changes over the property test's
// universe, checks every invariant after each, and checks at the end that a
// restart from the final live set and its statuses restores the same state.
func FuzzEngine(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09"))
	f.Add([]byte("takeover ping pong between deployments of one owner"))
	f.Fuzz(func(t *testing.T, data []byte) {
		src := newByteSrc(data)
		h := newHarness(t)
		for n := 0; !src.done() && n < 200; n++ {
			h.apply(h.genOp(src))
		}
		h.checkFinal(src)
	})
}

// FuzzNormalise checks that Normalise never panics, that its output is
// lowercase ASCII, valid and idempotent, that the ASCII fast path agrees with
// the IDNA Lookup profile, and that a block entry made of a name blocks it.
func FuzzNormalise(f *testing.F) {
	for _, s := range []string{
		"example.com", " Example.COM ", "аррӏе.com", "xn--80ak6aa92e.com", "Bücher.Example",
		"ｅｘａｍｐｌｅ。com", "*.example.com", "example.com.", "1.2.3.4", "ab--cd.com", "faß.de",
		"a\u200db.com", "pаypal.com", "ѕһор.раураӏ.com", "ραγ.example", "\u0627\u0644\u0639\u0631\u0628\u064a\u0629.example", "\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := Normalise(s)
		if err != nil {
			var herr *Error
			if !errors.As(err, &herr) || herr.Reason != ReasonInvalidHostname {
				t.Fatalf("Normalise(%q) error %v is not an InvalidHostname *Error", s, err)
			}
			if out != "" {
				t.Fatalf("Normalise(%q) = %q with an error", s, out)
			}
			if _, blocked := MustBlockList(".example.com").Match(s); blocked {
				t.Fatalf("invalid %q reported blocked", s)
			}
			return
		}
		if out != strings.ToLower(out) || !isASCIIString(out) {
			t.Fatalf("Normalise(%q) = %q: not lowercase ASCII", s, out)
		}
		if len(out) > MaxHostnameLength || strings.HasSuffix(out, ".") || strings.Contains(out, "*") {
			t.Fatalf("Normalise(%q) = %q: not a valid hostname", s, out)
		}
		again, err := Normalise(out)
		if err != nil || again != out {
			t.Fatalf("not idempotent: Normalise(%q) = %q, Normalise(%q) = %q, %v", s, out, out, again, err)
		}
		// The fast path must agree with the IDNA profile.
		trimmed := strings.TrimSpace(s)
		if _, fast := lowerSimpleASCII(trimmed); fast {
			slow, ierr := idna.Lookup.ToASCII(trimmed)
			if ierr != nil || slow != out {
				t.Fatalf("fast path %q for %q; IDNA says %q, %v", out, s, slow, ierr)
			}
		}
		// For ASCII input, case never matters.
		if isASCIIString(s) {
			if up, err := Normalise(strings.ToUpper(s)); err != nil || up != out {
				t.Fatalf("Normalise(upper %q) = %q, %v; want %q", s, up, err, out)
			}
		}
		// A block list made of the name blocks it, in any spelling.
		if entry, blocked := MustBlockList(out).Match(s); !blocked || entry != out {
			t.Fatalf("exact entry %q does not block %q (%q, %v)", out, s, entry, blocked)
		}
		// A look-alike is blocked by an entry for the name it looks like,
		// and no accepted label mixes confusable scripts.
		// (A skeleton need not be a valid name itself: "ɩ0--0" looks
		// like "l0--0", which IDNA refuses for its "--" in the third and
		// fourth place; no block-list entry can be spelled like that.)
		if sk, ok := skeleton(out); ok {
			if bl, err := NewBlockList(sk); err == nil {
				if _, blocked := bl.Match(s); !blocked {
					t.Fatalf("%q (skeleton %q) is not blocked by an entry for its skeleton", s, sk)
				}
			}
		}
		if problem := checkScripts(out); problem != "" {
			t.Fatalf("Normalise(%q) = %q accepted, but %s", s, out, problem)
		}
		if len(out)+2 <= MaxHostnameLength {
			if entry, blocked := MustBlockList("." + out).Match("x." + out); !blocked || entry != "."+out {
				t.Fatalf("suffix entry .%s does not block x.%s", out, out)
			}
		}
	})
}

func isASCIIString(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
