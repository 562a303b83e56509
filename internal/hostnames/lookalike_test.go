package hostnames

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"go.mau.fi/util/confusable"
)

// The hostile review's whole-script look-alikes that the earlier hand-picked
// table admitted: each is blocked by the entry for the name it imitates.
func TestLookalikesOfBlockedNames(t *testing.T) {
	b, err := NewBlockList(".visa.com", ".apple.com", ".vk.com", ".kraken.com")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ host, entry string }{
		{"ѵіѕа.com", ".visa.com"},     // Cyrillic izhitsa, i, dze, a
		{"appǀe.com", ".apple.com"},   // Latin letter dental click for l
		{"ѵк.com", ".vk.com"},         // Cyrillic izhitsa, ka
		{"кгакеп.com", ".kraken.com"}, // Cyrillic ka, ghe, a, ka, ie, pe
		{"www.ѵіѕа.com", ".visa.com"},
		{"appꞁe.com", ".apple.com"}, // U+A781 Latin small letter turned l: not in confusables.txt
		{"APPꞀE.COM", ".apple.com"}, // its uppercase U+A780, lowercased by IDNA
	} {
		h, err := Normalise(tc.host)
		if err != nil {
			t.Errorf("%s: not a valid name, so not the review's attack: %v", tc.host, err)
			continue
		}
		sk, _ := skeleton(h)
		e, blocked := b.Match(tc.host)
		if !blocked || e != tc.entry {
			t.Errorf("%s (%s, skeleton %s): Match = %q, %v; want blocked by %q", tc.host, h, sk, e, blocked, tc.entry)
		}
	}
	// Genuine names stay admitted.
	for _, host := range []string{"пример.com", "bücher.example", "visa.org", "kraken.io"} {
		if e, blocked := b.Match(host); blocked {
			t.Errorf("%s blocked by %q", host, e)
		}
	}
}

// prototypeOf is UTS #39's prototype of r: its confusables.txt mapping, or
// r itself.
func prototypeOf(r rune) string {
	if p := confusable.GetReplacement(r); p != "" {
		return p
	}
	return string(r)
}

// Every single code point that Unicode's confusables data (UTS #39) maps to
// the prototype of an ASCII letter or digit (in either case) maps to an
// ASCII letter or digit with that prototype; nothing maps elsewhere.
func TestLookalikeTableCoversConfusables(t *testing.T) {
	ascii := map[string][]byte{} // prototype → the lowercase letters and digits with it
	for c := byte('0'); c <= 'z'; c++ {
		if !('0' <= c && c <= '9') && !('a' <= c && c <= 'z') {
			continue
		}
		for _, r := range []rune{rune(c), unicode.ToUpper(rune(c))} {
			p := prototypeOf(r)
			ascii[p] = append(ascii[p], c)
		}
	}
	table := lookalikes()
	covered := 0
	for r := rune(utf8.RuneSelf); r <= unicode.MaxRune; r++ {
		want, confusableOfASCII := ascii[confusable.GetReplacement(r)]
		got, mapped := table[r]
		if mapped && !('a' <= got && got <= 'z' || '0' <= got && got <= '9') {
			t.Fatalf("%U %q maps to %q, not an ASCII letter or digit", r, r, got)
		}
		if !confusableOfASCII {
			continue
		}
		covered++
		if !mapped {
			t.Errorf("%U %q (UTS #39 prototype %q) does not map", r, r, confusable.GetReplacement(r))
			continue
		}
		if !strings.ContainsRune(string(want), rune(got)) {
			t.Errorf("%U %q maps to %q; its prototype %q is that of %q", r, r, got, confusable.GetReplacement(r), want)
		}
	}
	if covered < 1000 {
		t.Fatalf("only %d confusables of ASCII letters and digits: is the data complete?", covered)
	}
	t.Logf("%d code points confusable with an ASCII letter or digit, all mapped; table size %d", covered, len(table))
}

// TestTurnedLIsNotInConfusables pins the reason U+A781 is in
// extraLookalikes: Unicode's confusables data (the version go.mau.fi/util
// ships) maps neither it nor its uppercase U+A780 to anything. If a newer
// version maps it to "l", the data covers it and the extra entry can go.
func TestTurnedLIsNotInConfusables(t *testing.T) {
	for _, r := range []rune{'\ua780', '\ua781'} {
		if p := confusable.GetReplacement(r); p != "" {
			t.Errorf("confusables.txt now maps %U to %q: drop it from extraLookalikes if that is the prototype of l", r, p)
		}
	}
	if lookalikes()['\ua781'] != 'l' {
		t.Errorf("U+A781 is not a look-alike of l")
	}
}
