package hostnames

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// BlockList is the provider's set of refused names. It is immutable once
// built, so one list may be shared by any number of goroutines and engines.
//
// An entry "example.com" blocks exactly that name. An entry ".example.com"
// blocks example.com itself and every name under it at any depth
// (a.b.example.com), but not notexample.com. Entries are normalised like
// requested names (Normalise), so "Example.COM", "bücher.example" and
// "xn--bcher-kva.example" are what they look like. One trailing dot on an
// entry is accepted and dropped (the config package does the same), and
// numeric last labels are accepted (blocking is always safe).
//
// Match costs O(number of labels of the name): it looks up the name and each
// of its label suffixes in two maps, and never scans the entries.
type BlockList struct {
	exact   map[string]string // normalised name -> entry
	suffix  map[string]string // normalised domain, no leading dot -> entry
	entries []string          // normalised entries, sorted and deduplicated
	// reserved: exact names kept for the provider itself (its shards'
	// canonical hostnames and apex domains) -> why, for the message. They
	// are matched like exact entries but are not among Entries.
	reserved map[string]string
}

// NewBlockList builds a block list. It refuses the whole list if any entry is
// invalid, naming every invalid entry, so a bad config never silently blocks
// less than intended; the caller keeps its previous list.
func NewBlockList(entries ...string) (*BlockList, error) {
	b := &BlockList{exact: map[string]string{}, suffix: map[string]string{}}
	var errs []error
	for i, raw := range entries {
		e, isSuffix, err := normaliseEntry(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("block list entry %d %q: %w", i, raw, err))
			continue
		}
		if isSuffix {
			b.suffix[e[1:]] = e
		} else {
			b.exact[e] = e
		}
		b.entries = append(b.entries, e)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.Sort(b.entries)
	b.entries = slices.Compact(b.entries)
	return b, nil
}

// MustBlockList is NewBlockList for fixed, known-good entries (tests, defaults).
func MustBlockList(entries ...string) *BlockList {
	b, err := NewBlockList(entries...)
	if err != nil {
		panic(err)
	}
	return b
}

func normaliseEntry(raw string) (entry string, isSuffix bool, err error) {
	e := strings.TrimSpace(raw)
	if rest, ok := strings.CutPrefix(e, "*."); ok {
		return "", false, fmt.Errorf("wildcards are not supported; use %q to block a domain and every name under it", "."+rest)
	}
	e, isSuffix = strings.CutPrefix(e, ".")
	if len(e) > 1 {
		e = strings.TrimSuffix(e, ".")
	}
	// Entries go through the same mapping as requests, except that a
	// numeric last label is allowed.
	s := strings.TrimSpace(e)
	if s == "" || strings.ContainsRune(s, '*') || !utf8.ValidString(s) {
		return "", false, errors.New("not a hostname or .domain")
	}
	out, _, problem := mapName(s, false)
	if problem != "" {
		return "", false, errors.New(problem)
	}
	if isSuffix {
		return "." + out, true, nil
	}
	return out, false, nil
}

// Match reports whether host is blocked and by which entry (in its
// normalised form, with the leading dot for suffix entries). An exact entry
// wins over a suffix entry, and a longer suffix over a shorter one. A name
// that does not normalise is never reported blocked: it is refused as
// invalid before the block list is consulted. Match on a nil list blocks
// nothing.
func (b *BlockList) Match(host string) (entry string, blocked bool) {
	h, err := Normalise(host)
	if err != nil {
		return "", false
	}
	return b.match(h)
}

// match is Match for a name that is already normalised. A name that is not
// blocked as written is checked again as its skeleton (confusables.go): an
// all-Cyrillic look-alike of a blocked name is blocked by the same entry.
// ASCII names without "xn--" labels have no skeleton and cost nothing more.
func (b *BlockList) match(h string) (string, bool) {
	if b == nil {
		return "", false
	}
	if e, ok := b.matchName(h); ok {
		return e, true
	}
	if sk, ok := skeleton(h); ok {
		return b.matchName(sk)
	}
	return "", false
}

// lookalike reports whether entry blocks host only through host's skeleton,
// for messages.
func lookalike(host, entry string) bool {
	e, isSuffix := strings.CutPrefix(entry, ".")
	if host == e {
		return false
	}
	return !isSuffix || !strings.HasSuffix(host, "."+e)
}

func (b *BlockList) matchName(h string) (string, bool) {
	if e, ok := b.exact[h]; ok {
		return e, true
	}
	if _, ok := b.reserved[h]; ok {
		return h, true
	}
	if len(b.suffix) == 0 {
		return "", false
	}
	for s := h; ; {
		if e, ok := b.suffix[s]; ok {
			return e, true
		}
		i := strings.IndexByte(s, '.')
		if i < 0 {
			return "", false
		}
		s = s[i+1:]
	}
}

// Entries returns the normalised entries, sorted.
func (b *BlockList) Entries() []string {
	if b == nil {
		return nil
	}
	return slices.Clone(b.entries)
}

// Len returns the number of distinct entries.
func (b *BlockList) Len() int {
	if b == nil {
		return 0
	}
	return len(b.entries)
}

// WithReserved returns a copy of b that also refuses the given exact names,
// each with why it is reserved for the provider (for example "it is the
// canonical hostname of shard default/shard-a"). Names that do not normalise
// are skipped: no tenant can claim them anyway. An entry of b that matches
// a name first keeps its own message. b may be nil.
func (b *BlockList) WithReserved(names map[string]string) *BlockList {
	out := &BlockList{exact: map[string]string{}, suffix: map[string]string{}, reserved: map[string]string{}}
	if b != nil {
		out.exact, out.suffix, out.entries = b.exact, b.suffix, b.entries
	}
	for name, why := range names {
		if h, err := Normalise(name); err == nil {
			out.reserved[h] = why
		}
	}
	return out
}

// Reserved reports why entry, as returned by Match, is reserved for the
// provider, or false when it is an ordinary block-list entry.
func (b *BlockList) Reserved(entry string) (why string, ok bool) {
	if b == nil {
		return "", false
	}
	if _, isEntry := b.exact[entry]; isEntry {
		return "", false
	}
	why, ok = b.reserved[entry]
	return why, ok
}

// ReservedNames returns the names reserved for the provider and why.
func (b *BlockList) ReservedNames() map[string]string {
	if b == nil {
		return nil
	}
	return maps.Clone(b.reserved)
}
