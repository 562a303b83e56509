package hostnames

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"go.mau.fi/util/confusable"
	"golang.org/x/net/idna"
)

// Homograph defence (see the package doc, "IDN homographs"). Two rules sit on
// top of the IDNA mapping:
//
//  1. mixedScriptLabel: Normalise refuses a label whose letters come from
//     more than one of the scripts in confusableScripts (Latin, Greek,
//     Cyrillic, Armenian, Cherokee), such as "pаypal" with a Cyrillic "а".
//  2. skeleton: the block list also matches the name's "skeleton", in which
//     every label made only of look-alikes (lookalikes), digits and '-' is
//     replaced by its ASCII look-alike, so the all-Cyrillic "раураӏ.com" is
//     blocked by an entry for "paypal.com".

// confusableScripts are the scripts whose letters are easily mistaken for
// one another. A label may use letters of at most one of them.
var confusableScripts = []*unicode.RangeTable{unicode.Latin, unicode.Greek, unicode.Cyrillic, unicode.Armenian, unicode.Cherokee}

// extraLookalikes are look-alikes of ASCII letters that Unicode's
// confusables data maps elsewhere (the Cyrillic "п" to the Greek "π", the
// Armenian "ա" to "ɯ"), but that render like the ASCII letter in common
// fonts. They add to the data; they never override it.
var extraLookalikes = map[rune]byte{
	// Cyrillic
	'а': 'a', 'г': 'r', 'е': 'e', 'з': '3', 'о': 'o', 'п': 'n', 'р': 'p', 'с': 'c', 'у': 'y',
	'х': 'x', 'ь': 'b', 'ѕ': 's', 'і': 'i', 'ј': 'j', 'һ': 'h', 'ӏ': 'l', 'ԁ': 'd', 'ԛ': 'q',
	'ԝ': 'w', 'ү': 'y',
	// Greek
	'α': 'a', 'γ': 'y', 'η': 'n', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'υ': 'u',
	'χ': 'x', 'ω': 'w', 'ϲ': 'c', 'ϳ': 'j',
	// Armenian
	'ա': 'w', 'գ': 'q', 'զ': 'q', 'հ': 'h', 'ո': 'n', 'ս': 'u', 'ց': 'g', 'օ': 'o',
	// Latin letters outside ASCII that look like ASCII ones. U+A781 LATIN
	// SMALL LETTER TURNED L ("ꞁ", and its uppercase U+A780, which IDNA
	// lowercases to it) is in no mapping of confusables.txt (Unicode
	// 17.0.0), yet renders as a plain vertical stroke, like "l", in most
	// fonts.
	'ı': 'i', 'ȷ': 'j', 'ɑ': 'a', 'ɡ': 'g', 'ɩ': 'i', 'ꞁ': 'l',
}

// lookalikes maps every non-ASCII code point that is mistaken for an ASCII
// letter or digit to that letter (lowercase) or digit. It is built once,
// from Unicode's full confusables data (UTS #39 confusables.txt, through
// go.mau.fi/util/confusable):
//
//   - a code point whose prototype is the prototype of an ASCII letter or
//     digit, in either case, maps to it ("ѵ" to "v"; "ǀ", like "I" and "1",
//     has the prototype "l" and maps to "l"; where letters and digits share
//     a prototype, the lowercase letter wins, then the uppercase one's
//     letter, then the digit);
//   - a lowercase code point whose uppercase form qualifies maps to the same
//     letter (the Cyrillic "к", whose own prototype is "ĸ", is the lowercase
//     of "К", whose prototype is "K"): IDNA lowercases every name first, so
//     the uppercase look-alike would otherwise escape;
//   - extraLookalikes fill in what the data maps elsewhere.
var lookalikes = sync.OnceValue(func() map[rune]byte {
	prototype := func(r rune) string {
		if p := confusable.GetReplacement(r); p != "" {
			return p
		}
		return string(r)
	}
	byPrototype := map[string]byte{}
	add := func(r rune, c byte) {
		if p := prototype(r); byPrototype[p] == 0 {
			byPrototype[p] = c
		}
	}
	for c := byte('a'); c <= 'z'; c++ {
		add(rune(c), c)
	}
	for c := byte('a'); c <= 'z'; c++ {
		add(unicode.ToUpper(rune(c)), c)
	}
	for c := byte('0'); c <= '9'; c++ {
		add(rune(c), c)
	}
	m := map[rune]byte{}
	for r := rune(utf8.RuneSelf); r <= unicode.MaxRune; r++ {
		if p := confusable.GetReplacement(r); p != "" {
			if c, ok := byPrototype[p]; ok {
				m[r] = c
				continue
			}
		}
		if u := unicode.ToUpper(r); u != r {
			if c, ok := byPrototype[prototype(u)]; ok {
				m[r] = c
			}
		}
	}
	for r, c := range extraLookalikes {
		if _, ok := m[r]; !ok {
			m[r] = c
		}
	}
	return m
})

