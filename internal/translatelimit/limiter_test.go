package translatelimit

import (
	"sync"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// limiterSim drives a Limiter as the controller does, on a fake
// clock: each change calls Wait and puts the key in a delaying queue at the
// earliest deadline; the one worker takes the key when it is due, calls
// Take (a Wait puts the key back) and, once a translation has run for its
// duration, Done. A change during a translation leaves the key due at
// once, as the workqueue does with a key that is being processed.
type limiterSim struct {
	c *clock
	l *Limiter
	// translate is how long each translation takes.
	translate time.Duration

	due     time.Time // when the key is due (zero: not queued)
	endAt   time.Time // when the running translation ends (zero: none)
	pending []time.Time

	translations int
	folded       int           // changes translated, over all translations
	worst        time.Duration // longest from a change to its translation's start
	waited       int           // changes whose translation did not start at once
}

const simStep = 100 * time.Microsecond

func newLimiterSim(translate time.Duration) *limiterSim {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return &limiterSim{c: c, l: New(20*time.Millisecond, c.now), translate: translate}
}

// change records a change now, as the handler does.
func (s *limiterSim) change() {
	d := s.l.Wait()
	if at := s.c.now().Add(d); s.due.IsZero() || at.Before(s.due) {
		s.due = at
	}
	s.pending = append(s.pending, s.c.now())
}

// run advances the clock by d, in simStep steps, running the worker.
func (s *limiterSim) run(d time.Duration) {
	for end := s.c.now().Add(d); s.c.now().Before(end); s.c.add(simStep) {
		s.work()
	}
}

func (s *limiterSim) work() {
	now := s.c.now()
	if !s.endAt.IsZero() {
		if now.Before(s.endAt) {
			return
		}
		s.l.Done(s.translate)
		s.endAt = time.Time{}
	}
	if s.due.IsZero() || now.Before(s.due) {
		return
	}
	if d := s.l.Take(); d > 0 {
		s.due = now.Add(d)
		return
	}
	s.due = time.Time{}
	s.translations++
	s.folded += len(s.pending)
	for _, at := range s.pending {
		s.worst = max(s.worst, now.Sub(at))
		if now.After(at) {
			s.waited++
		}
	}
	s.pending = nil
	s.endAt = now.Add(s.translate)
	if s.translate == 0 {
		s.l.Done(0)
		s.endAt = time.Time{}
	}
}

// A change after a quiet spell is translated at once, and so is each of a
// provider's new leases arriving one after the other, each as soon as the
// one before was published, however long that lasts: one change at a time
// is no load.
func TestLimiterQuiet(t *testing.T) {
	s := newLimiterSim(time.Millisecond)
	s.change()
	s.work()
	if s.translations != 1 || s.waited != 0 {
		t.Fatalf("first change: %d translations, %d waited, want 1 at once", s.translations, s.waited)
	}
	s.run(time.Second)
	// Back to back: a translation of 1 ms, then the next change 2 ms
	// after it ended (publish, the client's Create and its watch event),
	// 1000 times: 333 changes a second, far above one per interval.
	for i := range 1000 {
		s.change()
		s.work()
		if s.waited != 0 {
			t.Fatalf("change %d, back to back after its predecessor: waited %s", i+1, s.worst)
		}
		s.run(3 * time.Millisecond)
	}
	if s.translations != 1001 {
		t.Errorf("%d translations for 1001 changes one at a time", s.translations)
	}
	// After a burst, a quiet spell: the next change goes at once.
	for range 200 {
		s.change()
		s.run(100 * time.Microsecond)
	}
	s.run(time.Second)
	s.waited = 0
	s.change()
	s.work()
	if s.waited != 0 || s.due != (time.Time{}) {
		t.Errorf("change after a quiet spell that followed a burst: not translated at once")
	}
	if (*Limiter)(nil).Take() != 0 || (*Limiter)(nil).Wait() != 0 {
		t.Errorf("a nil limiter must never wait")
	}
	if New(0, s.c.now).interval != Interval {
		t.Errorf("zero interval must mean Interval")
	}
}

// A sustained burst (changes faster than translations) is folded into a
// few translations a second once each translation folds Folded changes:
// the hold between them doubles up to MaxHold, every change is translated,
// none waits much more than MaxHold. Changes that come a few per interval
// are no sustained burst: translated about once per interval, none
// waiting much more than one.
func TestLimiterBurst(t *testing.T) {
	for _, tc := range []struct {
		name      string
		translate time.Duration
		every     time.Duration
		// most and least translations in the second; longest wait
		most, least int
		worst       time.Duration
	}{
		{"a change every ms, 2 ms translations", 2 * time.Millisecond, time.Millisecond, 12, 5, MaxHold},
		{"a change every 200µs, instant translations", 0, 200 * time.Microsecond, 12, 5, MaxHold},
		{"a change every ms, 5 ms translations", 5 * time.Millisecond, time.Millisecond, 12, 5, MaxHold},
		{"a change every 8 ms, 10 ms translations", 10 * time.Millisecond, 8 * time.Millisecond, 50 + Burst + 1, 40, 2 * Interval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newLimiterSim(tc.translate)
			changes := 0
			for el := time.Duration(0); el < time.Second; el += tc.every {
				s.change()
				changes++
				s.run(tc.every)
			}
			s.run(MaxHold + 100*time.Millisecond) // the last one's translation
			if s.translations > tc.most || s.translations < tc.least {
				t.Errorf("%d translations of %d changes in 1 s, want %d–%d", s.translations, changes, tc.least, tc.most)
			}
			if s.folded != changes || len(s.pending) != 0 {
				t.Errorf("%d of %d changes translated (%d pending)", s.folded, changes, len(s.pending))
			}
			if limit := tc.worst + tc.translate + time.Millisecond; s.worst > limit {
				t.Errorf("a change waited %s for its translation, want ≤ %s", s.worst, limit)
			}
		})
	}
}

