package hostnames

import (
	"fmt"
	"testing"
)

// benchBlockList has 10k suffix entries spread over a few TLDs, as a large
// provider's list might look, plus 1k exact entries.
func benchBlockList(tb testing.TB) *BlockList {
	tb.Helper()
	tlds := []string{"com", "net", "org", "io", "dev"}
	entries := make([]string, 0, 11000)
	for i := range 10000 {
		entries = append(entries, fmt.Sprintf(".blocked-%05d.%s", i, tlds[i%len(tlds)]))
	}
	for i := range 1000 {
		entries = append(entries, fmt.Sprintf("exact-%04d.example.com", i))
	}
	b, err := NewBlockList(entries...)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// benchNames are requests that do not match (the common case: the walk goes
// all the way to the TLD), with a few that do.
func benchNames() []string {
	names := make([]string, 0, 1024)
	for i := range 1024 {
		switch i % 16 {
		case 0:
			names = append(names, fmt.Sprintf("app.x.blocked-%05d.net", (i*7)%10000/5*5+1))
		default:
			names = append(names, fmt.Sprintf("app-%d.tenant-%d.provider.example.io", i, i%37))
		}
	}
	return names
}

func BenchmarkBlockListMatch(b *testing.B) {
	bl := benchBlockList(b)
	names := benchNames()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		bl.Match(names[n%len(names)])
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "checks/s")
}

func BenchmarkCanReserve(b *testing.B) {
	e := New(benchBlockList(b))
	// 10k names held by 1k owners, so the claim index is not trivially small.
	for i := range 10000 {
		e.Upsert(lh(fmt.Sprintf("uid-%d", i), i, fmt.Sprintf("owner-%d", i%1000), uint64(i), fmt.Sprintf("held-%d.tenant-%d.provider.example.io", i, i%37)))
	}
	names := benchNames()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		_ = e.CanReserve("owner-1", names[n%len(names)])
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "checks/s")
}

// BenchmarkUpsertNonConflicting measures admitting a fresh, free name.
func BenchmarkUpsertNonConflicting(b *testing.B) {
	e := New(benchBlockList(b))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		uid := fmt.Sprintf("u%d", n%4096)
		e.Upsert(lh(uid, n, "owner", 1, fmt.Sprintf("app-%d.tenant.provider.example.io", n%4096)))
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "upserts/s")
}

func BenchmarkNormaliseUnicode(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, _ = Normalise("Bücher.Tenant.Example")
	}
}

// BenchmarkBlockListMatchIDN measures the homograph checks: every name has
// a punycode label, so each check decodes it and matches its skeleton too.
func BenchmarkBlockListMatchIDN(b *testing.B) {
	bl := benchBlockList(b)
	names := []string{"xn--80ak6aa92e.com", "www.xn--80ak6aa92e.com", "xn--bcher-kva.tenant.example.io", "shop.xn--e1afmkfd.xn--p1ai"}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		bl.Match(names[n%len(names)])
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "checks/s")
}
