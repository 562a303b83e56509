package metricsauth

import "time"

// ttlCache is a map whose entries expire, holding at most max of them. It
// is not safe for concurrent use; Filter locks around it.
type ttlCache[V any] struct {
	max     int
	entries map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	value   V
	expires time.Time
}

func newTTLCache[V any](max int) *ttlCache[V] {
	return &ttlCache[V]{max: max, entries: map[string]ttlEntry[V]{}}
}

// get is the unexpired value of key.
func (c *ttlCache[V]) get(key string, now time.Time) (V, bool) {
	e, ok := c.entries[key]
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.value, true
}

// put stores value until now+ttl. When the cache is full it first drops
// every expired entry, then, if still full, arbitrary ones: a dropped
// entry only costs one more review.
func (c *ttlCache[V]) put(key string, value V, now time.Time, ttl time.Duration) {
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < c.max {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[key] = ttlEntry[V]{value, now.Add(ttl)}
}

func (c *ttlCache[V]) len() int { return len(c.entries) }
