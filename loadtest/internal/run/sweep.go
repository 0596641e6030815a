package run

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/arc-otel/arc-otel/loadtest/internal/report"
)

// sweep raises the target rate step by step on one stack. Each step holds
// for Sweep.Hold; its verdict is judged on the intervals after the first,
// once the step is steady. It stops at the first step that misses: under
// 95 % of its target, a durable-ack p99 over the bound, or any error.
func (r *Runner) sweep(ctx context.Context, l *load, w *watcher, ph *report.Phase) error {
	sw := &report.Sweep{}
	r.lastSweep = sw
	for i := 0; r.Sweep.MaxSteps <= 0 || i < r.Sweep.MaxSteps; i++ {
		targetRate := r.Sweep.Start + float64(i)*r.Sweep.Step
		from := len(ph.Samples)
		errsBefore := w.errors
		begin, err := w.read()
		if err != nil {
			return err
		}
		if err := r.steady(ctx, l, w, ph, targetRate, r.Sweep.Hold); err != nil {
			return err
		}
		end := w.prev
		st := r.judge(ph.Samples[from:], begin, end, targetRate, w.errors-errsBefore)
		sw.Steps = append(sw.Steps, st)
		r.Progress(fmt.Sprintf("[sweep] step %d target %.0f/s: rate %.0f/s (%.1f%%), ack p99 %.1f ms, errors %d: %s",
			i+1, targetRate, st.Rate, 100*st.Achievement, st.AckLatency.P99, st.Errors, verdict(st)))
		if !st.Passed {
			sw.Saturated = saturated(st)
			break
		}
		sw.Knee = targetRate
		if ctx.Err() != nil {
			break
		}
	}
	if sw.Saturated == "" {
		sw.Saturated = "nothing within the steps tried"
	}
	return nil
}

func verdict(st report.Step) string {
	if st.Passed {
		return "pass"
	}
	return "stop: " + st.Why
}

// judge describes one step from its samples, skipping the first interval
// (the ramp from the previous rate), and its metrics between begin and end.
func (r *Runner) judge(samples []report.Sample, begin, end point, targetRate float64, errs int64) report.Step {
	steady := samples
	if len(steady) > 1 {
		steady = steady[1:]
	}
	st := report.Step{Target: targetRate, Errors: errs, CPU: map[string]float64{}}
	var secs float64
	var lat []report.Percentiles
	for _, s := range steady {
		dt := r.Interval.Seconds()
		secs += dt
		st.Rate += s.Rate * dt
		st.Durable += s.Durable * dt
		for name, c := range s.CPU {
			st.CPU[name] += c * dt
		}
		lat = append(lat, s.Latency)
	}
	if secs > 0 {
		st.Rate /= secs
		st.Durable /= secs
		for name := range st.CPU {
			st.CPU[name] /= secs
		}
	}
	st.Latency = worst(lat)
	st.Achievement = st.Rate / targetRate
	st.AckLatency = ackPercentiles(end.sidecar, begin.sidecar)
	fsync := end.sidecar.Histogram(metricFsyncDuration, nil).Sub(begin.sidecar.Histogram(metricFsyncDuration, nil))
	st.FsyncP99 = report.Float(1000 * fsync.Quantile(0.99))
	var growth float64
	if capacity := end.collector.Max(metricQueueCapacity, map[string]string{"exporter": "arc"}); capacity > 0 && len(steady) > 0 {
		var peak float64
		for _, s := range samples {
			peak = max(peak, s.QueueItems)
		}
		st.QueueFill = peak / capacity
		growth = (steady[len(steady)-1].QueueItems - samples[0].QueueItems) / capacity
	}
	var why []string
	if st.Achievement < 0.95 {
		why = append(why, fmt.Sprintf("achieved %.1f %% of the target", 100*st.Achievement))
	}
	if p99 := float64(st.AckLatency.P99); !math.IsNaN(p99) && p99 > float64(r.Sweep.MaxP99.Milliseconds()) {
		why = append(why, fmt.Sprintf("durable-ack p99 %.1f ms over %v", p99, r.Sweep.MaxP99))
	}
	if st.Durable > 0 && st.Durable < 0.95*targetRate {
		why = append(why, fmt.Sprintf("durable rate %.1f %% of the target", 100*st.Durable/targetRate))
	}
	// A queue that keeps growing means intake outruns the export: the rate
	// holds only until the queue is full.
	if growth > 0.1 {
		why = append(why, fmt.Sprintf("exporter queue grew by %.0f %% of its capacity", 100*growth))
	}
	if errs > 0 {
		why = append(why, fmt.Sprintf("%d errors", errs))
	}
	st.Passed = len(why) == 0
	st.Why = strings.Join(why, "; ")
	return st
}

// worst keeps, per percentile, the highest interval value: a step is as
// good as its worst steady interval.
func worst(ps []report.Percentiles) report.Percentiles {
	nan := report.Float(math.NaN())
	out := report.Percentiles{P50: nan, P95: nan, P99: nan, P999: nan}
	pick := func(a, b report.Float) report.Float {
		if math.IsNaN(float64(a)) || b > a {
			return b
		}
		return a
	}
	for _, p := range ps {
		out.P50, out.P95, out.P99, out.P999 = pick(out.P50, p.P50), pick(out.P95, p.P95), pick(out.P99, p.P99), pick(out.P999, p.P999)
	}
	return out
}

// saturated names what gave out first at a failed step, from the evidence
// the step recorded: a filling exporter queue means the path behind the
// collector (conversion, the sidecar) is slower than intake; slow fsyncs
// point at the disk; otherwise the busiest process on a machine whose
// cores are used up.
func saturated(st report.Step) string {
	var parts []string
	if st.QueueFill >= 0.5 {
		parts = append(parts, fmt.Sprintf("the arc exporter's sending queue (%.0f %% full): the export path behind the collector is slower than intake", 100*st.QueueFill))
	}
	if p := float64(st.FsyncP99); !math.IsNaN(p) && p >= 20 {
		parts = append(parts, fmt.Sprintf("WAL fsync (p99 %.1f ms)", p))
	}
	names := make([]string, 0, len(st.CPU))
	total := 0.0
	for n, c := range st.CPU {
		names = append(names, n)
		total += c
	}
	slices.SortFunc(names, func(a, b string) int { return cmpDesc(st.CPU[a], st.CPU[b]) })
	if len(names) > 0 {
		cpu := fmt.Sprintf("CPU: %.2f cores in use; busiest %s (%.2f cores)", total, names[0], st.CPU[names[0]])
		parts = append(parts, cpu)
	}
	if len(parts) == 0 {
		return "unknown"
	}
	return strings.Join(parts, "; ")
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}
