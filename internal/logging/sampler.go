package logging

import (
	"sync/atomic"
	"time"

	"go.uber.org/zap/zapcore"
)

// Sampling caps what a message repeated in a loop costs: per level and
// message, in each tick the first sampleFirst entries are written, then
// every sampleThereafter-th. These are the numbers controller-runtime's
// production logger uses with zap's sampler.
const (
	sampleTick       = time.Second
	sampleFirst      = 100
	sampleThereafter = 100
)

// sampleSlots is the number of counters per level. A message picks its
// counter by a hash of its text (the fields, With's included, are not part
// of it), so two messages of one level whose hashes fall on the same slot
// share one counter: together they get the budget of one message, and a
// rare message that collides with a flooding one can be dropped in the
// ticks the flood lasts. zap's own sampler keeps 4096 counters per level
// (448 KiB for its seven levels, allocated at start and live for the
// process) to make that unlikely across any program's messages; shardgate
// logs a few dozen distinct messages, and 128 counters per level cost
// 14 KiB.
const sampleSlots = 128

// sampledLevels are zap's levels, Debug through Fatal: the ones the
// sampler counts. Entries at a level outside them (a logr verbosity of 2
// or more is zap level -2 and below) pass uncounted, as in zap.
const (
	sampledMin    = zapcore.DebugLevel
	sampledMax    = zapcore.FatalLevel
	sampledLevels = int(sampledMax-sampledMin) + 1
)

// sampleCounter counts the entries of one slot since resetAt, a Unix time
// in nanoseconds at which the current tick ends.
type sampleCounter struct {
	resetAt atomic.Int64
	n       atomic.Uint64
}

// add counts one entry at now and returns its number in the current tick,
// starting a new tick first when the current one has ended. Concurrent
// callers may over- or under-count by a few around a tick's end; the
// sampler trades that exactness for taking no lock.
func (c *sampleCounter) add(now int64, tick time.Duration) uint64 {
	end := c.resetAt.Load()
	if now < end {
		return c.n.Add(1)
	}
	// The tick has ended: restart the count at this entry. When another
	// goroutine starts the new tick first, it has reset the count too, so
	// this entry is counted on top of it.
	c.n.Store(1)
	if c.resetAt.CompareAndSwap(end, now+int64(tick)) {
		return 1
	}
	return c.n.Add(1)
}

type sampleTable [sampledLevels][sampleSlots]sampleCounter

// slot returns the counter of lvl and msg; lvl is within the sampled levels.
func (t *sampleTable) slot(lvl zapcore.Level, msg string) *sampleCounter {
	// FNV-1a, 32 bits, over the message's bytes (no []byte conversion).
	h := uint32(2166136261)
	for i := 0; i < len(msg); i++ {
		h = (h ^ uint32(msg[i])) * 16777619
	}
	return &t[lvl-sampledMin][h%sampleSlots]
}

// sampler is a zapcore.Core that drops entries beyond the sampling budget
// of their level and message before they reach the wrapped Core. Cores
// derived by With share the table, so a message is counted the same with
// any fields.
type sampler struct {
	zapcore.Core
	table             *sampleTable
	tick              time.Duration
	first, thereafter uint64
}

// newSampler wraps core: per tick, per level and message, the first
// entries pass, then every thereafter-th (none when thereafter is 0).
func newSampler(core zapcore.Core, tick time.Duration, first, thereafter uint64) *sampler {
	return &sampler{Core: core, table: new(sampleTable), tick: tick, first: first, thereafter: thereafter}
}

// Level reports the wrapped Core's minimum enabled level, so that
// zap.Logger.Level and zapcore.LevelOf see through the sampler.
func (s *sampler) Level() zapcore.Level {
	return zapcore.LevelOf(s.Core)
}

// With returns a sampler over the wrapped Core with fields, sharing the
// counters.
func (s *sampler) With(fields []zapcore.Field) zapcore.Core {
	c := *s
	c.Core = s.Core.With(fields)
	return &c
}

// Check counts ent if its level is enabled and sampled, and hands it to the
// wrapped Core only when it is within the budget. An entry of a disabled
// level is neither counted nor written.
func (s *sampler) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if !s.Enabled(ent.Level) {
		return ce
	}
	if ent.Level >= sampledMin && ent.Level <= sampledMax {
		n := s.table.slot(ent.Level, ent.Message).add(ent.Time.UnixNano(), s.tick)
		if n > s.first && (s.thereafter == 0 || (n-s.first)%s.thereafter != 0) {
			return ce
		}
	}
	return s.Core.Check(ent, ce)
}
