package receiver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/arc-otel/arc-otel/internal/arcflight"
	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/storagetest"
)

func scrapeMetrics(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rr := httptest.NewRecorder()
	m.Handler().ServeHTTP(rr, httptest.NewRequest("GET", PathMetrics, nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rr.Body)
	require.NoError(t, err)
	return fams
}

// value is the value of the series of name whose labels include want.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var sum float64
	for _, m := range fams[name].GetMetric() {
		ok := true
		for _, l := range m.GetLabel() {
			if v, in := want[l.GetName()]; in && v != l.GetValue() {
				ok = false
			}
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

func TestMetricsCountWhatWasStoredAndRefused(t *testing.T) {
	f := newFixture(t)
	a, _ := storagetest.LogBatch(t, "a", t0, t0, t0)
	b, _ := storagetest.LogBatch(t, "b", t0, t0)
	defer a.Release()
	defer b.Release()
	_, err := f.put(t, arcflight.Descriptor("default", "logs"), a, b)
	require.NoError(t, err)
	future, _ := storagetest.LogBatch(t, "late", time.Now().AddDate(5, 0, 0))
	defer future.Release()
	_, err = f.put(t, arcflight.Descriptor("prod", "logs"), future)
	require.Error(t, err)

	logs := map[string]string{"database": "default", "table": "logs"}
	fams := scrapeMetrics(t, f.metrics)
	assert.Equal(t, 5.0, value(fams, "arcstore_rows_received_total", logs))
	assert.Equal(t, 5.0, value(fams, "arcstore_rows_stored_total", logs), "received = stored")
	assert.Zero(t, value(fams, "arcstore_rows_rejected_total", logs))
	assert.Equal(t, 1.0, value(fams, "arcstore_rows_rejected_total", map[string]string{"database": "prod"}))
	assert.Zero(t, value(fams, "arcstore_rows_dropped_total", nil))
	require.NotNil(t, fams["arcstore_rows_dropped_total"], "dropped is visible at 0")
	assert.Equal(t, 2.0, value(fams, "arcstore_ack_duration_seconds", logs), "one latency per stored batch")
	assert.Positive(t, value(fams, "arcstore_wal_fsync_duration_seconds", nil))
	assert.Positive(t, value(fams, "arcstore_bytes_stored_total", logs))
	assert.Positive(t, value(fams, "arcstore_buffer_bytes", nil))
	assert.Positive(t, value(fams, "arcstore_buffer_limit_bytes", nil))
	assert.Positive(t, value(fams, "arcstore_wal_bytes", nil))
	assert.Equal(t, 1.0, value(fams, "arcstore_wal_segments", nil))

	require.NoError(t, f.store.Flush())
	fams = scrapeMetrics(t, f.metrics)
	assert.Equal(t, 1.0, value(fams, "arcstore_files_written_total", logs))
	assert.Positive(t, value(fams, "arcstore_file_bytes_written_total", logs))
	assert.Equal(t, 1.0, value(fams, "arcstore_flushes_total", map[string]string{"result": "ok"}))
	assert.Equal(t, 1.0, value(fams, "arcstore_flush_duration_seconds", nil))
	assert.Zero(t, value(fams, "arcstore_buffer_bytes", nil), "flushed")
}

// TestMetricsPerDatabaseAndTable sends known batches through the Flight
// server and reads them back from /metrics, per database and table.
func TestMetricsPerDatabaseAndTable(t *testing.T) {
	// stream is one DoPut: the rows of each batch; bad is the index of a
	// batch that fails validation (-1: none), which ends the stream; code
	// is how the stream ends (OK, or the refusal).
	type stream struct {
		database string
		rows     []int
		bad      int
		code     codes.Code
	}
	// tally is what /metrics should say about one database's logs table.
	type tally struct{ received, stored, rejected, acks, deduplicated float64 }
	for _, tt := range []struct {
		name         string
		maxBuffer    int64
		streams      []stream
		want         map[string]tally
		backpressure float64
	}{
		{
			name:    "every batch stored",
			streams: []stream{{"default", []int{3, 2}, -1, codes.OK}, {"prod", []int{1}, -1, codes.OK}, {"default", []int{4}, -1, codes.OK}},
			want:    map[string]tally{"default": {9, 9, 0, 3, 0}, "prod": {1, 1, 0, 1, 0}},
		},
		{
			name:    "an invalid batch is rejected, the one before it stored",
			streams: []stream{{"default", []int{2}, -1, codes.OK}, {"prod", []int{1, 3}, 1, codes.InvalidArgument}},
			want:    map[string]tally{"default": {2, 2, 0, 1, 0}, "prod": {4, 1, 3, 1, 0}},
		},
		{
			name:         "backpressure",
			maxBuffer:    10000, // one 2-row batch (6.5 KB) fits, a second waits for a flush
			streams:      []stream{{"default", []int{2}, -1, codes.OK}, {"prod", []int{2}, -1, codes.ResourceExhausted}},
			want:         map[string]tally{"default": {2, 2, 0, 1, 0}, "prod": {2, 0, 2, 0, 0}},
			backpressure: 1,
		},
		{
			name:      "larger than the buffer: refused for good, not backpressure",
			maxBuffer: 1,
			streams:   []stream{{"default", []int{2}, -1, codes.InvalidArgument}},
			want:      map[string]tally{"default": {2, 0, 2, 0, 0}},
		},
		{
			// The same stream twice: the second is a retry of stored
			// batches, acknowledged and counted apart.
			name:    "duplicates are acknowledged, not counted as stored",
			streams: []stream{{"default", []int{3, 2}, -1, codes.OK}, {"default", []int{3, 2}, -1, codes.OK}},
			want:    map[string]tally{"default": {10, 5, 0, 4, 5}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(o *storage.Options) {
				o.MaxBufferBytes = tt.maxBuffer
				o.BufferWait = -1 // refused at once: the flush it starts would make room
			})
			for i, st := range tt.streams {
				var recs []arrow.RecordBatch
				for j, n := range st.rows {
					ts := t0
					if j == st.bad {
						ts = time.Now().AddDate(5, 0, 0) // past the accepted future
					}
					times := make([]time.Time, n)
					for k := range times {
						times[k] = ts
					}
					rec, _ := storagetest.LogBatch(t, fmt.Sprintf("%s-%d", st.database, j), times...)
					defer rec.Release()
					recs = append(recs, rec)
				}
				acks, err := f.put(t, arcflight.Descriptor(st.database, "logs"), recs...)
				assert.Equal(t, st.code, status.Code(err), "stream %d: %v", i, err)
				if st.code == codes.OK {
					assert.Len(t, acks, len(recs))
				}
			}

			fams := scrapeMetrics(t, f.metrics)
			var stored float64
			for db, want := range tt.want {
				labels := map[string]string{"database": db, "table": "logs"}
				got := tally{
					received: value(fams, "arcstore_rows_received_total", labels),
					stored:   value(fams, "arcstore_rows_stored_total", labels),
					rejected: value(fams, "arcstore_rows_rejected_total", labels),
					acks:     value(fams, "arcstore_ack_duration_seconds", labels),

					deduplicated: value(fams, "arcstore_rows_deduplicated_total", labels),
				}
				assert.Equal(t, want, got, db)
				assert.Equal(t, got.received, got.stored+got.rejected+got.deduplicated, "%s: every row received is stored, rejected or deduplicated", db)
				if got.deduplicated == 0 {
					assert.Equal(t, value(fams, "arcstore_bytes_received_total", labels),
						value(fams, "arcstore_bytes_stored_total", labels)+value(fams, "arcstore_bytes_rejected_total", labels), db)
				}
				assert.Positive(t, value(fams, "arcstore_bytes_received_total", labels), db)
				stored += got.stored
			}
			assert.Zero(t, value(fams, "arcstore_rows_dropped_total", nil))
			assert.Len(t, fams["arcstore_rows_dropped_total"].GetMetric(), len(tt.want), "dropped is visible at 0 for every table seen")
			assert.Equal(t, tt.backpressure, value(fams, "arcstore_backpressure_total", nil))
			if stored > 0 {
				assert.Positive(t, value(fams, "arcstore_wal_fsync_duration_seconds", nil))
				assert.Positive(t, value(fams, "arcstore_wal_group_batches", nil))
				if tt.backpressure == 0 { // backpressure starts a flush, which may have emptied the buffer
					assert.Positive(t, value(fams, "arcstore_buffer_bytes", nil))
				}
			}
		})
	}
}

// TestMetricsEndpoint checks what a Prometheus scraper gets over HTTP.
func TestMetricsEndpoint(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(f.metrics.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + PathMetrics)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, name := range []string{
		"arcstore_buffer_limit_bytes", "arcstore_backpressure_total", "arcstore_wal_segments",
		"go_goroutines", "process_resident_memory_bytes",
	} {
		assert.Contains(t, string(body), name)
	}
}

// The Grafana dashboard only charts metrics the sidecar serves.
// okSink stores nothing and says yes: it makes the sink metrics appear.
type okSink struct{}

func (okSink) Name() string                                   { return "clickhouse" }
func (okSink) Write(context.Context, storage.SinkWrite) error { return nil }
func (okSink) Close() error                                   { return nil }

func TestDashboardUsesRealMetrics(t *testing.T) {
	f := newFixture(t, func(o *storage.Options) { o.Sinks = []storage.Sink{okSink{}} })
	// Labelled series appear once something happened: a write, a flush, a
	// compaction.
	rec, _ := storagetest.LogBatch(t, "a", t0)
	defer rec.Release()
	_, err := f.put(t, arcflight.Descriptor("default", "logs"), rec)
	require.NoError(t, err)
	require.NoError(t, f.store.Flush())
	_, err = f.store.Compact(context.Background(), 0)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return f.store.SinkLag("clickhouse") == 0 }, 5*time.Second, 10*time.Millisecond)
	fams := scrapeMetrics(t, f.metrics)
	data, err := os.ReadFile(filepath.Join("..", "deploy", "grafana", "dashboards", "arc-otel.json"))
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	require.NoError(t, json.Unmarshal(data, &dash))
	require.NotEmpty(t, dash.Panels)
	seen := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, name := range regexp.MustCompile(`arcstore_[a-z_]+`).FindAllString(tg.Expr, -1) {
				name = strings.TrimSuffix(name, "_bucket")
				assert.Contains(t, fams, name, "panel %q charts %s", p.Title, name)
				seen++
			}
		}
	}
	assert.Greater(t, seen, 10)
}

