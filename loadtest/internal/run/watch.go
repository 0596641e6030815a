package run

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/arc-otel/arc-otel/loadtest/internal/driver"
	"github.com/arc-otel/arc-otel/loadtest/internal/report"
	"github.com/arc-otel/arc-otel/loadtest/internal/scrape"
	"github.com/arc-otel/arc-otel/loadtest/internal/stack"
)

// Metric names of the collector (Prometheus, without unit and type
// suffixes) and of the sidecar.
const (
	metricQueueSize     = "otelcol_exporter_queue_size"
	metricQueueCapacity = "otelcol_exporter_queue_capacity"
	metricRowsStored    = "arcstore_rows_stored_total"
	metricAckDuration   = "arcstore_ack_duration_seconds"
	metricFsyncDuration = "arcstore_wal_fsync_duration_seconds"
	metricGroupBatches  = "arcstore_wal_group_batches"
	metricPutDuration   = "otelcol_exporter_arc_put_duration"
)

// itemName is the collector's name for a signal's items in its metrics.
func itemName(s driver.Signal) string {
	switch s {
	case driver.Traces:
		return "spans"
	case driver.Logs, driver.Events:
		return "log_records"
	}
	return "metric_points"
}

func accepted(snap scrape.Snapshot, s driver.Signal) float64 {
	return snap.Sum("otelcol_receiver_accepted_"+itemName(s), nil)
}

func refused(snap scrape.Snapshot, s driver.Signal) float64 {
	return snap.Sum("otelcol_receiver_refused_"+itemName(s), nil)
}

// doneBy is what the exporter has finished with: sent, or failed after its
// retries (then the loss check finds it missing).
func doneBy(snap scrape.Snapshot, s driver.Signal, exporter string) float64 {
	by := map[string]string{"exporter": exporter}
	return snap.Sum("otelcol_exporter_sent_"+itemName(s), by) + snap.Sum("otelcol_exporter_send_failed_"+itemName(s), by)
}

// target is what a phase loads and watches.
type target struct {
	name, export     string
	exporter         string // the collector's exporter, as its metrics label it
	otlp             string
	url              string // the sidecar's (or an Arc server's) HTTP base URL
	collectorMetrics string
	sidecarMetrics   string
	procs            map[string]*stack.Proc
	// pids are running processes of a -target, watched by pid; final is
	// their last usage when the run stopped them.
	pids    map[string]int
	final   map[string]stack.Usage
	stack   *stack.Stack
	dataDir string
	// settle, when positive, is how long a running target's Parquet tree
	// must hold still before its rows are counted.
	settle time.Duration
}

// point is everything read at one moment.
type point struct {
	at        time.Time
	collector scrape.Snapshot
	sidecar   scrape.Snapshot
	usage     map[string]stack.Usage
}

// watcher turns consecutive points into samples.
type watcher struct {
	tgt     *target
	signals []driver.Signal
	rec     *driver.Recorder // nil with telemetrygen: counts come from the collector
	self    string           // the harness's process name when it is the driver
	start   time.Time
	first   point
	prev    point
	total   int64
	errors  int64
	out     func(string)
	warned  bool
}

func newWatcher(tgt *target, signals []driver.Signal, rec *driver.Recorder, self string, out func(string)) (*watcher, error) {
	w := &watcher{tgt: tgt, signals: signals, rec: rec, self: self, out: out}
	p, err := w.read()
	if err != nil {
		return nil, err
	}
	w.start, w.first, w.prev = p.at, p, p
	return w, nil
}

func (w *watcher) read() (point, error) {
	p := point{at: time.Now(), usage: map[string]stack.Usage{}}
	var err error
	if w.tgt.collectorMetrics != "" {
		if p.collector, err = scrape.Fetch(w.tgt.collectorMetrics); err != nil {
			return p, err
		}
	}
	if w.tgt.sidecarMetrics != "" {
		// A sidecar without /metrics (an older build) still takes load;
		// the report then lacks durable rates and ack latency.
		if p.sidecar, err = scrape.Fetch(w.tgt.sidecarMetrics); err != nil && !w.warned {
			w.warned = true
			w.out("sidecar metrics unavailable, durable rate and ack latency not reported: " + err.Error())
		}
	}
	for name, proc := range w.tgt.procs {
		if u, err := proc.Usage(); err == nil {
			p.usage[name] = u
		}
	}
	for name, pid := range w.tgt.pids {
		if u, err := stack.ReadUsage(pid); err == nil {
			p.usage[name] = u
		}
	}
	if w.self != "" {
		if u, err := stack.SelfUsage(); err == nil {
			p.usage[w.self] = u
		}
	}
	return p, nil
}

