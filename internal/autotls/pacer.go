/*
Copyright The shardgate Authors.
*/

package autotls

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	"golang.org/x/net/publicsuffix"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// Limits pace the Certificates shardgate writes. ACME issuers limit how
// fast an account may order and how many certificates a registered domain
// may get; a Certificate written past them only fails, and failures count
// against the account too.
type Limits struct {
	// Orders is the most new Certificates written per issuer within
	// OrdersWindow (Let's Encrypt: 300 new orders per account per 3 hours).
	Orders       int
	OrdersWindow time.Duration
	// DomainCertificates is the most new Certificates written per
	// registered domain (the public suffix plus one label) within
	// DomainWindow (Let's Encrypt: 50 certificates per registered domain
	// per week).
	DomainCertificates int
	DomainWindow       time.Duration
	// BackoffInitial is how long a name whose issuance failed waits before
	// its Certificate is written again; each further failure doubles it, up
	// to BackoffMax.
	BackoffInitial time.Duration
	BackoffMax     time.Duration
}

// Defaults of Limits: Let's Encrypt's production limits, and a backoff
// that retries a failing name (typically: its DNS does not point at the
// provider yet) hourly at first and daily at most.
const (
	DefaultOrders             = 300
	DefaultOrdersWindow       = 3 * time.Hour
	DefaultDomainCertificates = 50
	DefaultDomainWindow       = 168 * time.Hour
	DefaultBackoffInitial     = time.Hour
	DefaultBackoffMax         = 24 * time.Hour
)

// DefaultLimits are the Limits with every default.
func DefaultLimits() Limits {
	return Limits{
		Orders: DefaultOrders, OrdersWindow: DefaultOrdersWindow,
		DomainCertificates: DefaultDomainCertificates, DomainWindow: DefaultDomainWindow,
		BackoffInitial: DefaultBackoffInitial, BackoffMax: DefaultBackoffMax,
	}
}

// IssuerKey identifies an ACME account for the order limit: the issuerRef,
// and for a namespaced Issuer the namespace it is read in.
func IssuerKey(ref shardgatev1alpha1.IssuerReference, namespace string) string {
	ref = normalIssuer(ref)
	if ref.Kind == "Issuer" && ref.Group == "cert-manager.io" {
		return ref.Group + "/" + ref.Kind + "/" + namespace + "/" + ref.Name
	}
	return ref.Group + "/" + ref.Kind + "/" + ref.Name
}

// RegisteredDomain is host's registered domain (the public suffix plus one
// label: EffectiveTLDPlusOne), or host itself when it has none.
func RegisteredDomain(host string) string {
	d, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		return host
	}
	return d
}

// Wait says why a name is not written now, and until when.
type Wait struct {
	// Reason is ReasonCertificateQueued or ReasonCertificateBackoff.
	Reason  string
	Message string
	Until   time.Time
}

// Plan is what the Pacer decided for the pending names.
type Plan struct {
	// Admit are the names whose Certificate to write now, in order.
	Admit []*Want
	// Wait are the others.
	Wait map[Key]Wait
	// Next is the earliest time a waiting name may go (zero: none waits).
	Next time.Time
}

// failure is a name's issuance history since it last succeeded.
type failure struct {
	attempts int
	next     time.Time
	message  string
}

// Pacer decides which pending names get their Certificate written now. It
// counts the Certificates written per issuer and per registered domain in
// sliding windows, serves tenants round-robin, least served first, and
// keeps names whose issuance failed back off, queued behind every name
// that never failed. It is pure (time comes from its callers) and not
// safe for concurrent use.
type Pacer struct {
	limits  Limits
	orders  map[string][]time.Time
	domains map[string][]time.Time
	served  map[string][]time.Time
	failed  map[Key]*failure
}

// NewPacer returns a Pacer with these limits (zero fields take the
// defaults).
func NewPacer(l Limits) *Pacer {
	d := DefaultLimits()
	l.Orders = cmp.Or(l.Orders, d.Orders)
	l.OrdersWindow = cmp.Or(l.OrdersWindow, d.OrdersWindow)
	l.DomainCertificates = cmp.Or(l.DomainCertificates, d.DomainCertificates)
	l.DomainWindow = cmp.Or(l.DomainWindow, d.DomainWindow)
	l.BackoffInitial = cmp.Or(l.BackoffInitial, d.BackoffInitial)
	l.BackoffMax = max(cmp.Or(l.BackoffMax, d.BackoffMax), l.BackoffInitial)
	return &Pacer{limits: l, orders: map[string][]time.Time{}, domains: map[string][]time.Time{},
		served: map[string][]time.Time{}, failed: map[Key]*failure{}}
}

// Limits are the pacer's limits, defaults applied.
func (p *Pacer) Limits() Limits { return p.limits }

// Record counts a Certificate written at at for host, under issuer (an
// IssuerKey), for owner. Plan records what it admits; the controller
// records the Certificates it finds at start-up, by creationTimestamp, so
// that a restart does not reset the windows.
func (p *Pacer) Record(issuer, host, owner string, at time.Time) {
	p.orders[issuer] = insertTime(p.orders[issuer], at)
	d := RegisteredDomain(host)
	p.domains[d] = insertTime(p.domains[d], at)
	p.served[owner] = insertTime(p.served[owner], at)
}

// Failed records that k's issuance failed at at, with cert-manager's
// message, and returns when it may be written again: BackoffInitial after
// the first failure, doubling with each further one, at most BackoffMax.
func (p *Pacer) Failed(k Key, at time.Time, message string) time.Time {
	f := p.failed[k]
	if f == nil {
		f = &failure{}
		p.failed[k] = f
	}
	f.attempts++
	d := p.limits.BackoffInitial
	for i := 1; i < f.attempts && d < p.limits.BackoffMax; i++ {
		d *= 2
	}
	f.next, f.message = at.Add(min(d, p.limits.BackoffMax)), message
	return f.next
}

