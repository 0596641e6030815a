package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Markdown renders the report for humans.
func (r *Report) Markdown() string {
	var b strings.Builder
	p := r.Plan
	fmt.Fprintf(&b, "# Load run: %s (%s driver), %s\n\n", p.Scenario, p.Driver, r.Started.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "Target %s items/s, %s, %d workers, batch %d. Machine: %d CPUs", rate(p.Rate), p.Duration, p.Workers, p.Batch, r.Machine.CPUs)
	if r.Machine.CPUModel != "" {
		fmt.Fprintf(&b, " (%s)", r.Machine.CPUModel)
	}
	fmt.Fprintf(&b, ", %s.\n\n", r.Machine.GoVersion)
	if r.Passed() {
		b.WriteString("**Result: pass** (no loss, no duplicate, no error).\n\n")
	} else {
		b.WriteString("**Result: FAIL**\n\n")
		for _, f := range r.Failures {
			fmt.Fprintf(&b, "- %s\n", f)
		}
		b.WriteString("\n")
	}
	phases := r.phases()
	if len(phases) > 0 {
		r.summary(&b, phases)
	}
	for _, ph := range phases {
		if len(ph.Loss) > 0 {
			lossTable(&b, ph)
		}
	}
	if r.Sweep != nil {
		sweepTable(&b, r.Sweep)
	}
	for _, ph := range phases {
		progressTable(&b, ph)
	}
	fmt.Fprintf(&b, "Chart: [%s](%s)\n", ChartFile, ChartFile)
	return b.String()
}

func (r *Report) phases() []*Phase {
	var out []*Phase
	for _, ph := range []*Phase{r.Ceiling, r.Arc} {
		if ph != nil {
			out = append(out, ph)
		}
	}
	return out
}

