package report

import (
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/loadtest/internal/loss"
	"github.com/arc-otel/arc-otel/loadtest/internal/stack"
)

func sampleReport() *Report {
	nan := Float(math.NaN())
	samples := func(rate float64) []Sample {
		var out []Sample
		for i := 1; i <= 3; i++ {
			out = append(out, Sample{At: float64(5 * i), Target: 100_000, Rate: rate, Durable: rate * 0.9, Total: int64(i) * 500_000,
				Latency: Percentiles{1, 2, 3, 4}, AckLatency: Percentiles{0.5, 1, 1.5, nan},
				CPU: map[string]float64{"otelcol-arc": 0.8}, RSS: map[string]int64{"otelcol-arc": 100 << 20}})
		}
		return out
	}
	return &Report{
		Started: time.Date(2026, 11, 22, 17, 0, 0, 0, time.UTC),
		Plan:    Plan{Scenario: "traces", Driver: "otlp", Rate: 100_000, Duration: "15s", Workers: 4, Batch: 1000},
		Machine: Machine{CPUs: 2, GoVersion: "go1.26"},
		Ceiling: &Phase{Name: "ceiling (nop exporter)", Export: "nop", Target: 100_000, Rate: 100_000, Acked: map[string]int64{"traces": 1_500_000},
			Samples: samples(100_000), Procs: map[string]stack.Usage{"otelcol-arc": {CPUSeconds: 10, PeakRSSBytes: 200 << 20}}},
		Arc: &Phase{Name: "arc", Export: "arc", Target: 100_000, Rate: 80_000, Acked: map[string]int64{"traces": 1_200_000},
			Latency: Percentiles{1, 2, 3, 4}, AckLatency: Percentiles{0.5, 1, 1.5, nan}, Samples: samples(80_000),
			Loss:  []loss.Table{loss.Compute("traces", 1_200_000, 1_200_000, 1_200_000)},
			Procs: map[string]stack.Usage{"arcstore": {CPUSeconds: 12.5, PeakRSSBytes: 300 << 20}}},
		Ratio:    0.8,
		Failures: []string{},
	}
}

func TestMarkdownStatesRatioLossAndProcesses(t *testing.T) {
	md := sampleReport().Markdown()
	for _, want := range []string{
		"# Load run: traces (otlp driver), 2026-11-22 17:00 UTC",
		"**Result: pass**",
		"| rate (items/s) | 100,000 | 80,000 |",
		"| of the ceiling | 100 % | **80 %** |",
		"| traces | 1,200,000 | 1,200,000 | 1,200,000 | 0 | 0 | 0 | yes | 0 | - |",
		"| arcstore: CPU s / peak RSS | - | 12.5 s / 300 MiB |",
		"durable-ack latency p50 / p95 / p99 / p999 (ms) | n/a | 0.50 / 1.00 / 1.50 / - |",
		"## Progress every interval (arc)",
	} {
		assert.Contains(t, md, want)
	}
}

// TestMarkdownComparesArcProtocolServers: what a side-by-side of two Arc
// write APIs needs: acked and stored rates, push-backs, CPU per stored
// row, bytes per row, the payload's weight.
// TestMarkdownBreaksDownTheRequest: the request's mean is split into the
// collector's part, the Flight transfer and the durable ack, which add up
// to it; a ceiling has no such parts.
func TestMarkdownBreaksDownTheRequest(t *testing.T) {
	r := sampleReport()
	r.Arc.Breakdown = &Breakdown{RequestMS: 12.5, PutMS: 9.25, AckMS: 4, CommitMS: 2.5, GroupBatches: 1.5}
	md := r.Markdown()
	assert.Contains(t, md, "| request mean = collector + Flight transfer + durable ack (ms) | n/a | 12 = 3.25 + 5.25 + 4.00 |")
	assert.Contains(t, md, "| WAL commit mean (ms) / batches per commit | n/a | 2.50 / 1.50 |")
	assert.NotContains(t, sampleReport().Markdown(), "request mean =", "no breakdown, no row")
}

func TestMeanLatency(t *testing.T) {
	assert.True(t, math.IsNaN(float64(Mean(nil))))
	assert.InDelta(t, 2.5, float64(Mean([]time.Duration{time.Millisecond, 4 * time.Millisecond})), 1e-9)
}