// Backoff says whether k is backing off at now, why, and until when.
func (p *Pacer) Backoff(k Key, now time.Time) (Wait, bool) {
	f := p.failed[k]
	if f == nil || !now.Before(f.next) {
		return Wait{}, false
	}
	return Wait{Reason: shardgatev1alpha1.ReasonCertificateBackoff, Until: f.next,
		Message: fmt.Sprintf("issuance failed (%d attempts): %s; next attempt at %s", f.attempts, f.message, f.next.UTC().Format(time.RFC3339))}, true
}

// Succeeded forgets k's failures (its certificate was issued), and Forget
// does so for a name no longer wanted.
func (p *Pacer) Succeeded(k Key) { delete(p.failed, k) }

// Forget: see Succeeded.
func (p *Pacer) Forget(k Key) { delete(p.failed, k) }

// Plan decides, at now, which of the pending names (wanted, without a
// Certificate) to write now; it records those as written. Names that
// never failed come first, then those whose backoff is over; within each
// tier tenants (Want.Owner) take turns, one name each per round, those
// served least within the order window first, so one tenant's many names,
// failing or not, delay another tenant's first name by at most one round.
// A name goes only while its issuer and its registered domain are under
// their limits; a name its domain's limit holds back does not hold back
// the names after it.
func (p *Pacer) Plan(now time.Time, pending []*Want) Plan {
	p.prune(now)
	out := Plan{Wait: map[Key]Wait{}}
	var fresh, retry []*Want
	for _, w := range pending {
		if f := p.failed[w.Key]; f != nil {
			if wt, backing := p.Backoff(w.Key, now); backing {
				out.Wait[w.Key] = wt
				continue
			}
			retry = append(retry, w)
			continue
		}
		fresh = append(fresh, w)
	}
	// A full issuer or domain stays full for the rest of the plan: its
	// Wait is made once.
	full := map[string]Wait{}
	for _, tier := range [][]*Want{fresh, retry} {
		for _, w := range p.roundRobin(tier) {
			issuer := IssuerKey(w.Issuer, w.Namespace)
			if wt, ok := full["i\x00"+issuer]; ok {
				out.Wait[w.Key] = wt
				continue
			}
			if wt, ok := queued(p.orders[issuer], p.limits.Orders, p.limits.OrdersWindow, "issuer "+w.Issuer.Kind+"/"+w.Issuer.Name); ok {
				full["i\x00"+issuer], out.Wait[w.Key] = wt, wt
				continue
			}
			domain := RegisteredDomain(w.Host)
			if wt, ok := full["d\x00"+domain]; ok {
				out.Wait[w.Key] = wt
				continue
			}
			if wt, ok := queued(p.domains[domain], p.limits.DomainCertificates, p.limits.DomainWindow, "registered domain "+domain); ok {
				full["d\x00"+domain], out.Wait[w.Key] = wt, wt
				continue
			}
			p.Record(issuer, w.Host, w.Owner, now)
			out.Admit = append(out.Admit, w)
		}
	}
	for _, wt := range out.Wait {
		if out.Next.IsZero() || wt.Until.Before(out.Next) {
			out.Next = wt.Until
		}
	}
	return out
}

// roundRobin orders names: one per tenant per round, tenants served least
// (then by name) first, each tenant's names by namespace and host.
func (p *Pacer) roundRobin(ws []*Want) []*Want {
	if len(ws) == 0 {
		return nil
	}
	byOwner := map[string][]*Want{}
	for _, w := range ws {
		byOwner[w.Owner] = append(byOwner[w.Owner], w)
	}
	owners := make([]string, 0, len(byOwner))
	for o, list := range byOwner {
		owners = append(owners, o)
		slices.SortFunc(list, func(a, b *Want) int {
			return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Host, b.Host))
		})
	}
	slices.SortFunc(owners, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(p.served[a]), len(p.served[b])), cmp.Compare(a, b))
	})
	out := make([]*Want, 0, len(ws))
	for round := 0; len(out) < len(ws); round++ {
		for _, o := range owners {
			if list := byOwner[o]; round < len(list) {
				out = append(out, list[round])
			}
		}
	}
	return out
}

// prune drops the times outside their windows.
func (p *Pacer) prune(now time.Time) {
	pruneMap(p.orders, now.Add(-p.limits.OrdersWindow))
	pruneMap(p.served, now.Add(-p.limits.OrdersWindow))
	pruneMap(p.domains, now.Add(-p.limits.DomainWindow))
}

func pruneMap(m map[string][]time.Time, since time.Time) {
	for k, ts := range m {
		i := sort.Search(len(ts), func(i int) bool { return ts[i].After(since) })
		if i == len(ts) {
			delete(m, k)
		} else if i > 0 {
			m[k] = slices.Clone(ts[i:])
		}
	}
}

func insertTime(ts []time.Time, t time.Time) []time.Time {
	i := sort.Search(len(ts), func(i int) bool { return ts[i].After(t) })
	return slices.Insert(ts, i, t)
}

// queued is the Wait of a name behind a limit of n new certificates per
// window, of which those created at times ts (oldest first) count, and
// whether the limit is reached; what names the limit in the message.
func queued(ts []time.Time, n int, window time.Duration, what string) (Wait, bool) {
	if len(ts) < n {
		return Wait{}, false
	}
	until := ts[len(ts)-n].Add(window)
	return Wait{Reason: shardgatev1alpha1.ReasonCertificateQueued, Until: until,
		Message: fmt.Sprintf("%s allows %d new certificates per %s; queued until %s", what, n, window, until.UTC().Format(time.RFC3339))}, true
}
