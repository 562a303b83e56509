/*
Copyright The shardgate Authors.
*/

package autotls

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

var (
	t0 = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	le = shardgatev1alpha1.IssuerReference{Group: "cert-manager.io", Kind: "ClusterIssuer", Name: "le"}
)

func want(owner, host string) *Want {
	return &Want{Key: Key{Namespace: "ns-" + owner, Host: host}, Owner: owner, Issuer: le}
}

func hosts(ws []*Want) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Host)
	}
	return out
}

func TestPacerIssuerBudget(t *testing.T) {
	p := NewPacer(Limits{Orders: 2, OrdersWindow: time.Hour, DomainCertificates: 100})
	pending := []*Want{want("a", "1.a.example"), want("a", "2.a.example"), want("a", "3.a.example")}
	plan := p.Plan(t0, pending)
	if got := strings.Join(hosts(plan.Admit), ","); got != "1.a.example,2.a.example" {
		t.Fatalf("admitted %s", got)
	}
	wt := plan.Wait[pending[2].Key]
	if wt.Reason != shardgatev1alpha1.ReasonCertificateQueued || !wt.Until.Equal(t0.Add(time.Hour)) || !strings.Contains(wt.Message, "allows 2 new certificates per 1h0m0s") {
		t.Fatalf("wait = %+v", wt)
	}
	if !plan.Next.Equal(t0.Add(time.Hour)) {
		t.Fatalf("next = %v", plan.Next)
	}
	if plan := p.Plan(t0.Add(59*time.Minute), pending[2:]); len(plan.Admit) != 0 {
		t.Fatal("admitted within the window")
	}
	if plan := p.Plan(t0.Add(time.Hour+time.Second), pending[2:]); len(plan.Admit) != 1 {
		t.Fatal("not admitted after the window")
	}
}

func TestPacerDomainBudgetDoesNotBlockOthers(t *testing.T) {
	p := NewPacer(Limits{Orders: 100, DomainCertificates: 1, DomainWindow: 24 * time.Hour})
	plan := p.Plan(t0, []*Want{want("a", "x.big.co.uk"), want("a", "y.big.co.uk"), want("a", "z.other.example")})
	if got := strings.Join(hosts(plan.Admit), ","); got != "x.big.co.uk,z.other.example" {
		t.Fatalf("admitted %s", got)
	}
	if wt := plan.Wait[Key{"ns-a", "y.big.co.uk"}]; !strings.Contains(wt.Message, "registered domain big.co.uk") {
		t.Fatalf("wait = %+v", wt)
	}
}

func TestPacerRebuildFromRecords(t *testing.T) {
	// A restart records the existing Certificates: the budget is not reset.
	p := NewPacer(Limits{Orders: 2, OrdersWindow: time.Hour})
	p.Record(IssuerKey(le, "ns"), "old1.example", "a", t0.Add(-30*time.Minute))
	p.Record(IssuerKey(le, "ns"), "old2.example", "b", t0.Add(-2*time.Hour)) // outside the window
	if plan := p.Plan(t0, []*Want{want("c", "1.c.example"), want("c", "2.c.example")}); len(plan.Admit) != 1 {
		t.Fatalf("admitted %v, want 1", hosts(plan.Admit))
	}
}

func TestPacerBackoff(t *testing.T) {
	p := NewPacer(Limits{BackoffInitial: time.Hour, BackoffMax: 3 * time.Hour})
	k := Key{"ns-a", "bad.example"}
	for i, d := range []time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour, 3 * time.Hour} {
		if next := p.Failed(k, t0, "no route"); !next.Equal(t0.Add(d)) {
			t.Fatalf("failure %d: next %v, want +%v", i+1, next, d)
		}
	}
	plan := p.Plan(t0.Add(time.Hour), []*Want{want("a", "bad.example")})
	if wt := plan.Wait[k]; wt.Reason != shardgatev1alpha1.ReasonCertificateBackoff || !strings.Contains(wt.Message, "no route") {
		t.Fatalf("wait = %+v", wt)
	}
	plan = p.Plan(t0.Add(3*time.Hour), []*Want{want("a", "bad.example")})
	if len(plan.Admit) != 1 {
		t.Fatalf("not retried after its backoff: %+v", plan)
	}
	p.Succeeded(k)
	if _, backing := p.Backoff(k, t0); backing {
		t.Fatal("backoff kept after success")
	}
}

func TestPacerRetriesQueueBehindFreshNames(t *testing.T) {
	p := NewPacer(Limits{Orders: 1, OrdersWindow: time.Hour, BackoffInitial: time.Minute})
	p.Failed(Key{"ns-a", "bad.example"}, t0.Add(-time.Hour), "dns")
	// a's retry sorts first by owner and host, and a was never served: the fresh name still goes first.
	plan := p.Plan(t0, []*Want{want("a", "bad.example"), want("z", "good.example")})
	if got := strings.Join(hosts(plan.Admit), ","); got != "good.example" {
		t.Fatalf("admitted %s, want good.example", got)
	}
}

