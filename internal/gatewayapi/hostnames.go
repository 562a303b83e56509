/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"slices"
	"sort"
	"strings"
)

// Hostnames here are already lowercase DNS names as the CRDs validate them;
// a wildcard is "*." followed by a name. "" means "any hostname".

func isWildcard(h string) bool { return strings.HasPrefix(h, "*.") }

// wildcardCovers says whether wildcard w ("*.example.com") matches h, which
// may itself be a wildcard. A wildcard matches one or more labels, never the
// bare suffix: "*.example.com" matches "a.example.com" and "a.b.example.com"
// but not "example.com". A wildcard covers another wildcard with the same or
// a longer suffix.
func wildcardCovers(w, h string) bool {
	suffix := w[1:] // ".example.com"
	if isWildcard(h) {
		return strings.HasSuffix(h[1:], suffix)
	}
	return len(h) > len(suffix) && strings.HasSuffix(h, suffix)
}

// hostnameCovers says whether listener hostname l ("" = any) accepts every
// request hostname that h (possibly a wildcard) accepts.
func hostnameCovers(l, h string) bool {
	switch {
	case l == "":
		return true
	case l == h:
		return true
	case isWildcard(l):
		return wildcardCovers(l, h)
	}
	return false
}

// intersectHostname is the set of hostnames served for a route hostname r on
// a listener hostname l, per the HTTPRoute hostnames rules: the more specific
// of the two when one covers the other, nothing otherwise.
func intersectHostname(l, r string) (string, bool) {
	switch {
	case l == "":
		return r, true
	case r == "":
		return l, true
	case hostnameCovers(l, r):
		return r, true
	case hostnameCovers(r, l):
		return l, true
	}
	return "", false
}

// IntersectHostnames computes the hostnames a route serves on a listener.
// An empty, non-nil result with ok=false means no intersection; a listener
// and a route that both leave the hostname open give [""] (any).
func IntersectHostnames(listener string, route []string) (out []string, ok bool) {
	if len(route) == 0 {
		return []string{listener}, true
	}
	seen := map[string]bool{}
	for _, r := range route {
		r = strings.ToLower(r)
		if !validRouteHostname(r) {
			continue
		}
		h, ok := intersectHostname(listener, r)
		if ok && !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	sort.Strings(out)
	return out, len(out) > 0
}

// validRouteHostname reports whether a (lowercased) route hostname is one
// the Gateway API CRDs accept: an RFC 1123 name of at most 253 characters,
// optionally "*." followed by one. The apiserver refuses anything else, so
// this only matters for objects that skipped validation; it keeps "", "*",
// "*.*.x", names with control bytes and trailing dots from being served as
// catch-alls or passed to Envoy. Such a hostname intersects with nothing: a
// route left with no hostname is Accepted=False NoMatchingListenerHostname.
func validRouteHostname(h string) bool {
	h = strings.TrimPrefix(h, "*.")
	if h == "" || len(h) > 253 {
		return false
	}
	start := 0
	for i := 0; i <= len(h); i++ {
		if i < len(h) && h[i] != '.' {
			c := h[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
			continue
		}
		label := h[start:i]
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		start = i + 1
	}
	return true
}

// hostnameMoreSpecific orders hostnames by how specifically they match:
// exact names before wildcards, longer wildcards before shorter ones, and
// "" (any) last. Ties break alphabetically so the order is total.
func hostnameMoreSpecific(a, b string) bool {
	ra, rb := hostnameRank(a), hostnameRank(b)
	if ra != rb {
		return ra < rb
	}
	if ra == 1 && len(a) != len(b) {
		return len(a) > len(b)
	}
	return a < b
}

func hostnameRank(h string) int {
	switch {
	case h == "":
		return 2
	case isWildcard(h):
		return 1
	}
	return 0
}

// owner is the listener on a port that serves hostname h: the most specific
// listener hostname covering it (port listeners are sorted that way). This
// is listener isolation: a request matches at most one listener.
//
// The exact listener hostnames come first, sorted by name: an exact h is
// looked up among them (a shard with automatic HTTPS has one per name),
// and only the wildcards and the catch-all after them are walked.
func owner(port []*listenerState, h string) *listenerState {
	exact := sort.Search(len(port), func(i int) bool { return hostnameRank(port[i].hostname) != 0 })
	if hostnameRank(h) == 0 {
		if i, ok := slices.BinarySearchFunc(port[:exact], h, func(l *listenerState, h string) int { return strings.Compare(l.hostname, h) }); ok {
			return port[i]
		}
	}
	for _, l := range port[exact:] {
		if hostnameCovers(l.hostname, h) {
			return l
		}
	}
	return nil
}

func domain(h string) string {
	if h == "" {
		return "*"
	}
	return h
}

// coverStart and coverNext walk the wildcards that cover a hostname h, most
// specific first: for a.b.c, "*.b.c" then "*.c".
//
//	var buf [256]byte
//	for c, rest, ok := coverNext(coverStart(h), buf[:0]); ok; c, rest, ok = coverNext(rest, buf[:0]) {
//		... m[string(c)] ...
//	}
//
// Every non-empty hostname is also covered by "" (any), which the walk does
// not yield. Each wildcard is built in buf, valid until the next step, so a
// map lookup with string(c) allocates nothing.
func coverStart(h string) string {
	if isWildcard(h) {
		return h[2:]
	}
	return h
}

func coverNext(rest string, buf []byte) (wildcard []byte, next string, ok bool) {
	i := strings.IndexByte(rest, '.')
	if i < 0 {
		return nil, "", false
	}
	next = rest[i+1:]
	return append(append(buf, '*', '.'), next...), next, true
}
