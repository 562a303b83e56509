package hostnames

// decide applies the ownership rules to every claimant of one name. It is a
// pure function of its arguments: the claimants (sorted by Older, each with
// its key, Takeover flag and Holding mark) and the block-list match. Holding
// is the engine's own record that the claimant holds the name, or, during
// Restore only, the status hint.
//
// It returns the index in cs of the holder (the oldest claimant of the holding
// key), or -1 when the name is blocked or cs is empty, and appends one
// decision per claimant to out, in the order of cs.
//
// Precedence, first match wins:
//
//  1. Blocked: every claimant is refused (Blocked); nobody holds the name.
//  2. Base holder: the oldest claimant marked Holding, or, if none is, the
//     oldest claimant. Its owner owns the name.
//  3. Takeover: among the owning owner's claimants with Takeover set, the
//     newest holds the name for its key (a later takeover supersedes an
//     earlier one, deterministically, so two takeovers never ping-pong).
//     Takeover requests of other owners count for nothing.
//  4. Every claimant of the holding key is Reserved (leases that differ only
//     in oseq share the key). Claimants of other owners: HostnameInUse.
//     Claimants of the owning owner under another key: TransferredAway while
//     a takeover claimant holds the name (the takeover is why the name is not
//     theirs), else Withheld. This depends on the current claimants only, not
//     on their ages: creation timestamps have one-second granularity, so an
//     age comparison between a blue and a green deployment created in the
//     same second would fall to the UID, which is random.
//
// In short: takeover (newest) > live holder (or, on a cold start, the oldest
// hint carrier) > oldest.
func decide(host string, cs []*claim, blockEntry, reservedWhy string, blocked bool, out []Decision) ([]Decision, int) {
	if len(cs) == 0 {
		return out, -1
	}
	if blocked {
		d := blockedDecision(host, blockEntry, reservedWhy)
		for range cs {
			out = append(out, d)
		}
		return out, -1
	}

	base := 0
	for i, c := range cs {
		if c.Holding {
			base = i
			break
		}
	}
	owner := cs[base].Key.Owner
	taker := -1
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].Takeover && cs[i].Key.Owner == owner {
			taker = i
			break
		}
	}
	holderKey := cs[base].Key
	if taker >= 0 {
		holderKey = cs[taker].Key
	}

	holder := -1
	var reserved, inUse, withheld, transferred Decision
	for i, c := range cs {
		var d Decision
		switch {
		case c.Key == holderKey:
			if holder < 0 {
				holder = i
				reserved = reservedDecision(host)
			}
			d = reserved
		case c.Key.Owner != owner:
			if inUse.Reason == "" {
				inUse = inUseDecision(host)
			}
			d = inUse
		case taker >= 0:
			if transferred.Reason == "" {
				transferred = transferredDecision(host, holderKey)
			}
			d = transferred
		default:
			if withheld.Reason == "" {
				withheld = withheldDecision(host, holderKey)
			}
			d = withheld
		}
		out = append(out, d)
	}
	return out, holder
}
