/*
Copyright The shardgate Authors.
*/

package build

import (
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/shardgate/shardgate/xds/translate"
)

// chainwiseListener is the number of filter chains from which a listener
// is validated chain by chain (checkRun.listener).
const chainwiseListener = 64

func chainSet(l *listenerv3.Listener) map[*listenerv3.FilterChain]bool {
	out := make(map[*listenerv3.FilterChain]bool, len(l.GetFilterChains()))
	for _, fc := range l.GetFilterChains() {
		out[fc] = true
	}
	return out
}

// listener checks a listener like one. A listener with many filter chains
// (a shard with automatic HTTPS has one per name) whose previous version
// passed the last check is validated chain by chain instead: its own
// fields, and the chains that are not the very messages of the previous
// version (a memo hands out unchanged chains again), so that a name coming
// or going validates its own chain alone.
func (e *checkRun) listener(l *listenerv3.Listener) {
	c := e.c
	name := l.GetName()
	last := c.lastListeners[name]
	if last == nil || last == l || len(l.GetFilterChains()) < chainwiseListener {
		e.one("listener", name, l)
		return
	}
	d, err := e.digest(l)
	if err != nil {
		e.fail("listener %q: serialize: %w", name, err)
		return
	}
	if ep, ok := c.passed[d]; ok {
		if ep != c.epoch {
			c.passed[d] = c.epoch
		}
		return
	}
	c.Validated++
	chains := l.FilterChains
	l.FilterChains = nil
	err = translate.ValidateMessage(l)
	l.FilterChains = chains
	if err != nil {
		e.fail("listener %q: %w", name, err)
		return
	}
	old := chainSet(last)
	for _, fc := range chains {
		if old[fc] {
			continue
		}
		if err := translate.ValidateMessage(fc); err != nil {
			e.fail("listener %q: filter chain %q: %w", name, fc.GetName(), err)
			return
		}
	}
	c.passed[d] = c.epoch
}

// noneRemoved: every name of was is in now.
func noneRemoved(was, now map[string]bool) bool {
	if len(was) > len(now) {
		return false
	}
	for n := range was {
		if !now[n] {
			return false
		}
	}
	return true
}
