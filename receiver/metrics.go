package receiver

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/arc-otel/arc-otel/storage"
)

// PathMetrics serves the sidecar's Prometheus metrics.
const PathMetrics = "/metrics"

var latencyBuckets = []float64{0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Metrics is the sidecar's self-telemetry: what came in, what was stored,
// what was refused, per database and table, and how the WAL, flushes and
// memory are doing. It is the store's Observer.
type Metrics struct {
	reg *prometheus.Registry

	rowsReceived, rowsStored, rowsRejected, rowsDropped *prometheus.CounterVec
	bytesReceived, bytesStored, bytesRejected           *prometheus.CounterVec
	ackDuration                                         *prometheus.HistogramVec
	walFsync, walGroup, flushDuration                   prometheus.Histogram
	flushes, filesWritten, fileBytes                    *prometheus.CounterVec
	backpressure                                        prometheus.Counter
	compactions, compactedFiles, compactedBytes         *prometheus.CounterVec
	compactDuration                                     prometheus.Histogram
	retentionDeleted                                    prometheus.Counter
	sinkRows, sinkWrites                                *prometheus.CounterVec
	sinkDeadLetterRows                                  *prometheus.CounterVec
	sinkDuration                                        *prometheus.HistogramVec
	rowsDeduplicated, batchesDeduplicated               *prometheus.CounterVec
	linesDropped                                        *prometheus.CounterVec

	series seriesCap
}

// maxTableSeries bounds the database/table label pairs of the per-table
// metrics: measurement names come from clients, and every new pair is a new
// series in every per-table metric. Past the cap, new pairs are counted
// under database="_other", table="_other"; OTLP tables always keep theirs.
const maxTableSeries = 1000

// otherLabel is the label value of pairs past maxTableSeries.
const otherLabel = "_other"

// seriesCap remembers the first maxTableSeries database/table pairs.
type seriesCap struct {
	mu    sync.Mutex
	known map[[2]string]bool
	max   int
}

// labels returns the pair to label a metric with.
func (c *seriesCap) labels(database, table string) (string, string) {
	if storage.IsOTLPTable(table) {
		return database, table
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := [2]string{database, table}
	if c.known[k] {
		return database, table
	}
	if len(c.known) >= c.max {
		return otherLabel, otherLabel
	}
	if c.known == nil {
		c.known = map[[2]string]bool{}
	}
	c.known[k] = true
	return database, table
}

// NewMetrics registers the metrics, plus Go runtime and process ones.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	table := []string{"database", "table"}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		reg.MustRegister(c)
		return c
	}
	hist := func(name, help string, buckets []float64) prometheus.Histogram {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
		reg.MustRegister(h)
		return h
	}
	m := &Metrics{
		reg:           reg,
		series:        seriesCap{max: maxTableSeries},
		rowsReceived:  counter("arcstore_rows_received_total", "Rows in batches that reached the sidecar, valid or not.", table...),
		rowsStored:    counter("arcstore_rows_stored_total", "Rows durably stored (in the fsynced WAL) and acknowledged.", table...),
		rowsRejected:  counter("arcstore_rows_rejected_total", "Rows of batches refused: invalid, or not stored (backpressure, disk); the client was told.", table...),
		rowsDropped:   counter("arcstore_rows_dropped_total", "Rows acknowledged and then lost: rows of damaged WAL records a -wal-repair start dropped (see the log); otherwise always 0, and anything else is a bug.", table...),
		bytesReceived: counter("arcstore_bytes_received_total", "Arrow IPC bytes of batches that reached the sidecar.", table...),
		bytesStored:   counter("arcstore_bytes_stored_total", "Arrow IPC bytes durably stored.", table...),
		bytesRejected: counter("arcstore_bytes_rejected_total", "Arrow IPC bytes of refused batches.", table...),
		ackDuration: func() *prometheus.HistogramVec {
			h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "arcstore_ack_duration_seconds",
				Help: "From a batch's arrival to its acknowledgement, which follows the WAL fsync (durable-ack latency).", Buckets: latencyBuckets}, table)
			reg.MustRegister(h)
			return h
		}(),
		walFsync:      hist("arcstore_wal_fsync_duration_seconds", "Write-out and fsync of one WAL group commit.", latencyBuckets),
		walGroup:      hist("arcstore_wal_group_batches", "Batches sharing one WAL fsync.", []float64{1, 2, 4, 8, 16, 32, 64, 128, 256}),
		flushDuration: hist("arcstore_flush_duration_seconds", "One flush: Parquet encoding, fsyncs, publish.", []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
		flushes:       counter("arcstore_flushes_total", "Flush attempts by result (ok, error).", "result"),
		filesWritten:  counter("arcstore_files_written_total", "Parquet files published.", table...),
		fileBytes:     counter("arcstore_file_bytes_written_total", "Bytes of Parquet files published.", table...),
	}
	m.backpressure = prometheus.NewCounter(prometheus.CounterOpts{Name: "arcstore_backpressure_total",
		Help: "Writes refused because the buffer was at its ceiling (RESOURCE_EXHAUSTED / 429)."})
	reg.MustRegister(m.backpressure)
	m.flushes.WithLabelValues("ok")
	m.flushes.WithLabelValues("error")
	m.compactions = counter("arcstore_compactions_total", "Compaction runs by result (ok, error).", "result")
	m.compactedFiles = counter("arcstore_compaction_files_total", "Files compaction read (in) and wrote (out).", "direction")
	m.compactedBytes = counter("arcstore_compaction_bytes_total", "Bytes compaction read (in) and wrote (out).", "direction")
	m.compactDuration = hist("arcstore_compaction_duration_seconds", "One compaction run over every closed partition.", []float64{0.1, 0.5, 1, 5, 10, 30, 60, 300, 900})
	m.retentionDeleted = prometheus.NewCounter(prometheus.CounterOpts{Name: "arcstore_retention_partitions_deleted_total",
		Help: "Partitions deleted because they were older than their table's retention."})
	reg.MustRegister(m.retentionDeleted)
	for _, r := range []string{"ok", "error"} {
		m.compactions.WithLabelValues(r)
	}
	m.sinkRows = counter("arcstore_sink_rows_total", "Rows a sink (clickhouse) has stored, or refused for good (result=rejected), per database and table.", "sink", "database", "table", "result")
	m.sinkWrites = counter("arcstore_sink_writes_total", "Sink writes (one per table and WAL segment) by result: ok, error (retried), rejected (skipped for that sink).", "sink", "result")
	m.sinkDeadLetterRows = counter("arcstore_sink_dead_letter_rows_total", "Rows a sink refused for good while Parquet is off, kept in _arcstore/dead-letter/<sink>/ instead of being dropped.", "sink", "database", "table")
	m.sinkDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "arcstore_sink_write_duration_seconds",
		Help: "One sink write: a table's rows of one WAL segment.", Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}}, []string{"sink"})
	reg.MustRegister(m.sinkDuration)
	m.rowsDeduplicated = counter("arcstore_rows_deduplicated_total",
		"Rows acknowledged without a second copy: their batch was byte-identical to one stored within the dedup window (a retry). Not in arcstore_rows_stored_total.", table...)
	m.batchesDeduplicated = counter("arcstore_batches_deduplicated_total", "Batches acknowledged without a second copy (see arcstore_rows_deduplicated_total).", table...)
	m.linesDropped = counter("arcstore_lines_dropped_total",
		"Line-protocol lines left out of a partial write (answered 400 \"partial write: ... dropped=N\" once the others were durable): malformed, a name or value that cannot be stored, or a field whose type changed within the request.", "endpoint")
	for _, p := range []string{PathWriteLineProtocol, PathWriteInfluxV1, PathWriteInfluxV2} {
		m.linesDropped.WithLabelValues(p)
	}
	return m
}