// sample reads a new point and describes the interval since the last one.
func (w *watcher) sample(targetRate float64) (report.Sample, error) {
	p, err := w.read()
	if err != nil {
		return report.Sample{}, err
	}
	s := w.between(w.prev, p, targetRate)
	w.prev = p
	w.out(w.line(s))
	return s, nil
}

func (w *watcher) between(a, b point, targetRate float64) report.Sample {
	secs := b.at.Sub(a.at).Seconds()
	s := report.Sample{At: b.at.Sub(w.start).Seconds(), Target: targetRate, CPU: map[string]float64{}, RSS: map[string]int64{}}
	var items float64
	if w.rec != nil {
		c := w.rec.Take()
		items = float64(c.Items())
		w.errors += c.Errors
		s.Latency = report.Exact(c.Latencies)
	} else {
		for _, sig := range w.signals {
			items += accepted(b.collector, sig) - accepted(a.collector, sig)
			w.errors += int64(refused(b.collector, sig) - refused(a.collector, sig))
		}
		nan := report.Float(math.NaN())
		s.Latency = report.Percentiles{P50: nan, P95: nan, P99: nan, P999: nan}
	}
	w.total += int64(items)
	s.Rate = items / secs
	s.Total, s.Errors = w.total, w.errors
	s.AckLatency = ackPercentiles(b.sidecar, a.sidecar)
	if b.sidecar != nil {
		s.Durable = (b.sidecar.Sum(metricRowsStored, nil) - a.sidecar.Sum(metricRowsStored, nil)) / secs
	}
	for name, u := range b.usage {
		s.RSS[name] = u.RSSBytes
		if prev, ok := a.usage[name]; ok {
			s.CPU[name] = (u.CPUSeconds - prev.CPUSeconds) / secs
		}
	}
	// One queue per pipeline: the fullest says whether one is filling.
	s.QueueItems = b.collector.Max(metricQueueSize, map[string]string{"exporter": w.tgt.exporter})
	return s
}

func ackPercentiles(now, before scrape.Snapshot) report.Percentiles {
	h := now.Histogram(metricAckDuration, nil).Sub(before.Histogram(metricAckDuration, nil))
	ms := func(q float64) report.Float { return report.Float(1000 * h.Quantile(q)) }
	return report.Percentiles{P50: ms(0.5), P95: ms(0.95), P99: ms(0.99), P999: ms(0.999)}
}

// breakdown reads the means of the stages of a request between two
// points: the collector's Flight puts and the sidecar's acks and commits.
func breakdown(now, before point, requests []time.Duration) *report.Breakdown {
	mean := func(h scrape.Hist, scale float64) report.Float {
		if h.Count <= 0 {
			return report.Float(math.NaN())
		}
		return report.Float(scale * h.Sum / h.Count)
	}
	hist := func(now, before scrape.Snapshot, name string) scrape.Hist {
		return now.Histogram(name, nil).Sub(before.Histogram(name, nil))
	}
	return &report.Breakdown{
		RequestMS:    report.Mean(requests),
		PutMS:        mean(hist(now.collector, before.collector, metricPutDuration), 1000),
		AckMS:        mean(hist(now.sidecar, before.sidecar, metricAckDuration), 1000),
		CommitMS:     mean(hist(now.sidecar, before.sidecar, metricFsyncDuration), 1000),
		GroupBatches: mean(hist(now.sidecar, before.sidecar, metricGroupBatches), 1),
	}
}

func (w *watcher) line(s report.Sample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] t=%4.0fs", w.tgt.name, s.At)
	if s.Target > 0 {
		fmt.Fprintf(&b, " target %9.0f/s rate %9.0f/s (%5.1f%%)", s.Target, s.Rate, 100*s.Rate/s.Target)
	} else {
		fmt.Fprintf(&b, " rate %9.0f/s", s.Rate)
	}
	if w.tgt.sidecarMetrics != "" {
		fmt.Fprintf(&b, " durable %9.0f/s", s.Durable)
	}
	fmt.Fprintf(&b, " total %11d errors %d", s.Total, s.Errors)
	if !math.IsNaN(float64(s.Latency.P50)) {
		fmt.Fprintf(&b, " | req ms p50 %.1f p95 %.1f p99 %.1f p999 %.1f", s.Latency.P50, s.Latency.P95, s.Latency.P99, s.Latency.P999)
	}
	if !math.IsNaN(float64(s.AckLatency.P50)) {
		fmt.Fprintf(&b, " | ack ms p50 %.1f p99 %.1f", s.AckLatency.P50, s.AckLatency.P99)
	}
	b.WriteString(" |")
	for _, name := range slices.Sorted(maps.Keys(s.CPU)) {
		fmt.Fprintf(&b, " %s %.2f cores %d MiB", name, s.CPU[name], s.RSS[name]>>20)
	}
	if s.QueueItems > 0 {
		fmt.Fprintf(&b, " | queue %.0f", s.QueueItems)
	}
	return b.String()
}