func TestSinkMetrics(t *testing.T) {
	m := NewMetrics()
	for _, w := range []storage.SinkWritten{
		{Sink: "clickhouse", Database: "default", Table: "traces", Rows: 1000, Duration: 20 * time.Millisecond},
		{Sink: "clickhouse", Database: "default", Table: "traces", Rows: 500, Duration: 10 * time.Millisecond},
		{Sink: "clickhouse", Database: "default", Table: "traces", Rows: 700, Err: errors.New("connection refused")},
		{Sink: "clickhouse", Database: "arc", Table: "cpu", Rows: 30, Err: fmt.Errorf("%w: type changed", storage.ErrRejected)},
	} {
		m.SinkWrote(w)
	}
	fams := scrapeMetrics(t, m)
	tests := []struct {
		name   string
		metric string
		labels map[string]string
		want   float64
	}{
		{"rows stored", "arcstore_sink_rows_total", map[string]string{"table": "traces", "result": "ok"}, 1500},
		{"a failed write stores no rows (it is retried)", "arcstore_sink_rows_total", map[string]string{"table": "traces", "result": "error"}, 0},
		{"rows refused for good", "arcstore_sink_rows_total", map[string]string{"table": "cpu", "result": "rejected"}, 30},
		{"writes ok", "arcstore_sink_writes_total", map[string]string{"result": "ok"}, 2},
		{"writes failed", "arcstore_sink_writes_total", map[string]string{"result": "error"}, 1},
		{"writes refused", "arcstore_sink_writes_total", map[string]string{"result": "rejected"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, value(fams, tt.metric, tt.labels))
		})
	}
	assert.EqualValues(t, 3, fams["arcstore_sink_write_duration_seconds"].GetMetric()[0].GetHistogram().GetSampleCount(), "ok and rejected writes are timed")
}

