package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// percentile of sorted samples, nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted)) + 0.999999)
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func stats(samples []time.Duration) (p50, p99, maxD time.Duration) {
	s := slices.Clone(samples)
	slices.Sort(s)
	if len(s) == 0 {
		return 0, 0, 0
	}
	return percentile(s, 50), percentile(s, 99), s[len(s)-1]
}

func summary(samples []time.Duration) string {
	p50, p99, m := stats(samples)
	return fmt.Sprintf("%d samples: p50 %s, p99 %s, max %s", len(samples), ms(p50), ms(p99), ms(m))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

type row struct {
	figure, value, target, verdict string
}

func verdict(measured, pass bool) string {
	switch {
	case !measured:
		return "NOT MEASURED"
	case pass:
		return "PASS"
	default:
		return "MISS"
	}
}

// rows are the table: every figure with its target and PASS or MISS.
func rows(cfg Config, r *Results) []row {
	n := cfg.AttachRoutes
	var out []row
	attachOK := r.AttachTotal > 0
	out = append(out,
		row{fmt.Sprintf("attach: %d HTTPRoutes → attachedRoutes=%d and all Accepted", n, n),
			fmt.Sprintf("%s (creates took %s; attached %d, accepted %d)", ms(r.AttachTotal), ms(r.AttachCreate), r.Attached, r.Accepted),
			"≤ 1000 ms", verdict(attachOK, r.AttachTotal <= time.Second && r.Attached == n && r.Accepted == n)})
	writesTarget := 1.05 + 10/float64(n)
	out = append(out,
		row{"attach: status writes per route", fmt.Sprintf("%.3f (%.0f writes)", r.WritesPerRoute, r.StatusWrites),
			fmt.Sprintf("≤ %.3f", writesTarget), verdict(attachOK, r.WritesPerRoute <= writesTarget)},
		row{"attach: teardown (delete → attachedRoutes=0)", ms(r.Teardown), "—", verdict(r.Teardown > 0, true)},
	)
	memOK := r.RSS > 0
	out = append(out,
		row{fmt.Sprintf("memory: RSS, %d HTTPRoutes + %d Services/EndpointSlices", r.MemoryRoutes, r.MemoryServices),
			fmt.Sprintf("%s (peak %s)", mib(r.RSS), mib(r.PeakRSS)), "≤ 150 MiB", verdict(memOK, r.RSS <= 150<<20)},
		row{"memory: Go heap in use", mib(r.HeapInuse), "—", verdict(r.HeapInuse > 0, true)},
	)
	for _, ph := range []struct {
		name    string
		samples []time.Duration
		late    int
		trN     int
		trMean  time.Duration
	}{
		{fmt.Sprintf("propagation (%d routes present)", cfg.PropagationRoutes), r.Propagation, r.PropagationLate, r.PropagationTranslations, r.PropagationTranslateMean},
		{fmt.Sprintf("propagation under churn (%d updates/s)", cfg.ChurnRate), r.Churn, r.ChurnLate, r.ChurnTranslations, r.ChurnTranslateMean},
	} {
		p50, p99, m := stats(ph.samples)
		ok := len(ph.samples) > 0
		extra := ""
		if ph.late > 0 {
			extra = fmt.Sprintf(" (%d timed out)", ph.late)
		}
		out = append(out,
			row{ph.name + ": p50", ms(p50), "≤ 5 ms", verdict(ok, p50 <= 5*time.Millisecond)},
			row{ph.name + ": p99", ms(p99) + extra, "≤ 25 ms", verdict(ok, p99 <= 25*time.Millisecond && ph.late == 0)},
			row{ph.name + ": max", fmt.Sprintf("%s (%d samples)", ms(m), len(ph.samples)), "—", verdict(ok, true)},
			row{ph.name + ": translations (mean time)", fmt.Sprintf("%d (%s each)", ph.trN, ms(ph.trMean)), "—", verdict(ok, true)},
		)
	}
	for i := range out {
		if out[i].target == "—" && out[i].verdict == "PASS" {
			out[i].verdict = "info"
		}
	}
	return out
}

func printTable(w io.Writer, cfg Config, r *Results) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIGURE\tVALUE\tTARGET\tRESULT")
	for _, row := range rows(cfg, r) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", row.figure, row.value, row.target, row.verdict)
	}
	_ = tw.Flush()
	for _, e := range r.Errors {
		fmt.Fprintln(w, "phase error:", e)
	}
}