// The hold after a burst's translation doubles from two intervals to
// MaxHold, and ends with the first translation that folds fewer than
// Folded changes.
func TestLimiterHold(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := New(20*time.Millisecond, c.now)
	translate := func(changes int) time.Duration {
		t.Helper()
		for range changes {
			l.Wait()
		}
		for {
			d := l.Take()
			if d == 0 {
				break
			}
			c.add(d)
		}
		c.add(time.Millisecond)
		l.Done(time.Millisecond)
		h, _ := l.Hold()
		return h
	}
	if h := translate(1); h != 0 {
		t.Errorf("one change: hold %s, want none", h)
	}
	if h := translate(Folded - 1); h != 0 {
		t.Errorf("%d changes: hold %s, want none", Folded-1, h)
	}
	var began time.Time // the first held translation's end
	for i, want := range []time.Duration{40, 80, 160, 200, 200} {
		if h := translate(Folded); h != want*time.Millisecond {
			t.Errorf("burst translation %d: hold %s, want %dms", i+1, h, want)
		}
		if i == 0 {
			began = c.now()
		}
		if _, since := l.Hold(); !since.Equal(began) {
			t.Errorf("burst translation %d: burst since %s, want %s", i+1, since, began)
		}
	}
	// The hold is the rest: a change just after waits for it.
	c.add(10 * time.Millisecond)
	if d := l.Wait(); d != 190*time.Millisecond {
		t.Errorf("change 10 ms into a 200 ms hold: wait %s, want 190ms", d)
	}
	c.add(190 * time.Millisecond)
	if h := translate(0); h != 0 {
		t.Errorf("a translation of one change after a burst: hold %s, want none", h)
	}
	// A burst, then a quiet spell longer than its hold: the next burst
	// is a new one, from its own start and its shortest hold, even if
	// its first translation already folds Folded changes.
	translate(Folded)
	translate(Folded)
	c.add(time.Second)
	if h := translate(Folded); h != 40*time.Millisecond {
		t.Errorf("first translation of a burst after a quiet spell: hold %s, want 40ms", h)
	}
	began = c.now()
	if _, since := l.Hold(); !since.Equal(began) {
		t.Errorf("a burst after a quiet spell: since %s, want %s", since, began)
	}
	if h, _ := (*Limiter)(nil).Hold(); h != 0 {
		t.Errorf("a nil limiter holds nothing")
	}
}

// A slow translation is paid for with a rest as long as it took (capped),
// after its end: a change during the rest waits for its end; one that
// arrives after a quiet spell longer than the rest does not wait at all.
func TestLimiterDebt(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := New(20*time.Millisecond, c.now)
	if l.Wait() != 0 || l.Take() != 0 {
		t.Fatal("first translation held")
	}
	c.add(50 * time.Millisecond)
	l.Done(50 * time.Millisecond)
	c.add(10 * time.Millisecond)
	if d := l.Wait(); d != 40*time.Millisecond {
		t.Errorf("change 10 ms after a 50 ms translation: wait %s, want the 40 ms left of its rest", d)
	}
	if d := l.Take(); d != 40*time.Millisecond {
		t.Errorf("take during the rest: wait %s, want 40ms", d)
	}
	c.add(40 * time.Millisecond)
	if d := l.Take(); d != 0 {
		t.Fatalf("take after the rest: wait %s", d)
	}
	l.Done(50 * time.Millisecond)
	c.add(51 * time.Millisecond)
	if d := l.Wait(); d != 0 {
		t.Errorf("change 51 ms after a 50 ms translation: wait %s, want 0", d)
	}
	if d := l.Take(); d != 0 {
		t.Fatalf("take after a quiet spell longer than the debt: wait %s", d)
	}
	// The rest is capped: a translation of a minute rests
	// MaxDebt intervals, after which a change goes at once.
	l.Done(time.Minute)
	if d := l.Wait(); d != MaxDebt*20*time.Millisecond {
		t.Errorf("after a one-minute translation: wait %s, want %d intervals", d, MaxDebt)
	}
	c.add(MaxDebt*20*time.Millisecond + time.Millisecond)
	if d := l.Take(); d != 0 {
		t.Errorf("after the capped rest: wait %s, want 0", d)
	}
	l.Done(0)
	// Under sustained churn of 10 ms translations, the controller
	// translates at most about half the time.
	s := newLimiterSim(10 * time.Millisecond)
	for range 1000 {
		s.change()
		s.run(time.Millisecond)
	}
	if busy := time.Duration(s.translations) * 10 * time.Millisecond; busy > 550*time.Millisecond {
		t.Errorf("%s of 10 ms translations in 1 s of churn, want at most about half", busy)
	}
	// 25 ms translations, one change each arriving 30 ms after the last
	// ended: each goes at once.
	s = newLimiterSim(25 * time.Millisecond)
	for i := range 100 {
		s.change()
		s.work()
		if s.waited != 0 {
			t.Fatalf("change %d, 30 ms after a 25 ms translation: waited", i+1)
		}
		s.run(55 * time.Millisecond)
	}
}