// Deduplicated implements storage.Observer.
func (m *Metrics) Deduplicated(d storage.Duplicate) {
	db, tbl := m.series.labels(d.Database, d.Table)
	m.rowsDeduplicated.WithLabelValues(db, tbl).Add(float64(d.Rows))
	m.batchesDeduplicated.WithLabelValues(db, tbl).Inc()
}

// SinkWrote implements storage.Observer.
func (m *Metrics) SinkWrote(w storage.SinkWritten) {
	result := "ok"
	switch {
	case errors.Is(w.Err, storage.ErrRejected):
		result = "rejected"
	case w.Err != nil:
		m.sinkWrites.WithLabelValues(w.Sink, "error").Inc()
		return
	}
	m.sinkWrites.WithLabelValues(w.Sink, result).Inc()
	db, tbl := m.series.labels(w.Database, w.Table)
	m.sinkRows.WithLabelValues(w.Sink, db, tbl, result).Add(float64(w.Rows))
	if w.DeadLetter != "" {
		m.sinkDeadLetterRows.WithLabelValues(w.Sink, db, tbl).Add(float64(w.Rows))
	}
	m.sinkDuration.WithLabelValues(w.Sink).Observe(w.Duration.Seconds())
}

// Compacted implements storage.Observer.
func (m *Metrics) Compacted(c storage.CompactStats) {
	result := "ok"
	if c.Err != nil {
		result = "error"
	}
	m.compactions.WithLabelValues(result).Inc()
	m.compactDuration.Observe(c.Duration.Seconds())
	m.compactedFiles.WithLabelValues("in").Add(float64(c.FilesIn))
	m.compactedFiles.WithLabelValues("out").Add(float64(c.FilesOut))
	m.compactedBytes.WithLabelValues("in").Add(float64(c.BytesIn))
	m.compactedBytes.WithLabelValues("out").Add(float64(c.BytesOut))
}

