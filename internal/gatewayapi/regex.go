/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"fmt"
	"regexp"
	"regexp/syntax"
)

// maxRegexCost bounds the size of a route's regular expression, so that one
// route cannot make Envoy refuse (NACK) the whole Gateway's configuration or
// spend its memory on one match. The cost is the number of instructions of
// the Go program for the expression, plus one for every extra rune range of
// a character class (RE2, Envoy's engine, expands classes into UTF-8 byte
// ranges, so "\pL" costs about 660 and "[a-z]" 1). Typical route regexes cost
// under 200; "/[a-z]{1000}" costs 1003. It is an estimate of RE2's program
// size, not RE2 itself; the Envoy bootstrap raises RE2's own program size
// limit (re2.max_program_size.error_level, 100 by default) so that what we
// accept here is not refused there.
const maxRegexCost = 10000

// checkRegex validates a route regular expression: it must compile with Go's
// regexp (RE2 syntax) and cost at most maxRegexCost.
func checkRegex(re string) error {
	if _, err := regexp.Compile(re); err != nil {
		return err
	}
	p, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return err
	}
	prog, err := syntax.Compile(p.Simplify())
	if err != nil {
		return err
	}
	cost := 0
	for _, in := range prog.Inst {
		cost++
		if in.Op == syntax.InstRune && len(in.Rune) > 2 {
			cost += len(in.Rune)/2 - 1
		}
		if cost > maxRegexCost {
			return fmt.Errorf("expression too complex: its program size is over %d", maxRegexCost)
		}
	}
	return nil
}