func TestMarkdownComparesArcProtocolServers(t *testing.T) {
	r := sampleReport()
	r.Ceiling = nil
	r.Ratio = 0
	r.Plan.Scenario, r.Plan.Driver = "arc-logs", "arc"
	r.Arc = &Phase{Name: "target http://127.0.0.1:8000", Export: "arc", Rate: 90_000, SendS: 10, FlushS: 5,
		Acked: map[string]int64{"application_logs": 1_000_000}, Throttled: 1234,
		Latency: Percentiles{1, 2, 3, 4}, AckLatency: Percentiles{Float(math.NaN()), Float(math.NaN()), Float(math.NaN()), Float(math.NaN())},
		Loss: []loss.Table{func() loss.Table {
			t := loss.Compute("application_logs", 1_000_000, 900_000, -1)
			t.Files, t.Bytes = 4, 18_000_000
			return t
		}()},
		Procs:   map[string]stack.Usage{"target": {CPUSeconds: 4.5, PeakRSSBytes: 6 << 30}},
		Payload: map[string]PayloadSize{"application_logs": {Rows: 1000, Raw: 161_109, Gzip: 52_657, Distinct: 400}},
	}
	md := r.Markdown()
	for _, want := range []string{
		"| rate (items/s) | 90,000 |",
		"| acknowledged rate (items/s) | 100,000 |",
		"| requests pushed back (429/503, retried) | 1,234 |",
		"| target: CPU s / peak RSS | 4.5 s / 6144 MiB |",
		"| target: CPU µs per stored row | 5.00 |",
		"| Parquet bytes per stored row | 20.0 |",
		"One application_logs batch (target http://127.0.0.1:8000): 1,000 rows, 161,109 bytes MessagePack, 52,657 gzip-1. " +
			"400 distinct batches (400,000 rows); each row sent 2.50 times on average (the run cycled through them: rows repeat).",
		"| application_logs | 1,000,000 | 900,000 | n/a | 100000 | 0 | 0 | **NO** | 4 | 20.0 |",
	} {
		assert.Contains(t, md, want)
	}
	assert.NotContains(t, sampleReport().Markdown(), "pushed back", "only when something was pushed back")
}

func TestPayloadRepeats(t *testing.T) {
	p := PayloadSize{Rows: 1000, Distinct: 8192}
	assert.InDelta(t, 0.5, p.Repeats(4_096_000), 1e-9, "half the rows sent, none twice")
	assert.InDelta(t, 3, p.Repeats(3*8_192_000), 1e-9)
	assert.Zero(t, PayloadSize{}.Repeats(10), "unknown without the batches")
}

func TestMarkdownShowsFailuresAndLoss(t *testing.T) {
	r := sampleReport()
	r.Arc.Loss = []loss.Table{loss.Compute("traces", 1000, 990, 990)}
	r.Failures = []string{"arc: table traces lost 10"}
	md := r.Markdown()
	assert.Contains(t, md, "**Result: FAIL**")
	assert.Contains(t, md, "- arc: table traces lost 10")
	assert.Contains(t, md, "| traces | 1,000 | 990 | 990 | 10 | 0 | 0 | **NO** | 0 | - |")
}

func TestWriteProducesJSONMarkdownAndPNG(t *testing.T) {
	dir := t.TempDir()
	r := sampleReport()
	r.Sweep = &Sweep{Steps: []Step{{Target: 50_000, Rate: 50_000, Achievement: 1, Passed: true, FsyncP99: 2},
		{Target: 100_000, Rate: 80_000, Achievement: 0.8, Why: "achieved 80.0 % of the target", FsyncP99: Float(math.NaN())}},
		Knee: 50_000, Saturated: "CPU"}
	require.NoError(t, r.Write(dir))

	js, err := os.ReadFile(filepath.Join(dir, JSONFile))
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(js, &back), "NaN percentiles are written as null")
	assert.Equal(t, r.Arc.Rate, back.Arc.Rate)
	assert.Equal(t, r.Arc.Loss, back.Arc.Loss)
	assert.True(t, math.IsNaN(float64(back.Arc.AckLatency.P999)))
	assert.Equal(t, 50_000.0, back.Sweep.Knee)

	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	require.NoError(t, err)
	assert.Contains(t, string(md), "**Knee: 50,000 items/s.** Saturated first: CPU.")

	f, err := os.Open(filepath.Join(dir, ChartFile))
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	assert.Greater(t, img.Bounds().Dx(), 500)
}

func TestExactPercentiles(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 1000; i++ {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	p := Exact(lat)
	assert.Equal(t, Percentiles{500, 950, 990, 999}, p)
	assert.True(t, math.IsNaN(float64(Exact(nil).P50)))
}

// TestExactPercentilesOfKnownDistributions: nearest rank (the smallest
// value with at least q of the observations at or below it), whatever the
// order the latencies came in.
func TestExactPercentilesOfKnownDistributions(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	repeat := func(v, n int) []int { return slices.Repeat([]int{v}, n) }
	tests := []struct {
		name string
		lat  []time.Duration
		want Percentiles
	}{
		{name: "one request", lat: ms(7), want: Percentiles{7, 7, 7, 7}},
		{name: "ten, shuffled", lat: ms(5, 9, 1, 10, 3, 7, 2, 8, 6, 4), want: Percentiles{5, 10, 10, 10}},
		{name: "a slow hundredth is p99's edge", lat: ms(append(repeat(1, 990), repeat(100, 10)...)...), want: Percentiles{1, 1, 1, 100}},
		{name: "one more slow one reaches p99", lat: ms(append(repeat(1, 989), repeat(100, 11)...)...), want: Percentiles{1, 1, 100, 100}},
		{name: "a slow half", lat: ms(append(repeat(100, 500), repeat(1, 500)...)...), want: Percentiles{1, 100, 100, 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Exact(tt.lat))
		})
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4500: "-4,500"} {
		assert.Equal(t, want, count(n))
	}
}
