package clickhouse

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/otlparrow/otlparrowtest"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/clickhouse/chtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newSink(t *testing.T, srv *chtest.Server) *Sink {
	t.Helper()
	s, err := New(Config{Addr: srv.Native, Logger: quiet})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// collect gathers the converter's batches by table.
type collect map[string][]arrow.RecordBatch

func (c collect) emit(t *schema.Table, rec arrow.RecordBatch) error {
	c[t.Name] = append(c[t.Name], rec)
	return nil
}

func (c collect) release() {
	for _, recs := range c {
		for _, r := range recs {
			r.Release()
		}
	}
}

func (c collect) write(t *testing.T, s *Sink, database, token string) {
	t.Helper()
	for name, recs := range c {
		tbl, err := storage.LookupTable(name)
		require.NoError(t, err)
		var rows int64
		for _, r := range recs {
			rows += r.NumRows()
		}
		require.NoError(t, s.Write(context.Background(), storage.SinkWrite{
			Token: token + "-" + name, Database: database, Table: tbl, Records: recs, Rows: rows,
		}))
	}
}

// readArrow reads a table back from ClickHouse as Arrow, the way a client
// of its HTTP interface would.
func readArrow(t *testing.T, srv *chtest.Server, sql string) []arrow.RecordBatch {
	t.Helper()
	q := url.Values{
		"query":                                {sql + " FORMAT ArrowStream"},
		"output_format_arrow_string_as_string": {"1"},
		"output_format_arrow_low_cardinality_as_dictionary": {"0"},
	}
	resp, err := http.Get("http://" + srv.HTTP + "/?" + q.Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: %s", sql, body)
	}
	r, err := ipc.NewReader(resp.Body, ipc.WithAllocator(memory.DefaultAllocator))
	require.NoError(t, err)
	defer r.Release()
	var out []arrow.RecordBatch
	for r.Next() {
		// DateTime64(9) reads as nanoseconds: back to the contract's unit.
		out = append(out, schema.StoredTimes(r.RecordBatch()))
	}
	require.NoError(t, r.Err())
	return out
}

func rowsOf[T any](t *testing.T, recs []arrow.RecordBatch) []T {
	t.Helper()
	var all []T
	for _, rec := range recs {
		rows, err := otlparrowtest.Rows[T](rec)
		require.NoError(t, err)
		all = append(all, rows...)
		rec.Release()
	}
	return all
}

// TestRoundTripEverySignal writes every signal of the contract's
// generators (every attribute type, NaN and ±Inf, empty and 1 MiB strings,
// events, links, exemplars, the five metric types) through the sink into a
// real ClickHouse, reads the tables back over its HTTP interface as Arrow
// and checks the OTLP data is the one the Parquet path gives back.
func TestRoundTripEverySignal(t *testing.T) {
	srv := chtest.Start(t)
	s := newSink(t, srv)
	mem := memory.DefaultAllocator

	traces := collect{}
	tc := otlparrow.NewTracesConverter(mem, 5)
	require.NoError(t, tc.Convert(otlparrowtest.Traces(otlparrowtest.Sent, 6), traces.emit))
	tc.Release()
	defer traces.release()
	logs := collect{}
	lc := otlparrow.NewLogsConverter(mem, 4)
	require.NoError(t, lc.Convert(otlparrowtest.Logs(otlparrowtest.Sent, 9), logs.emit))
	lc.Release()
	defer logs.release()
	metrics := collect{}
	mc := otlparrow.NewMetricsConverter(mem, 1000)
	require.NoError(t, mc.Convert(otlparrowtest.Metrics(otlparrowtest.Sent, 4), metrics.emit))
	mc.Release()
	defer metrics.release()
	for _, c := range []collect{traces, logs, metrics} {
		c.write(t, s, "rt", "roundtrip")
	}

	t.Run("traces", func(t *testing.T) {
		got, err := otlparrow.SpansToTraces(rowsOf[schema.Span](t, readArrow(t, srv, "SELECT * FROM rt.traces")))
		require.NoError(t, err)
		otlparrowtest.AssertTracesSameRecords(t, otlparrowtest.Traces(otlparrowtest.ReadBack, 6), got)
	})
	t.Run("logs and events", func(t *testing.T) {
		want := otlparrowtest.Logs(otlparrowtest.ReadBack, 9)
		gotLogs, err := otlparrow.LogRecordsToLogs(rowsOf[schema.LogRecord](t, readArrow(t, srv, "SELECT * FROM rt.logs")))
		require.NoError(t, err)
		gotEvents, err := otlparrow.LogRecordsToLogs(rowsOf[schema.LogRecord](t, readArrow(t, srv, "SELECT * FROM rt.events")))
		require.NoError(t, err)
		assert.Equal(t, want.LogRecordCount(), gotLogs.LogRecordCount()+gotEvents.LogRecordCount())
		assert.Positive(t, gotEvents.LogRecordCount(), "the generator's event records are in the events table")
		all := gotLogs
		gotEvents.ResourceLogs().MoveAndAppendTo(all.ResourceLogs())
		otlparrowtest.AssertLogsSameRecords(t, want, all)
	})
	t.Run("metrics", func(t *testing.T) {
		got, err := otlparrow.PointsToMetrics(rowsOf[schema.MetricPoint](t, readArrow(t, srv, "SELECT * FROM rt.metrics")))
		require.NoError(t, err)
		otlparrowtest.AssertMetricsSameRecords(t, otlparrowtest.Metrics(otlparrowtest.ReadBack, 4), got)
	})
	t.Run("every column as inserted", func(t *testing.T) {
		// The OTLP comparisons above rebuild pdata from the attribute maps;
		// this one checks every column value, derived ones (host, region,
		// http_method, level...) included.
		for _, c := range []collect{traces, logs, metrics} {
			for name, recs := range c {
				got := readArrow(t, srv, "SELECT * FROM rt."+name)
				assert.Equal(t, canonicalRows(t, recs), canonicalRows(t, got), name)
				for _, r := range got {
					r.Release()
				}
			}
		}
	})
	t.Run("same token twice is stored once", func(t *testing.T) {
		before := srv.MustQuery("SELECT count() FROM rt.traces")
		traces.write(t, s, "rt", "roundtrip")
		assert.Equal(t, before, srv.MustQuery("SELECT count() FROM rt.traces"), "ClickHouse dropped the repeated insert")
		traces.write(t, s, "rt", "another-segment")
		assert.Equal(t, fmt.Sprint(2*atoi(t, before)), srv.MustQuery("SELECT count() FROM rt.traces"), "a new token is a new insert")
	})
}