// Retired implements storage.Observer.
func (m *Metrics) Retired(n int) { m.retentionDeleted.Add(float64(n)) }

// WatchStore adds the gauges read from the store at scrape time.
func (m *Metrics) WatchStore(s *storage.Store) {
	gauge := func(name, help string, f func() float64) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
	gauge("arcstore_buffer_bytes", "Acknowledged bytes not yet in Parquet.", func() float64 { return float64(s.Buffered()) })
	gauge("arcstore_buffer_limit_bytes", "The buffer's ceiling (-max-buffer-bytes).", func() float64 { return float64(s.MaxBufferBytes()) })
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "arcstore_buffer_wait_seconds_total",
		Help: "Time writes waited in all (-buffer-wait) for a flush to make room in a full buffer, or for free space under -min-free-disk."},
		func() float64 { return s.BufferWaited().Seconds() }))
	gauge("arcstore_wal_segments", "WAL segment files on disk.", func() float64 { n, _, _ := s.WALStats(); return float64(n) })
	gauge("arcstore_wal_bytes", "Bytes of the records in the WAL segments (what a restart would replay or skip); reused segment files take more on disk.", func() float64 { _, b, _ := s.WALStats(); return float64(b) })
	records, lost := s.WALRepaired()
	for _, d := range lost {
		db, tbl := m.series.labels(d.Database, d.Table)
		m.rowsDropped.WithLabelValues(db, tbl).Add(float64(d.Rows))
	}
	walDropped := prometheus.NewCounter(prometheus.CounterOpts{Name: "arcstore_wal_records_dropped_total",
		Help: "Damaged WAL records the -wal-repair start dropped before every consumer had them; their rows, where the damaged payload still reads, are in arcstore_rows_dropped_total."})
	walDropped.Add(float64(records))
	m.reg.MustRegister(walDropped)
	gauge("arcstore_disk_free_bytes", "Free bytes on the data directory's file system (-1: cannot be read).", func() float64 {
		free, err := s.FreeDisk()
		if err != nil {
			return -1
		}
		return float64(free)
	})
	gauge("arcstore_disk_min_free_bytes", "The free space kept for flushes (-min-free-disk; -1: none): below it writes are refused with 503 / UNAVAILABLE.", func() float64 {
		return float64(max(s.MinFreeDisk(), -1))
	})
	gauge("arcstore_wal_limit_bytes", "The WAL's ceiling (-max-wal-bytes); a sink that is behind holds segments up to it.", func() float64 { return float64(s.MaxWALBytes()) })
	for _, name := range s.SinkNames() {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "arcstore_sink_lag_segments",
			Help: "Closed WAL segments a sink has not stored yet.", ConstLabels: prometheus.Labels{"sink": name}},
			func() float64 { return float64(s.SinkLag(name)) }))
		for _, r := range []string{"ok", "error", "rejected"} {
			m.sinkWrites.WithLabelValues(name, r)
		}
	}
}

