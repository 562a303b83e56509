package hostnames

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// DNS limits enforced by Normalise, counted on the ASCII (punycode) form.
const (
	MaxHostnameLength = 253
	MaxLabelLength    = 63
)

// Reason is a condition reason for the LeaseHost Reserved condition. The
// values are CamelCase and stable: they are written to status and used in
// metrics.
type Reason string

const (
	// ReasonReserved: the name is held by this claimant's claim key.
	ReasonReserved Reason = "Reserved"
	// ReasonBlocked: a block-list entry matches the name.
	ReasonBlocked Reason = "Blocked"
	// ReasonHostnameInUse: another owner holds the name.
	ReasonHostnameInUse Reason = "HostnameInUse"
	// ReasonWithheld: another deployment of the same owner holds the name.
	ReasonWithheld Reason = "Withheld"
	// ReasonTransferredAway: a takeover by another deployment of the same
	// owner moved the name away from this claimant.
	ReasonTransferredAway Reason = "TransferredAway"
	// ReasonInvalidHostname: the requested name is not a valid hostname.
	ReasonInvalidHostname Reason = "InvalidHostname"
)

// Error is a refusal with a condition reason. Normalise returns it with
// ReasonInvalidHostname; CanReserve returns it with any refusing reason.
// Its message never names another tenant.
type Error struct {
	Reason Reason
	// Host is the hostname as it was given (for invalid names) or its
	// normalised form.
	Host   string
	Detail string
}

func (e *Error) Error() string {
	return fmt.Sprintf("hostname %s: %s", quoteHost(e.Host), e.Detail)
}

// quoteHost quotes a caller-supplied name for a message, cut short so that a
// hostile or broken input cannot blow up a status condition.
func quoteHost(h string) string {
	const max = 300
	if len(h) > max {
		return fmt.Sprintf("%q...", h[:max])
	}
	return fmt.Sprintf("%q", h)
}

func invalid(host, format string, args ...any) *Error {
	return &Error{Reason: ReasonInvalidHostname, Host: host, Detail: fmt.Sprintf(format, args...)}
}

// Normalise returns the canonical form of a requested hostname, the form in
// which names are compared, held and blocked.
//
// The rule: trim surrounding white space, then map the name with the IDNA
// (UTS #46) Lookup profile of golang.org/x/net/idna, non-transitional. The
// mapping lowercases, applies Unicode compatibility mappings (full-width
// letters, ideographic full stops) and converts every non-ASCII label to its
// punycode "xn--" form; an "xn--" label in the input is decoded, validated and
// re-encoded. So "Bücher.Example", "bücher.example" and
// "xn--bcher-kva.example" all normalise to "xn--bcher-kva.example". The
// result must then be an RFC 1123 hostname: labels of [a-z0-9-] that neither
// start nor end with "-", each 1 to 63 characters, at most 253 in all.
//
// Refused, with an *Error of reason InvalidHostname: the empty name, a
// wildcard ("*" anywhere), a trailing dot (refused, not stripped: a LeaseHost
// names one host and "a.example." is a typo we do not guess at), empty
// labels, invalid characters or IDNA labels, over-long names and labels, and
// a numeric last label (which also refuses IPv4 addresses; Gateway API
// hostnames may not be IPs).
//
// Normalisation makes the Unicode and punycode spellings of one name equal.
// It does not fold confusables: the Cyrillic "аррӏе.com" is
// "xn--80ak6aa92e.com", a different name from "apple.com". It does refuse a
// label that mixes Latin, Greek, Cyrillic, Armenian or Cherokee letters, and
// the block list matches whole-script look-alikes by their skeleton (see the
// package doc, "IDN homographs").
//
// Normalise is idempotent: Normalise(Normalise(x)) == Normalise(x).
func Normalise(host string) (string, error) {
	s := strings.TrimSpace(host)
	if s == "" {
		return "", invalid(host, "hostname is empty")
	}
	if strings.ContainsRune(s, '*') {
		return "", invalid(host, "wildcards are not allowed; a LeaseHost names exactly one host")
	}
	if !utf8.ValidString(s) {
		return "", invalid(host, "hostname is not valid UTF-8")
	}
	out, idn, problem := mapName(s, true)
	if problem != "" {
		return "", invalid(host, "%s", problem)
	}
	if idn {
		if problem := checkScripts(out); problem != "" {
			return "", invalid(host, "%s", problem)
		}
	}
	return out, nil
}

// mapName maps a trimmed, non-empty name to its ASCII form and validates it,
// returning whether the IDNA mapping (rather than the ASCII fast path) was
// needed, and a description of the first problem, or "".
func mapName(s string, refuseNumericTLD bool) (string, bool, string) {
	out, ok := lowerSimpleASCII(s)
	if !ok {
		a, err := idna.Lookup.ToASCII(s)
		if err != nil {
			return "", true, fmt.Sprintf("not a valid internationalised domain name: %v", err)
		}
		out = a
	}
	if problem := checkDNS(out, refuseNumericTLD); problem != "" {
		return "", !ok, problem
	}
	return out, !ok, ""
}

// lowerSimpleASCII is the fast path of Normalise. For names made only of
// ASCII letters, digits, '-' and '.', with no label that has "--" at its
// third and fourth characters (the IDNA reserved form, e.g. "xn--"), the IDNA
// Lookup mapping is exactly ASCII lowercasing; checkDNS then applies the same
// checks the IDNA validation would (hyphen placement). FuzzNormalise checks
// this against the slow path. It allocates only when the input has capitals.
func lowerSimpleASCII(s string) (string, bool) {
	upper := false
	labelStart := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case 'A' <= c && c <= 'Z':
			upper = true
		case c == '-':
			if i-labelStart == 3 && s[i-1] == '-' {
				return "", false
			}
		case c == '.':
			labelStart = i + 1
		default:
			return "", false
		}
	}
	if upper {
		return strings.ToLower(s), true
	}
	return s, true
}

// checkDNS validates an already-mapped ASCII name and returns a description
// of the first problem, or "". numericTLD refuses a last label of digits only.
func checkDNS(s string, refuseNumericTLD bool) string {
	if s == "" {
		return "hostname is empty"
	}
	if s[len(s)-1] == '.' {
		return "a trailing dot is not allowed"
	}
	if len(s) > MaxHostnameLength {
		return fmt.Sprintf("hostname is %d characters long; at most %d are allowed", len(s), MaxHostnameLength)
	}
	allDigits := true
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			c := s[i]
			switch {
			case 'a' <= c && c <= 'z', c == '-':
				allDigits = false
			case '0' <= c && c <= '9':
			default:
				return fmt.Sprintf("invalid character %q; only a-z, 0-9, '-' and '.' are allowed", c)
			}
			continue
		}
		label := s[start:i]
		switch {
		case label == "":
			return "empty label"
		case len(label) > MaxLabelLength:
			return fmt.Sprintf("label %q is %d characters long; at most %d are allowed", label, len(label), MaxLabelLength)
		case label[0] == '-' || label[len(label)-1] == '-':
			return fmt.Sprintf("label %q must not start or end with '-'", label)
		}
		if i < len(s) {
			start = i + 1
			allDigits = true
		}
	}
	if refuseNumericTLD && allDigits {
		return "the last label must not be numeric (IP addresses are not hostnames)"
	}
	return ""
}