func (r *Report) summary(b *strings.Builder, phases []*Phase) {
	b.WriteString("## Summary\n\n|  |")
	for _, ph := range phases {
		fmt.Fprintf(b, " %s |", ph.Name)
	}
	b.WriteString("\n| --- |" + strings.Repeat(" ---: |", len(phases)) + "\n")
	row := func(name string, cell func(*Phase) string) {
		fmt.Fprintf(b, "| %s |", name)
		for _, ph := range phases {
			fmt.Fprintf(b, " %s |", cell(ph))
		}
		b.WriteString("\n")
	}
	row("rate (items/s)", func(ph *Phase) string { return rate(ph.Rate) })
	if r.Ratio > 0 {
		row("of the ceiling", func(ph *Phase) string {
			if ph == r.Arc {
				return fmt.Sprintf("**%.0f %%**", 100*r.Ratio)
			}
			return "100 %"
		})
	}
	row("achievement of target", func(ph *Phase) string {
		if ph.Target <= 0 {
			return "unlimited"
		}
		return fmt.Sprintf("%.1f %%", 100*ph.Achievement)
	})
	row("items acknowledged", func(ph *Phase) string { return count(ph.Items()) })
	row("acknowledged rate (items/s)", func(ph *Phase) string {
		if ph.SendS <= 0 {
			return "-"
		}
		return rate(float64(ph.Items()) / ph.SendS)
	})
	row("errors / rejected", func(ph *Phase) string { return fmt.Sprintf("%d / %d", ph.Errors, ph.Rejected) })
	if slices.ContainsFunc(phases, func(ph *Phase) bool { return ph.Throttled > 0 }) {
		row("requests pushed back (429/503, retried)", func(ph *Phase) string { return count(ph.Throttled) })
	}
	row("send / drain / flush (s)", func(ph *Phase) string { return fmt.Sprintf("%.1f / %.1f / %.1f", ph.SendS, ph.DrainS, ph.FlushS) })
	row("request latency at the sender p50 / p95 / p99 / p999 (ms)", func(ph *Phase) string { return pct4(ph.Latency) })
	row("durable-ack latency p50 / p95 / p99 / p999 (ms)", func(ph *Phase) string {
		if ph.Export != "arc" {
			return "n/a"
		}
		return pct4(ph.AckLatency)
	})
	if slices.ContainsFunc(phases, func(ph *Phase) bool { return ph.Breakdown != nil }) {
		row("request mean = collector + Flight transfer + durable ack (ms)", func(ph *Phase) string {
			if ph.Breakdown == nil {
				return "n/a"
			}
			return ph.Breakdown.Split()
		})
		row("WAL commit mean (ms) / batches per commit", func(ph *Phase) string {
			if ph.Breakdown == nil {
				return "n/a"
			}
			return fmt.Sprintf("%s / %s", ms(ph.Breakdown.CommitMS), ms(ph.Breakdown.GroupBatches))
		})
	}
	for _, name := range procNames(phases) {
		row(name+": CPU s / peak RSS", func(ph *Phase) string {
			u, ok := ph.Procs[name]
			if !ok {
				return "-"
			}
			return fmt.Sprintf("%.1f s / %s", u.CPUSeconds, mib(u.PeakRSSBytes))
		})
	}
	if slices.ContainsFunc(phases, func(ph *Phase) bool { n, _ := ph.Stored(); return n > 0 }) {
		for _, name := range procNames(phases) {
			row(name+": CPU µs per stored row", func(ph *Phase) string {
				u, ok := ph.Procs[name]
				n, _ := ph.Stored()
				if !ok || n == 0 {
					return "-"
				}
				return fmt.Sprintf("%.2f", 1e6*u.CPUSeconds/float64(n))
			})
		}
		row("Parquet bytes per stored row", func(ph *Phase) string {
			n, b := ph.Stored()
			if n == 0 {
				return "-"
			}
			return fmt.Sprintf("%.1f", float64(b)/float64(n))
		})
	}
	for _, ph := range phases {
		for _, table := range slices.Sorted(maps.Keys(ph.Payload)) {
			p := ph.Payload[table]
			fmt.Fprintf(b, "\nOne %s batch (%s): %s rows, %s bytes MessagePack, %s gzip-1.", table, ph.Name, count(int64(p.Rows)), count(int64(p.Raw)), count(int64(p.Gzip)))
			if p.Distinct > 0 {
				fmt.Fprintf(b, " %s distinct batches (%s rows); each row sent %.2f times on average", count(int64(p.Distinct)), count(int64(p.Distinct*p.Rows)), p.Repeats(ph.Acked[table]))
				if p.Repeats(ph.Acked[table]) > 1 {
					b.WriteString(" (the run cycled through them: rows repeat)")
				}
				b.WriteString(".")
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n")
}

func procNames(phases []*Phase) []string {
	var names []string
	for _, ph := range phases {
		for n := range ph.Procs {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names
}

func lossTable(b *strings.Builder, ph *Phase) {
	fmt.Fprintf(b, "## Loss check (%s)\n\nRows counted in the Parquet files with DuckDB after the sidecar's shutdown flush (a running target: once its files held still).\n\n", ph.Name)
	b.WriteString("| table | expected | found | distinct ids | lost | duplicated | unexpected | ok | files | bytes per row |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |\n")
	for _, t := range ph.Loss {
		distinct := "n/a"
		if t.Distinct >= 0 {
			distinct = count(t.Distinct)
		}
		ok := "yes"
		if !t.OK() {
			ok = "**NO**"
		}
		perRow := "-"
		if t.BytesPerRow() > 0 {
			perRow = fmt.Sprintf("%.1f", t.BytesPerRow())
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %d | %d | %d | %s | %d | %s |\n", t.Table, count(t.Expected), count(t.Found), distinct, t.Lost, t.Duplicated, t.Unexpected, ok, t.Files, perRow)
	}
	b.WriteString("\n")
}

func sweepTable(b *strings.Builder, s *Sweep) {
	b.WriteString("## Sweep\n\n| target/s | rate/s | durable/s | achievement | errors | request p99 ms | ack p50 ms | ack p99 ms | fsync p99 ms | CPU (cores) | queue fill | verdict |\n")
	b.WriteString("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |\n")
	for _, st := range s.Steps {
		verdict := "pass"
		if !st.Passed {
			verdict = "stop: " + st.Why
		}
		fmt.Fprintf(b, "| %s | %s | %s | %.1f %% | %d | %s | %s | %s | %s | %s | %.0f %% | %s |\n",
			rate(st.Target), rate(st.Rate), rate(st.Durable), 100*st.Achievement, st.Errors,
			ms(st.Latency.P99), ms(st.AckLatency.P50), ms(st.AckLatency.P99), ms(st.FsyncP99), cpus(st.CPU), 100*st.QueueFill, verdict)
	}
	fmt.Fprintf(b, "\n**Knee: %s items/s.** Saturated first: %s.\n\n", rate(s.Knee), s.Saturated)
}

func progressTable(b *strings.Builder, ph *Phase) {
	if len(ph.Samples) == 0 {
		return
	}
	fmt.Fprintf(b, "## Progress every interval (%s)\n\n", ph.Name)
	b.WriteString("| t (s) | target/s | rate/s | durable/s | total | errors | p50 | p95 | p99 | p999 | ack p50 | ack p99 | CPU (cores) | queue |\n")
	b.WriteString("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |\n")
	for _, s := range ph.Samples {
		fmt.Fprintf(b, "| %.0f | %s | %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			s.At, rate(s.Target), rate(s.Rate), rate(s.Durable), count(s.Total), s.Errors,
			ms(s.Latency.P50), ms(s.Latency.P95), ms(s.Latency.P99), ms(s.Latency.P999),
			ms(s.AckLatency.P50), ms(s.AckLatency.P99), cpus(s.CPU), count(int64(s.QueueItems)))
	}
	b.WriteString("\n")
}

func cpus(m map[string]float64) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %.2f", n, m[n])
	}
	return strings.Join(parts, ", ")
}

func rate(v float64) string {
	if v <= 0 || math.IsNaN(v) {
		return "-"
	}
	return count(int64(math.Round(v)))
}

// count groups thousands with a thin space, as the seeds' reports do with
// commas, without being mistaken for a decimal point anywhere.
func count(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []string
	for len(s) > 3 {
		out = append([]string{s[len(s)-3:]}, out...)
		s = s[:len(s)-3]
	}
	out = append([]string{s}, out...)
	res := strings.Join(out, ",")
	if neg {
		res = "-" + res
	}
	return res
}

func ms(f Float) string {
	if math.IsNaN(float64(f)) {
		return "-"
	}
	if f < 10 {
		return fmt.Sprintf("%.2f", float64(f))
	}
	return fmt.Sprintf("%.0f", float64(f))
}

// Split writes the request's mean as the sum of its parts: the collector's
// own (request minus put), the Flight transfer (put minus ack) and the
// sidecar's durable ack.
func (b *Breakdown) Split() string {
	return fmt.Sprintf("%s = %s + %s + %s", ms(b.RequestMS), ms(b.RequestMS-b.PutMS), ms(b.PutMS-b.AckMS), ms(b.AckMS))
}

func pct4(p Percentiles) string {
	return fmt.Sprintf("%s / %s / %s / %s", ms(p.P50), ms(p.P95), ms(p.P99), ms(p.P999))
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
