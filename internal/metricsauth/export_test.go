package metricsauth

import "time"

// SetClock makes f read the time from now.
func (f *Filter) SetClock(now func() time.Time) { f.now = now }

// CachedTokens is how many token answers f holds.
func (f *Filter) CachedTokens() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.users.len()
}