// mixedScriptLabel reports whether label (Unicode, already mapped) has
// letters from two or more of confusableScripts, and names them.
func mixedScriptLabel(label string) (string, string, bool) {
	first := -1
	for _, r := range label {
		var si int
		switch {
		case r < utf8.RuneSelf:
			if !('a' <= r && r <= 'z') && !('A' <= r && r <= 'Z') {
				continue
			}
			si = 0 // ASCII letters are Latin
		default:
			si = -1
			for i, t := range confusableScripts {
				if unicode.Is(t, r) {
					si = i
					break
				}
			}
			if si < 0 {
				continue
			}
		}
		if first < 0 {
			first = si
		} else if si != first {
			return scriptName(first), scriptName(si), true
		}
	}
	return "", "", false
}

func scriptName(i int) string {
	return [...]string{"Latin", "Greek", "Cyrillic", "Armenian", "Cherokee"}[i]
}

// checkScripts applies the mixed-script rule to a normalised (ASCII) name
// and returns a description of the problem, or "". Only "xn--" labels can
// mix scripts, so pure ASCII names cost one scan.
func checkScripts(name string) string {
	if !strings.Contains(name, "xn--") {
		return ""
	}
	for label := range strings.SplitSeq(name, ".") {
		if !strings.HasPrefix(label, "xn--") {
			continue
		}
		u, err := idna.Punycode.ToUnicode(label)
		if err != nil {
			return "label " + quoteHost(label) + " is not valid punycode"
		}
		if a, b, mixed := mixedScriptLabel(u); mixed {
			return "label " + quoteHost(u) + " mixes " + a + " and " + b + " letters (a look-alike of another name); use one script per label"
		}
	}
	return ""
}

// skeleton returns name with every "xn--" label that consists only of
// confusable letters, digits and '-' replaced by its ASCII look-alike, and
// whether any label was replaced. name must be normalised. Labels that are
// not entirely look-alikes are kept, so the skeleton of a genuinely
// non-Latin name is the name itself.
func skeleton(name string) (string, bool) {
	if !strings.Contains(name, "xn--") {
		return name, false
	}
	var b strings.Builder
	changed := false
	for i, label := range strings.Split(name, ".") {
		if i > 0 {
			b.WriteByte('.')
		}
		if s, ok := skeletonLabel(label); ok {
			b.WriteString(s)
			changed = true
			continue
		}
		b.WriteString(label)
	}
	if !changed {
		return name, false
	}
	return b.String(), true
}

func skeletonLabel(label string) (string, bool) {
	if !strings.HasPrefix(label, "xn--") {
		return "", false
	}
	u, err := idna.Punycode.ToUnicode(label)
	if err != nil {
		return "", false
	}
	out := make([]byte, 0, len(u))
	for _, r := range u {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9', r == '-':
			out = append(out, byte(r))
		default:
			c, ok := lookalikes()[r]
			if !ok {
				return "", false
			}
			out = append(out, c)
		}
	}
	return string(out), true
}
