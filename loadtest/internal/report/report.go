// Package report holds what a load run measured and writes it as JSON, a
// Markdown report and a PNG chart.
package report

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/arc-otel/arc-otel/loadtest/internal/loss"
	"github.com/arc-otel/arc-otel/loadtest/internal/stack"
)

// File names under a run's results folder.
const (
	JSONFile     = "report.json"
	MarkdownFile = "report.md"
	ChartFile    = "report.png"
)

// Percentiles in milliseconds; NaN (null in JSON) when nothing was observed.
type Percentiles struct {
	P50  Float `json:"p50_ms"`
	P95  Float `json:"p95_ms"`
	P99  Float `json:"p99_ms"`
	P999 Float `json:"p999_ms"`
}

// Float writes NaN as JSON null.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(math.Round(float64(f)*1000) / 1000)
}

// UnmarshalJSON implements json.Unmarshaler.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	return json.Unmarshal(b, (*float64)(f))
}

// Exact computes percentiles of a set of latencies.
func Exact(lat []time.Duration) Percentiles {
	if len(lat) == 0 {
		nan := Float(math.NaN())
		return Percentiles{nan, nan, nan, nan}
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	at := func(q float64) Float {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return Float(float64(s[max(0, i)]) / float64(time.Millisecond))
	}
	return Percentiles{at(0.50), at(0.95), at(0.99), at(0.999)}
}

// Mean is the mean of a set of latencies in milliseconds; NaN when there
// is none.
func Mean(lat []time.Duration) Float {
	if len(lat) == 0 {
		return Float(math.NaN())
	}
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	return Float(float64(sum) / float64(len(lat)) / float64(time.Millisecond))
}

// Breakdown is where an OTLP request's time went, as means over the phase
// (means add up where percentiles do not), each stage inside the one
// before: the request at the sender; the exporter's Flight put of a
// push's batches, first write to last acknowledgement
// (otelcol_exporter_arc_put_duration); the sidecar's durable ack of a
// batch, arrival to ack (arcstore_ack_duration_seconds); one WAL group
// commit, write and fsync (arcstore_wal_fsync_duration_seconds), and the
// batches it carried. Request minus put is the collector's own part
// (receiving, the queue and batcher, conversion, answering); put minus ack
// is the Flight transfer both ways and the sidecar's gRPC hand-offs.
type Breakdown struct {
	RequestMS    Float `json:"request_mean_ms"`
	PutMS        Float `json:"put_mean_ms"`
	AckMS        Float `json:"ack_mean_ms"`
	CommitMS     Float `json:"commit_mean_ms"`
	GroupBatches Float `json:"commit_batches_mean"`
}

// Sample is one progress interval.
type Sample struct {
	At     float64 `json:"t_s"`
	Target float64 `json:"target_per_s"`
	// Rate is items per second the collector acknowledged to the sender.
	Rate float64 `json:"rate_per_s"`
	// Durable is rows per second the sidecar acknowledged as durable.
	Durable float64 `json:"durable_per_s"`
	Total   int64   `json:"total"`
	Errors  int64   `json:"errors"`
	// Latency of requests (OTLP or Arc) at the sender; AckLatency is the sidecar's
	// durable-ack latency (arrival of a batch to its ack).
	Latency    Percentiles `json:"latency"`
	AckLatency Percentiles `json:"ack_latency"`
	// CPU in cores used over the interval, RSS in bytes, per process.
	CPU        map[string]float64 `json:"cpu_cores"`
	RSS        map[string]int64   `json:"rss_bytes"`
	QueueItems float64            `json:"queue_items"`
}

// Phase is one stack under one load: the ceiling or ours.
type Phase struct {
	Name   string  `json:"name"`
	Export string  `json:"export"`
	Target float64 `json:"target_per_s"`
	SendS  float64 `json:"send_s"`
	// DrainS is how long after the last send the collector took to have
	// every accepted item acknowledged by the sidecar.
	DrainS float64 `json:"drain_s"`
	// FlushS is the sidecar's shutdown: writing what it buffered to Parquet.
	FlushS   float64          `json:"flush_s"`
	Acked    map[string]int64 `json:"acked"`
	Accepted map[string]int64 `json:"collector_accepted"`
	Errors   int64            `json:"errors"`
	Rejected int64            `json:"rejected"`
	// Throttled are requests the server pushed back (HTTP 429/503), retried.
	Throttled int64 `json:"throttled,omitempty"`
	// Payload is the weight of one batch per table (Arc driver).
	Payload map[string]PayloadSize `json:"payload,omitempty"`
	// Rate is the phase's result in items per second: for the ceiling the
	// acknowledged items over the send time; for ours the rows found in
	// Parquet over send plus drain time.
	Rate        float64     `json:"rate_per_s"`
	Achievement float64     `json:"achievement"`
	Latency     Percentiles `json:"latency"`
	AckLatency  Percentiles `json:"ack_latency"`
	// Breakdown is set for an OTLP phase through the arc exporter.
	Breakdown *Breakdown             `json:"breakdown,omitempty"`
	Procs     map[string]stack.Usage `json:"processes"`
	Loss      []loss.Table           `json:"loss,omitempty"`
	Samples   []Sample               `json:"samples"`
}

// Items sums acknowledged items.
func (p *Phase) Items() int64 {
	var n int64
	for _, v := range p.Acked {
		n += v
	}
	return n
}

// LossOK is true when every table passed the loss check.
func (p *Phase) LossOK() bool {
	for _, t := range p.Loss {
		if !t.OK() {
			return false
		}
	}
	return true
}

// PayloadSize is one batch: rows, MessagePack bytes, the same gzipped;
// and how many distinct batches the run cycled through.
type PayloadSize struct {
	Rows     int `json:"rows"`
	Raw      int `json:"raw_bytes"`
	Gzip     int `json:"gzip_bytes"`
	Distinct int `json:"distinct_batches"`
}

// Repeats is how many times the run sent each distinct row on average:
// at most 1 while it has not gone through its batches once.
func (p PayloadSize) Repeats(acked int64) float64 {
	if p.Distinct == 0 || p.Rows == 0 {
		return 0
	}
	return float64(acked) / float64(p.Distinct*p.Rows)
}

// Stored sums the rows and bytes found in Parquet.
func (p *Phase) Stored() (rows, bytes int64) {
	for _, t := range p.Loss {
		if t.Bytes > 0 {
			rows += t.Found
			bytes += t.Bytes
		}
	}
	return rows, bytes
}

// Step is one rate of a sweep.
type Step struct {
	Target      float64            `json:"target_per_s"`
	Rate        float64            `json:"rate_per_s"`
	Durable     float64            `json:"durable_per_s"`
	Achievement float64            `json:"achievement"`
	Errors      int64              `json:"errors"`
	Latency     Percentiles        `json:"latency"`
	AckLatency  Percentiles        `json:"ack_latency"`
	FsyncP99    Float              `json:"fsync_p99_ms"`
	CPU         map[string]float64 `json:"cpu_cores"`
	QueueFill   float64            `json:"queue_fill"`
	Passed      bool               `json:"passed"`
	Why         string             `json:"why,omitempty"`
}

// Sweep is the result of raising the rate until a limit.
type Sweep struct {
	Steps []Step `json:"steps"`
	// Knee is the highest target that passed; Saturated says what gave
	// out at the step after it.
	Knee      float64 `json:"knee_per_s"`
	Saturated string  `json:"saturated"`
}

// Plan is what the run was asked to do.
type Plan struct {
	Scenario string  `json:"scenario"`
	Driver   string  `json:"driver"`
	Rate     float64 `json:"target_per_s"`
	Duration string  `json:"duration"`
	Workers  int     `json:"workers"`
	Batch    int     `json:"batch"`
	Sweep    bool    `json:"sweep"`
}

// Machine describes where the run happened.
type Machine struct {
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go"`
	Kernel    string `json:"kernel,omitempty"`
	CPUModel  string `json:"cpu_model,omitempty"`
}

// Report is a whole run.
type Report struct {
	Started time.Time `json:"started"`
	Plan    Plan      `json:"plan"`
	Machine Machine   `json:"machine"`
	Ceiling *Phase    `json:"ceiling,omitempty"`
	Arc     *Phase    `json:"arc,omitempty"`
	// Ratio is ours over the ceiling.
	Ratio    float64  `json:"ratio,omitempty"`
	Sweep    *Sweep   `json:"sweep,omitempty"`
	Failures []string `json:"failures"`
}

// Passed is true when the run has no failure.
func (r *Report) Passed() bool { return len(r.Failures) == 0 }

// Write puts the JSON, Markdown and PNG under dir.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create results dir: %w", err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, JSONFile), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, MarkdownFile), []byte(r.Markdown()), 0o644); err != nil {
		return fmt.Errorf("write markdown: %w", err)
	}
	if err := r.Chart(filepath.Join(dir, ChartFile)); err != nil {
		return fmt.Errorf("draw chart: %w", err)
	}
	return nil
}