// TestPacerPropertyFairness: whatever the tenants' names, failures and
// budgets, when the plan admits a retry or a tenant's second name, every
// other tenant's first fresh name whose domain has room is admitted too:
// a tenant, failing or not, delays another's first issuance by at most one
// round.
func TestPacerPropertyFairness(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 2000; iter++ {
		p := NewPacer(Limits{Orders: 1 + r.IntN(8), OrdersWindow: time.Hour, DomainCertificates: 1 + r.IntN(4), DomainWindow: 2 * time.Hour, BackoffInitial: time.Minute})
		var pending []*Want
		owners := 1 + r.IntN(5)
		for o := 0; o < owners; o++ {
			for n := r.IntN(6); n >= 0; n-- {
				w := want(fmt.Sprintf("o%d", o), fmt.Sprintf("h%d.d%d.example", n, r.IntN(3)))
				if r.IntN(3) == 0 {
					p.Failed(w.Key, t0.Add(-time.Hour), "x") // back off over: a retry
				}
				pending = append(pending, w)
			}
		}
		// Earlier issuance for random owners.
		for i := r.IntN(4); i > 0; i-- {
			p.Record(IssuerKey(le, ""), fmt.Sprintf("old%d.d%d.example", i, r.IntN(3)), fmt.Sprintf("o%d", r.IntN(owners)), t0.Add(-time.Duration(r.IntN(120))*time.Minute))
		}
		plan := p.Plan(t0, dedupe(pending))
		admittedOwners := map[string]int{}
		retried := false
		for _, w := range plan.Admit {
			admittedOwners[w.Owner]++
			if p.failed[w.Key] != nil {
				retried = true
			}
		}
		extra := retried
		for _, n := range admittedOwners {
			extra = extra || n > 1
		}
		if !extra {
			continue
		}
		// Each tenant's first fresh name (the round-robin's first round).
		first := map[string]*Want{}
		for _, w := range dedupe(pending) {
			if p.failed[w.Key] != nil {
				continue
			}
			if f := first[w.Owner]; f == nil || w.Host < f.Host {
				first[w.Owner] = w
			}
		}
		for _, w := range first {
			if admittedOwners[w.Owner] > 0 {
				continue
			}
			if wt := plan.Wait[w.Key]; !strings.Contains(wt.Message, "registered domain") {
				t.Fatalf("iteration %d: owner %s got nothing (%+v) while others got a second name or a retry: %v", iter, w.Owner, wt, hosts(plan.Admit))
			}
		}
	}
}

// TestPacerPropertyBudgets: over random demand and time, no issuer window
// and no registered-domain window ever holds more Certificates than its
// limit.
func TestPacerPropertyBudgets(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 200; iter++ {
		l := Limits{Orders: 1 + r.IntN(10), OrdersWindow: time.Duration(1+r.IntN(5)) * time.Hour,
			DomainCertificates: 1 + r.IntN(5), DomainWindow: time.Duration(1+r.IntN(10)) * time.Hour, BackoffInitial: time.Minute}
		p := NewPacer(l)
		type ev struct {
			at     time.Time
			domain string
		}
		var admitted []ev
		now := t0
		for step := 0; step < 60; step++ {
			now = now.Add(time.Duration(r.IntN(90)) * time.Minute)
			var pending []*Want
			for i := r.IntN(12); i > 0; i-- {
				pending = append(pending, want(fmt.Sprintf("o%d", r.IntN(4)), fmt.Sprintf("s%d-%d.d%d.example", step, i, r.IntN(3))))
			}
			for _, w := range p.Plan(now, pending).Admit {
				admitted = append(admitted, ev{now, RegisteredDomain(w.Host)})
			}
		}
		for i, a := range admitted {
			orders, domain := 0, 0
			for _, b := range admitted[:i+1] {
				if a.at.Sub(b.at) < l.OrdersWindow {
					orders++
				}
				if b.domain == a.domain && a.at.Sub(b.at) < l.DomainWindow {
					domain++
				}
			}
			if orders > l.Orders || domain > l.DomainCertificates {
				t.Fatalf("iteration %d: at %v %d orders (limit %d), %d for %s (limit %d)", iter, a.at, orders, l.Orders, domain, a.domain, l.DomainCertificates)
			}
		}
	}
}

func dedupe(ws []*Want) []*Want {
	seen := map[Key]bool{}
	var out []*Want
	for _, w := range ws {
		if !seen[w.Key] {
			seen[w.Key] = true
			out = append(out, w)
		}
	}
	return out
}

func TestRegisteredDomain(t *testing.T) {
	for host, want := range map[string]string{"a.b.example.com": "example.com", "x.big.co.uk": "big.co.uk", "localhost": "localhost"} {
		if got := RegisteredDomain(host); got != want {
			t.Errorf("RegisteredDomain(%q) = %q, want %q", host, got, want)
		}
	}
}