// canonicalRows renders each row as JSON with sorted keys, in sorted order.
func canonicalRows(t *testing.T, recs []arrow.RecordBatch) []string {
	t.Helper()
	var out []string
	for _, rec := range recs {
		for i := range int(rec.NumRows()) {
			row := map[string]any{}
			for j, f := range rec.Schema().Fields() {
				row[f.Name] = rec.Column(j).GetOneForMarshal(i)
			}
			b, err := json.Marshal(row)
			require.NoError(t, err)
			out = append(out, string(b))
		}
	}
	sort.Strings(out)
	return out
}

func atoi(t *testing.T, s string) int {
	var n int
	_, err := fmt.Sscan(strings.TrimSpace(s), &n)
	require.NoError(t, err)
	return n
}

// TestExistingTableWithoutDedupWindow writes into a traces table created
// beforehand without a deduplication window (by hand, or by another tool):
// a plain MergeTree would then keep a segment sent again after a crash
// twice. The sink raises the window before its first insert.
func TestExistingTableWithoutDedupWindow(t *testing.T) {
	srv := chtest.Start(t)
	tbl, err := storage.LookupTable(schema.TableTraces)
	require.NoError(t, err)
	stmts, err := CreateTable("pre", tbl, TableOptions{})
	require.NoError(t, err)
	bare := strings.Replace(stmts[0], "SETTINGS non_replicated_deduplication_window = 10000", "", 1)
	require.NotEqual(t, stmts[0], bare)
	srv.MustQuery("CREATE DATABASE pre")
	srv.MustQuery(bare)
	require.NotContains(t, srv.MustQuery("SELECT create_table_query FROM system.tables WHERE database = 'pre' AND name = 'traces'"), "deduplication_window")

	traces := collect{}
	defer traces.release()
	tc := otlparrow.NewTracesConverter(memory.DefaultAllocator, 5)
	require.NoError(t, tc.Convert(otlparrowtest.Traces(otlparrowtest.Sent, 3), traces.emit))
	tc.Release()
	s := newSink(t, srv)
	traces.write(t, s, "pre", "seg-1")
	traces.write(t, s, "pre", "seg-1")
	assert.Contains(t, srv.MustQuery("SELECT create_table_query FROM system.tables WHERE database = 'pre' AND name = 'traces'"),
		"non_replicated_deduplication_window = 10000")
	var rows int64
	for _, r := range traces[schema.TableTraces] {
		rows += r.NumRows()
	}
	assert.Equal(t, fmt.Sprint(rows), srv.MustQuery("SELECT count() FROM pre.traces"), "the repeated insert was dropped")
}