// TestPerTableSeriesAreCapped: measurement names come from clients; each
// new one used to add a series to every per-table metric, for good.
func TestPerTableSeriesAreCapped(t *testing.T) {
	m := NewMetrics()
	for i := range maxTableSeries + 50 {
		m.batchOutcome("default", fmt.Sprintf("m%d", i), 1, 10, time.Now(), false, nil)
	}
	m.batchOutcome("default", "logs", 1, 10, time.Now(), false, nil)
	m.Flushed(storage.Flush{Files: []storage.FlushedFile{{Database: "default", Table: "m99999", Rows: 1, Bytes: 100}}})
	fams := scrapeMetrics(t, m)
	assert.Len(t, fams["arcstore_rows_received_total"].GetMetric(), maxTableSeries+2, "the cap, _other, and the OTLP table")
	assert.Equal(t, 50.0, value(fams, "arcstore_rows_received_total", map[string]string{"database": "_other", "table": "_other"}))
	assert.Equal(t, 1.0, value(fams, "arcstore_rows_received_total", map[string]string{"database": "default", "table": "logs"}), "OTLP tables keep their labels")
	assert.Equal(t, 1.0, value(fams, "arcstore_files_written_total", map[string]string{"database": "_other", "table": "_other"}))
	assert.Equal(t, float64(maxTableSeries+51), value(fams, "arcstore_rows_received_total", nil), "every row is counted")
}
