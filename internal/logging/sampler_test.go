package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// lines is a buffer of JSON lines that a zapcore.Core writes to, through
// zapcore.Lock; entries reads it once the writers are done.
type lines struct {
	buf bytes.Buffer
}

// entries decodes every line written so far.
func (l *lines) entries(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(l.buf.String(), "\n"), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// testSampler is a sampler with the production numbers over a JSON core
// writing to the returned lines.
func testSampler(lvl zapcore.LevelEnabler) (*sampler, *lines) {
	out := &lines{}
	cfg := zap.NewProductionEncoderConfig()
	cfg.TimeKey = "" // entries carry made-up times
	core := zapcore.NewCore(zapcore.NewJSONEncoder(cfg), zapcore.Lock(zapcore.AddSync(&out.buf)), lvl)
	return newSampler(core, sampleTick, sampleFirst, sampleThereafter), out
}

// logAt writes one entry through core as zap.Logger would: Check, then
// Write on what Check returned.
func logAt(core zapcore.Core, lvl zapcore.Level, msg string, at time.Time, fields ...zapcore.Field) {
	if ce := core.Check(zapcore.Entry{Level: lvl, Message: msg, Time: at}, nil); ce != nil {
		ce.Write(fields...)
	}
}

// seq returns the "i" field of each entry with msg.
func seq(entries []map[string]any, msg string) []int {
	var out []int
	for _, e := range entries {
		if e["msg"] == msg {
			out = append(out, int(e["i"].(float64)))
		}
	}
	return out
}

func wantSeq(t *testing.T, what string, got []int, want ...int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries written %v, want %d %v", what, len(got), got, len(want), want)
	}
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("%s: entries written %v, want %v", what, got, want)
		}
	}
}

// upTo returns 0..n-1 followed by extra.
func upTo(n int, extra ...int) []int {
	out := make([]int, 0, n+len(extra))
	for i := range n {
		out = append(out, i)
	}
	return append(out, extra...)
}

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func TestSamplerFirstThenEveryHundredth(t *testing.T) {
	s, out := testSampler(zapcore.InfoLevel)
	for i := range 350 {
		logAt(s, zapcore.InfoLevel, "flood", t0.Add(time.Duration(i)*time.Millisecond), zap.Int("i", i))
	}
	// The 1st-100th pass, then the 200th and 300th.
	wantSeq(t, "350 entries in one tick", seq(out.entries(t), "flood"), upTo(100, 199, 299)...)
}

func TestSamplerCountsMessagesAndLevelsSeparately(t *testing.T) {
	s, out := testSampler(zapcore.InfoLevel)
	const a, b = "route accepted", "config reloaded"
	if s.table.slot(zapcore.InfoLevel, a) == s.table.slot(zapcore.InfoLevel, b) {
		t.Fatalf("%q and %q share a counter; pick two messages that do not", a, b)
	}
	for i := range 150 {
		logAt(s, zapcore.InfoLevel, a, t0, zap.Int("i", i))
	}
	for i := range 5 {
		logAt(s, zapcore.InfoLevel, b, t0, zap.Int("i", i))
		logAt(s, zapcore.WarnLevel, a, t0, zap.Int("i", i))
	}
	entries := out.entries(t)
	var warn []int
	for _, e := range entries {
		if e["level"] == "warn" {
			warn = append(warn, int(e["i"].(float64)))
		}
	}
	wantSeq(t, "info "+a, seq(entries, a)[:100], upTo(100)...)
	wantSeq(t, "info "+b+" after 150 of "+a, seq(entries, b), upTo(5)...)
	wantSeq(t, "warn "+a+" after 150 at info", warn, upTo(5)...)
}

func TestSamplerNewTickResets(t *testing.T) {
	s, out := testSampler(zapcore.InfoLevel)
	for i := range 150 {
		logAt(s, zapcore.InfoLevel, "flood", t0, zap.Int("i", i))
	}
	// Still in the tick that began at t0: counted on, dropped.
	logAt(s, zapcore.InfoLevel, "flood", t0.Add(sampleTick-time.Nanosecond), zap.Int("i", 1000))
	// A new tick: the first 100 pass again.
	for i := range 150 {
		logAt(s, zapcore.InfoLevel, "flood", t0.Add(sampleTick), zap.Int("i", 2000+i))
	}
	want := upTo(100)
	for i := range 100 {
		want = append(want, 2000+i)
	}
	wantSeq(t, "150, 1 and 150 over two ticks", seq(out.entries(t), "flood"), want...)
}

func TestSamplerDisabledLevelsNeitherWrittenNorCounted(t *testing.T) {
	lvl := zap.NewAtomicLevelAt(zapcore.InfoLevel)
	s, out := testSampler(lvl)
	for i := range 150 {
		logAt(s, zapcore.DebugLevel, "detail", t0, zap.Int("i", i))
	}
	if n := len(out.entries(t)); n != 0 {
		t.Fatalf("%d debug entries written at level info, want none", n)
	}
	lvl.SetLevel(zapcore.DebugLevel)
	for i := range 100 {
		logAt(s, zapcore.DebugLevel, "detail", t0, zap.Int("i", 1000+i))
	}
	want := make([]int, 0, 100)
	for i := range 100 {
		want = append(want, 1000+i)
	}
	// Had the disabled entries been counted, these would be the 151st-250th.
	wantSeq(t, "100 debug entries once debug is enabled", seq(out.entries(t), "detail"), want...)
}

func TestSamplerWithFieldsShareTheCount(t *testing.T) {
	s, out := testSampler(zapcore.InfoLevel)
	for i := range 100 {
		logAt(s, zapcore.InfoLevel, "flood", t0, zap.Int("i", i))
	}
	w := s.With([]zapcore.Field{zap.String("gateway", "a")})
	for i := range 100 {
		logAt(w, zapcore.InfoLevel, "flood", t0, zap.Int("i", 100+i))
	}
	entries := out.entries(t)
	// The 200th entry, written through the derived core with its field.
	wantSeq(t, "100 entries, then 100 with a field", seq(entries, "flood"), upTo(100, 199)...)
	if last := entries[len(entries)-1]; last["gateway"] != "a" {
		t.Fatalf("the entry through With lost its field: %v", last)
	}
	if got := zapcore.LevelOf(w); got != zapcore.InfoLevel {
		t.Fatalf("LevelOf(sampler) = %v, want info", got)
	}
}

func TestSamplerConcurrent(t *testing.T) {
	s, out := testSampler(zapcore.InfoLevel)
	logger := zap.New(s)
	// The first entry opens the tick, so the concurrent ones below only
	// count on: the number written is then exact.
	logAt(s, zapcore.InfoLevel, "flood", t0, zap.Int("i", -1))
	const workers, each = 8, 250
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			derived := s.With([]zapcore.Field{zap.Int("worker", w)})
			for i := range each {
				logAt(derived, zapcore.InfoLevel, "flood", t0, zap.Int("i", i))
				// Through a zap.Logger with the clock's time, under its
				// own message: new ticks start concurrently too.
				logger.Info("clock", zap.Int("i", i))
			}
		}()
	}
	wg.Wait()
	entries := out.entries(t)
	// 2001 entries in one tick: the first 100, then the 200th ... 2000th.
	if got := len(seq(entries, "flood")); got != 100+19 {
		t.Fatalf("%d of %d concurrent entries written, want %d", got, 1+workers*each, 100+19)
	}
	if got := len(seq(entries, "clock")); got < sampleFirst || got >= workers*each {
		t.Fatalf("%d of %d concurrent entries on the clock written, want at least %d and some dropped", got, workers*each, sampleFirst)
	}
}