// Register adds metrics of another component (the uploader's).
func (m *Metrics) Register(cs ...prometheus.Collector) {
	m.reg.MustRegister(cs...)
}

// Describe sends the descriptor of every metric registered, the
// components' included: what a scrape can show, with its labels.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) { m.reg.Describe(ch) }

// Handler serves the metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Committed implements storage.Observer.
func (m *Metrics) Committed(c storage.Commit) {
	if c.Batches == 0 {
		return
	}
	m.walFsync.Observe(c.Sync.Seconds())
	m.walGroup.Observe(float64(c.Batches))
}

// Flushed implements storage.Observer.
func (m *Metrics) Flushed(f storage.Flush) {
	if f.Err != nil {
		m.flushes.WithLabelValues("error").Inc()
		return
	}
	m.flushes.WithLabelValues("ok").Inc()
	m.flushDuration.Observe(f.Duration.Seconds())
	for _, file := range f.Files {
		db, tbl := m.series.labels(file.Database, file.Table)
		m.filesWritten.WithLabelValues(db, tbl).Inc()
		m.fileBytes.WithLabelValues(db, tbl).Add(float64(file.Bytes))
	}
}

// batchOutcome records one batch from arrival to answer; dup says the
// store acknowledged it without a second copy (counted by Deduplicated,
// not as stored). A nil Metrics records nothing, so tests and tools can
// leave it out.
func (m *Metrics) batchOutcome(database, table string, rows, bytes int, arrived time.Time, dup bool, err error) {
	if m == nil {
		return
	}
	database, table = m.series.labels(database, table)
	m.rowsReceived.WithLabelValues(database, table).Add(float64(rows))
	m.bytesReceived.WithLabelValues(database, table).Add(float64(bytes))
	// Visible at 0, so dashboards and alerts see the series before the
	// first refusal (and dropped, which must stay 0, always).
	m.rowsDropped.WithLabelValues(database, table)
	m.rowsRejected.WithLabelValues(database, table)
	m.bytesRejected.WithLabelValues(database, table)
	m.rowsDeduplicated.WithLabelValues(database, table)
	m.batchesDeduplicated.WithLabelValues(database, table)
	if err != nil {
		m.rowsRejected.WithLabelValues(database, table).Add(float64(rows))
		m.bytesRejected.WithLabelValues(database, table).Add(float64(bytes))
		return
	}
	m.ackDuration.WithLabelValues(database, table).Observe(time.Since(arrived).Seconds())
	if dup {
		return
	}
	m.rowsStored.WithLabelValues(database, table).Add(float64(rows))
	m.bytesStored.WithLabelValues(database, table).Add(float64(bytes))
}

// droppedLines counts the lines a partial write on endpoint left out.
func (m *Metrics) droppedLines(endpoint string, n int) {
	if m != nil {
		m.linesDropped.WithLabelValues(endpoint).Add(float64(n))
	}
}

func (m *Metrics) backpressured() {
	if m != nil {
		m.backpressure.Inc()
	}
}
