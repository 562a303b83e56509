// Package hostnames owns hostname ownership for LeaseHosts:
// normalising requested names, the provider's block list, and the claims
// index that decides, for every LeaseHost, whether its name is Reserved,
// Withheld, TransferredAway, Blocked, HostnameInUse or InvalidHostname.
//
// # Model
//
// A claimant is one LeaseHost: one name, identified by its UID, ordered by
// Older (creationTimestamp, then UID; the one comparator for every tie). A
// claimant belongs to a claim key (owner, dseq, gseq); leases that differ only
// in oseq share the key. A name is held by one key at a time, and every
// claimant of the holding key is Reserved.
//
// # Precedence
//
// While the engine runs, it is the authority on who holds a name: a name
// stays with its live holder until the holder leaves, the name is blocked, or
// a takeover of the same owner moves it. Which LeaseHost holds a name
// therefore depends on which was admitted first (a race has exactly one
// winner). The decisions for a name follow from its claimants, the engine's
// own record of which of them hold it, and the block list:
//
//  1. A block-list match refuses every claimant (Blocked); nobody holds it.
//  2. Base holder: the oldest claimant the engine marks as holding (it is
//     Reserved), else the oldest claimant. Its owner owns the name. So a
//     newcomer never displaces a live holder, even an older object whose
//     spec.hostname is edited to the name.
//  3. Takeover: among the owning owner's claimants with Takeover set, the
//     newest wins the name for its key. Takeovers by other owners are refused
//     (HostnameInUse). The previous holders older than the winning takeover
//     become TransferredAway; nothing flips back while the taker exists.
//  4. Other claimants: HostnameInUse for other owners, Withheld for other
//     deployments of the same owner.
//
// When a holder leaves, the same rules pick the next holder: a waiter of any
// owner can take a name that has become free, the oldest first.
//
// # Status is a hint for the cold start only
//
// A LeaseHost's status.reservedHosts is the Holding hint of its claimants.
// Only Restore, which rebuilds the engine when the controller starts, reads
// it: there a hint carrier counts as holding, so the controller comes back
// with the holders it had, and the result does not depend on the order of
// the restored claimants (two hint carriers of different keys are ambiguous
// and settled by age). Upsert ignores hints: a status written by anyone but
// the controller can never move a name away from a live holder. A status
// forged while no controller runs is the one case a hint can decide, which
// is why tenants must not be able to write LeaseHost status.
//
// # Objects
//
// A claimant belongs to an object (Claimant.Object, the LeaseHost's UID),
// which may claim one name per shard. The engine records what each object
// claims (ClaimsOf) and releases an object as a whole (ReleaseObject), so a
// LeaseHost deleted and re-created under the same name (a new UID) neither
// inherits nor strands the old object's claims.
//
// # Normalisation
//
// Names are trimmed, lowercased and IDNA-mapped (UTS #46, Lookup profile) to
// their ASCII "xn--" form, then must be RFC 1123 hostnames of at most 253
// characters with labels of at most 63; wildcards, trailing dots and numeric
// last labels are refused. Block-list entries are normalised the same way.
// See Normalise.
//
// # IDN homographs
//
// Normalisation alone makes the Unicode and punycode spellings of one name
// equal; it does not stop a look-alike in another script. Two rules do:
//
//  1. Mixed scripts are refused. A requested label whose letters come from
//     more than one of Latin, Greek, Cyrillic, Armenian and Cherokee (the
//     scripts whose letters are mistaken for one another) is InvalidHostname,
//     whatever the spelling ("pаypal" with a Cyrillic "а", or its "xn--"
//     form). Digits and '-' belong to no script. Other mixes (Han with
//     Latin, Han with Hiragana and Katakana) are allowed: they are normal
//     and not confusable with ASCII. Block-list entries are exempt: blocking
//     is always safe.
//  2. Whole-script look-alikes are blocked. The block list matches a
//     requested name as written and then its skeleton: every "xn--" label
//     made only of look-alikes of ASCII letters and digits, digits and '-'
//     is replaced by its ASCII look-alike. The look-alikes are every code
//     point that Unicode's full confusables data (UTS #39 confusables.txt,
//     through go.mau.fi/util/confusable) maps to the prototype of an ASCII
//     letter or digit, the lowercase letters whose uppercase form does so
//     (the Cyrillic "к"), and a few letters the data maps elsewhere but that
//     render like ASCII ones (the Cyrillic "п"), or that it does not map at
//     all (U+A781 "ꞁ", the Latin small letter turned l, which looks like
//     "l" but has no entry in confusables.txt as of Unicode 17.0.0); see
//     lookalikes. So the
//     all-Cyrillic "аррӏе.com" (xn--80ak6aa92e.com, skeleton "apple.com") is
//     Blocked by an entry "apple.com" or ".apple.com", and the message says
//     it is a look-alike. A label with any letter outside the table (the
//     Russian "пример", the German "bücher") is its own skeleton, so genuine
//     non-Latin names are admitted.
//
// Names without "xn--" labels have no skeleton, so ASCII lookups cost one
// extra scan and stay O(labels). The skeleton is checked against the block
// list only, not against other tenants' claims: "аррӏе.com" and "apple.com"
// can be held by different tenants unless the provider blocks one.
//
// # What this package must never do
//
//   - Import Kubernetes: it is pure Go; controllers translate objects into
//     Claimants and Decisions into conditions.
//   - Reveal another owner: messages and errors never contain another
//     tenant's owner, UID or namespace. HostnameInUse says "another tenant".
//   - Scan the block list: lookups cost O(labels of the name).
package hostnames
