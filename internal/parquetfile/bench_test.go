package parquetfile_test

import (
	"encoding/binary"
	"fmt"
	"github.com/arc-otel/arc-otel/internal/benchcpu"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pq "github.com/apache/arrow-go/v18/parquet"
	pqcompress "github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/otlparrow/otlparrowtest"
	"github.com/arc-otel/arc-otel/internal/parquetfile"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage"
)

// batchRows is the rows of one record: the exporter sends batches of 1000.
const batchRows = 1000

// benchTable is one table's records as a flush gets them: filesRows rows
// in records of batchRows rows.
type benchTable struct {
	name    string
	parquet *parquet.Schema
	arrow   *arrow.Schema
	bloom   []string
	batches func(b testing.TB, n int) []arrow.RecordBatch
}

func benchTables() []benchTable {
	return []benchTable{
		{"otlp_traces", schema.Traces.Parquet, schema.Traces.Arrow, schema.Traces.BloomColumns, func(b testing.TB, n int) []arrow.RecordBatch {
			return convert(b, schema.Traces, n, func(n int) any { return otlparrowtest.RealisticTraces(n) })
		}},
		{"otlp_traces_random_ids", schema.Traces.Parquet, schema.Traces.Arrow, schema.Traces.BloomColumns, func(b testing.TB, n int) []arrow.RecordBatch {
			return convert(b, schema.Traces, n, func(n int) any { return withRandomIDs(otlparrowtest.RealisticTraces(n)) })
		}},
		{"otlp_logs", schema.Logs.Parquet, schema.Logs.Arrow, schema.Logs.BloomColumns, func(b testing.TB, n int) []arrow.RecordBatch {
			return convert(b, schema.Logs, n, func(n int) any { return otlparrowtest.RealisticLogs(n) })
		}},
		{"otlp_metrics", schema.Metrics.Parquet, schema.Metrics.Arrow, schema.Metrics.BloomColumns, func(b testing.TB, n int) []arrow.RecordBatch {
			return convert(b, schema.Metrics, n, func(n int) any { return otlparrowtest.RealisticMetrics(n) })
		}},
		measurement("arc_traces", arcTraces),
		measurement("arc_logs", arcLogs),
		measurement("arc_logs_new", arcLogsNew),
	}
}

// randomIDs draws the ids of withRandomIDs: one source for every batch, so
// that no two batches of a file share ids.
var randomIDs = rand.New(rand.NewPCG(1, 2))

// withRandomIDs gives the spans of td random ids, as SDKs make them (W3C
// trace context), in otlparrowtest's shape: a trace of every three spans,
// the first their parent. otlparrowtest's own ids are mostly constant
// bytes, which zstd's match search compresses cheaply and real ids do not.
func withRandomIDs(td ptrace.Traces) ptrace.Traces {
	r := randomIDs
	var trace pcommon.TraceID
	var root pcommon.SpanID
	i := 0
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				var id pcommon.SpanID
				binary.LittleEndian.PutUint64(id[:], r.Uint64())
				if i%3 == 0 {
					binary.LittleEndian.PutUint64(trace[:8], r.Uint64())
					binary.LittleEndian.PutUint64(trace[8:], r.Uint64())
					root = id
				}
				s.SetTraceID(trace)
				s.SetSpanID(id)
				if !s.ParentSpanID().IsEmpty() {
					s.SetParentSpanID(root)
				}
				i++
			}
		}
	}
	return td
}

// convert turns n realistic OTLP items into records of the table, one per
// batchRows items.
func convert(b testing.TB, table *schema.Table, n int, gen func(int) any) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	keep := func(t *schema.Table, rec arrow.RecordBatch) error {
		if t == table {
			rec.Retain()
			out = append(out, rec)
		}
		return nil
	}
	for done := 0; done < n; done += batchRows {
		var err error
		switch d := gen(batchRows).(type) {
		case ptrace.Traces:
			c := otlparrow.NewTracesConverter(memory.DefaultAllocator, batchRows)
			err = c.Convert(d, keep)
			c.Release()
		case plog.Logs:
			c := otlparrow.NewLogsConverter(memory.DefaultAllocator, batchRows)
			err = c.Convert(d, keep)
			c.Release()
		case pmetric.Metrics:
			c := otlparrow.NewMetricsConverter(memory.DefaultAllocator, batchRows)
			err = c.Convert(d, keep)
			c.Release()
		}
		require.NoError(b, err)
	}
	return out
}

// measurement is a flat Arc-protocol table as the sidecar stores it: the
// Arrow schema of internal/arcmsgpack (time, then columns by name, all
// nullable) and the Parquet schema of storage.MeasurementTable.
func measurement(name string, gen func(r *rand.Rand, bld *array.RecordBuilder, rows int)) benchTable {
	s := measurementSchema(name)
	t, err := storage.MeasurementTable(name, s)
	if err != nil {
		panic(err)
	}
	return benchTable{name, t.Parquet, t.Arrow, t.BloomColumns, func(b testing.TB, n int) []arrow.RecordBatch {
		r := rand.New(rand.NewPCG(1, uint64(n)))
		var out []arrow.RecordBatch
		for done := 0; done < n; done += batchRows {
			bld := array.NewRecordBuilder(memory.DefaultAllocator, s)
			gen(r, bld, batchRows)
			out = append(out, bld.NewRecordBatch())
			bld.Release()
		}
		return out
	}}
}

var (
	services = []string{"api-gateway", "auth-service", "user-service", "product-service", "order-service", "payment-service", "inventory-service", "notification-service"}
	regions  = []string{"us-east-1", "us-west-2", "eu-west-1", "ap-southeast-1"}
	envs     = []string{"production", "staging", "development"}
	levels   = []string{"DEBUG", "INFO", "INFO", "WARN", "ERROR"}
	kinds    = []string{"server", "client", "internal", "producer", "consumer"}
	methods  = []string{"GET", "POST", "PUT", "DELETE"}
	routes   = []string{"/api/users", "/api/orders", "/api/products", "/api/cart", "/api/checkout", "/api/login", "/health"}
	messages = []string{"Request processed successfully", "User %d logged in from %s", "Cache miss for key user:%d", "Slow query took %d ms on %s",
		"Payment %d authorised", "Retrying request %d to %s", "Order %d shipped", "Connection reset by peer %s"}
	statuses = []int64{200, 200, 201, 404, 500}
)

func measurementSchema(name string) *arrow.Schema {
	cols := map[string][]string{
		"arc_traces": {"duration_ns:i", "environment:s", "error:b", "http_method:s", "operation_name:s", "parent_span_id:s", "region:s",
			"service_name:s", "span_id:s", "span_kind:s", "status_code:i", "trace_id:s"},
		"arc_logs":     {"environment:s", "level:s", "message:s", "region:s", "request_id:s", "response_time_ms:i", "service:s", "status_code:i"},
		"arc_logs_new": {"environment:s", "level:s", "message:s", "region:s", "request_id:s", "response_time_ms:f", "service:s", "status_code:i"},
	}[name]
	fields := []arrow.Field{{Name: "time", Type: schema.TimestampType}}
	for _, c := range cols {
		var t arrow.DataType
		switch c[len(c)-1] {
		case 'i':
			t = arrow.PrimitiveTypes.Int64
		case 'b':
			t = arrow.FixedWidthTypes.Boolean
		case 'f':
			t = arrow.PrimitiveTypes.Float64
		default:
			t = arrow.BinaryTypes.String
		}
		fields = append(fields, arrow.Field{Name: c[:len(c)-2], Type: t, Nullable: true})
	}
	return arrow.NewSchema(fields, nil)
}

var benchStart = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func hex(r *rand.Rand, n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[r.IntN(16)]
	}
	return string(b)
}

func pick[T any](r *rand.Rand, from []T) T { return from[r.IntN(len(from))] }

// arcTraces fills the 13 columns of Arc's distributed_traces load: random
// 32-hex trace ids, 16-hex span ids, a parent for 30 % of spans, times in
// milliseconds; environment is null in 1 row of 20 (a dictionary column
// with nulls).
func arcTraces(r *rand.Rand, b *array.RecordBuilder, n int) {
	for range n {
		ms := benchStart.Add(time.Duration(r.IntN(int(time.Minute)))).UnixMilli()
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(ms * 1e6))
		b.Field(1).(*array.Int64Builder).Append(int64(r.IntN(500_000_000)))
		if r.IntN(20) == 0 { // a client that leaves a column out
			b.Field(2).(*array.StringBuilder).AppendNull()
		} else {
			b.Field(2).(*array.StringBuilder).Append(pick(r, envs))
		}
		b.Field(3).(*array.BooleanBuilder).Append(r.IntN(50) == 0)
		b.Field(4).(*array.StringBuilder).Append(pick(r, methods))
		b.Field(5).(*array.StringBuilder).Append(pick(r, methods) + " " + pick(r, routes))
		parent := ""
		if r.IntN(10) < 3 {
			parent = hex(r, 16)
		}
		b.Field(6).(*array.StringBuilder).Append(parent)
		b.Field(7).(*array.StringBuilder).Append(pick(r, regions))
		b.Field(8).(*array.StringBuilder).Append(pick(r, services))
		b.Field(9).(*array.StringBuilder).Append(hex(r, 16))
		b.Field(10).(*array.StringBuilder).Append(pick(r, kinds))
		b.Field(11).(*array.Int64Builder).Append(pick(r, statuses))
		b.Field(12).(*array.StringBuilder).Append(hex(r, 32))
	}
}

// arcLogs fills the 9 columns of Arc's logs load with a UUID request id and
// messages from templates with varying numbers and names.
func arcLogs(r *rand.Rand, b *array.RecordBuilder, n int) {
	for range n {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(benchStart.Add(time.Duration(r.IntN(int(time.Minute)))).UnixMicro()))
		b.Field(1).(*array.StringBuilder).Append(pick(r, envs))
		b.Field(2).(*array.StringBuilder).Append(pick(r, levels))
		msg := pick(r, messages)
		switch {
		case msg == messages[0]:
		case msg[len(msg)-2:] == "%s":
			msg = fmt.Sprintf(msg, r.IntN(100000), pick(r, services))
		default:
			msg = fmt.Sprintf(msg, r.IntN(100000))
		}
		b.Field(3).(*array.StringBuilder).Append(msg)
		b.Field(4).(*array.StringBuilder).Append(pick(r, regions))
		b.Field(5).(*array.StringBuilder).Append(hex(r, 8) + "-" + hex(r, 4) + "-4" + hex(r, 3) + "-a" + hex(r, 3) + "-" + hex(r, 12))
		b.Field(6).(*array.Int64Builder).Append(int64(r.IntN(500)))
		b.Field(7).(*array.StringBuilder).Append(pick(r, services))
		b.Field(8).(*array.Int64Builder).Append(pick(r, statuses))
	}
}

// newLogLines are message templates like those of the Arc driver's logs
// since 2026-11-27 (loadtest's arcentropy.go): 60-100 bytes, each with
// random numbers and a random hex id.
var newLogLines = []func(r *rand.Rand) string{
	func(r *rand.Rand) string {
		return fmt.Sprintf("%s /api/v1/%s/%d completed %d in %d ms request=%s", pick(r, methods), pick(r, routes)[5:], r.IntN(1e7), r.IntN(600), r.IntN(5000), hex(r, 16))
	},
	func(r *rand.Rand) string {
		return fmt.Sprintf("user %d authenticated from 10.%d.%d.%d via oauth2 session=%s", r.IntN(1e8), r.IntN(256), r.IntN(256), r.IntN(256), hex(r, 24))
	},
	func(r *rand.Rand) string {
		return fmt.Sprintf("order %s placed: %d items, total %d.%d USD, payment %s", hex(r, 12), r.IntN(20), r.IntN(100000), r.IntN(100), hex(r, 16))
	},
	func(r *rand.Rand) string {
		return fmt.Sprintf("cache miss for key session:%s after %d us, shard %d", hex(r, 32), r.IntN(100000), r.IntN(64))
	},
	func(r *rand.Rand) string {
		return fmt.Sprintf("query %s on orders took %d ms, scanned %d rows, plan %s", hex(r, 8), r.IntN(10000), r.IntN(1e7), hex(r, 12))
	},
}

// arcLogsNew fills the columns of the Arc driver's logs since 2026-11-27,
// every row new: a random UUID, a message of random numbers and hex ids,
// a float response time.
func arcLogsNew(r *rand.Rand, b *array.RecordBuilder, n int) {
	for range n {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(benchStart.Add(time.Duration(r.IntN(int(time.Minute)))).UnixMicro()))
		b.Field(1).(*array.StringBuilder).Append(pick(r, envs))
		b.Field(2).(*array.StringBuilder).Append(pick(r, levels))
		b.Field(3).(*array.StringBuilder).Append(pick(r, newLogLines)(r))
		b.Field(4).(*array.StringBuilder).Append(pick(r, regions))
		b.Field(5).(*array.StringBuilder).Append(hex(r, 8) + "-" + hex(r, 4) + "-4" + hex(r, 3) + "-a" + hex(r, 3) + "-" + hex(r, 12))
		b.Field(6).(*array.Float64Builder).Append(10 + 490*r.Float64())
		b.Field(7).(*array.StringBuilder).Append(pick(r, services))
		b.Field(8).(*array.Int64Builder).Append(pick(r, statuses))
	}
}

// encoder writes one file of records.
type encoder func(out io.Writer, t benchTable, recs []arrow.RecordBatch, rows int64) error

// encoders are the candidates compared on the same records.
var encoders = []struct {
	name string
	enc  encoder
}{
	{"parquet-go", func(out io.Writer, t benchTable, recs []arrow.RecordBatch, _ int64) error {
		w, err := parquetfile.NewOldWriter(out, t.parquet, t.arrow, parquetfile.Options{BloomColumns: t.bloom})
		if err != nil {
			return err
		}
		for _, rec := range recs {
			if err := w.Write(rec, nil); err != nil {
				return err
			}
		}
		return w.Close()
	}},
	// pqarrow with Arc's settings: every default (dictionary on every
	// column), snappy, data page v2. The size reference.
	{"pqarrow-arc", func(out io.Writer, t benchTable, recs []arrow.RecordBatch, _ int64) error {
		return pqarrowFile(out, t.arrow, recs, pq.WithCompression(pqcompress.Codecs.Snappy), pq.WithDataPageVersion(pq.DataPageV2))
	}},
	// pqarrow with our schema and encodings, as issue 14 measured it.
	{"pqarrow-ours", func(out io.Writer, t benchTable, recs []arrow.RecordBatch, rows int64) error {
		return parquetfile.WritePqarrow(out, t.parquet, t.arrow, parquetfile.Options{BloomColumns: t.bloom, ExpectedRows: rows}, recs)
	}},
	{"new", newEncoder},
	// The new writer with a row group's columns encoded on GOMAXPROCS
	// goroutines (the flush's -flush-workers; at 10 000 rows and more).
	{"new-parallel", func(out io.Writer, t benchTable, recs []arrow.RecordBatch, rows int64) error {
		return encodeWith(out, t, recs, rows, runtime.GOMAXPROCS(0))
	}},
	// The new writer with the top-level strings of one width written
	// without a dictionary (ids) PLAIN, as before 2026-11-27, instead of
	// DELTA_LENGTH_BYTE_ARRAY; and with every string without a dictionary
	// DELTA_LENGTH_BYTE_ARRAY.
	{"new-plain-ids", func(out io.Writer, t benchTable, recs []arrow.RecordBatch, rows int64) error {
		defer parquetfile.SetOneWidthIDs(parquetfile.SetOneWidthIDs(false))
		return newEncoder(out, t, recs, rows)
	}},
	{"new-dlba-strings", func(out io.Writer, t benchTable, recs []arrow.RecordBatch, rows int64) error {
		defer parquetfile.SetDeltaLengthStrings(parquetfile.SetDeltaLengthStrings(true))
		return newEncoder(out, t, recs, rows)
	}},
	// The new writer at zstd level 1 (the fastest) or 3 (zstd's own
	// default) for every table, whatever its shape.
	{"new-zstd1", withZstd(1)},
	{"new-zstd3", withZstd(3)},
	// The new writer with the strings written without a dictionary at the
	// nested tables' level (3), as before 2026-11-27, instead of level 1.
	{"new-plain-strings-nested-level", func(out io.Writer, t benchTable, recs []arrow.RecordBatch, rows int64) error {
		defer parquetfile.SetPlainStringsFlat(parquetfile.SetPlainStringsFlat(false))
		return newEncoder(out, t, recs, rows)
	}},
	// The new writer with snappy or LZ4 instead of zstd.
	{"new-snappy", withProps(pq.WithCompression(pqcompress.Codecs.Snappy))},
	{"new-lz4", withProps(pq.WithCompression(pqcompress.Codecs.Lz4Raw))},
	// Smaller data pages (the default is 1 MiB): smaller page buffers.
	{"new-page256k", withProps(pq.WithDataPageSize(256 * 1024))},
	{"new-page512k", withProps(pq.WithDataPageSize(512 * 1024))},
	// The new writer with statistics on map and list columns too (what
	// they cost), and with that on version 2 data pages (the files before
	// DataPageVersion 1).
	{"new-nested-stats", withNestedStats(true)},
	// With statistics on the columns written with a dictionary (pqarrow
	// computes them through arrow compute's Unique over every index).
	{"new-dict-stats", func(out io.Writer, t benchTable, recs []arrow.RecordBatch, rows int64) error {
		parquetfile.SetDictStatistics(true)
		defer parquetfile.SetDictStatistics(false)
		return newEncoder(out, t, recs, rows)
	}},

	{"new-nested-stats-v2", withNestedStats(true, pq.WithDataPageVersion(pq.DataPageV2))},
	// The new writer with the keys and values of the map columns written
	// PLAIN (before they had a dictionary), or only the keys with one.
	{"new-mapdict-none", withMapDict("none")},
	{"new-mapdict-keys", withMapDict("keys")},
	// The new writer with the map columns' levels derived by pqarrow, leaf
	// by leaf (before they were computed once per map).
	{"new-pqarrow-map-levels", func(out io.Writer, t benchTable, recs []arrow.RecordBatch, rows int64) error {
		defer parquetfile.SetDirectMapLevels(parquetfile.SetDirectMapLevels(false))
		return newEncoder(out, t, recs, rows)
	}},
	// The new writer after two garbage collections (as in the sidecar,
	// where the rest of the process drives collections between flushes),
	// with the writers' zstd codec or arrow-go's, which then builds new
	// encoders; and with fresh buffers (arrow-go's GoAllocator) instead of
	// the pool.
	{"new-after-gc", afterGC(true)},
	{"new-after-gc-arrow-zstd", afterGC(false)},
	// Every zstd page through zstd's match search, as compaction writes
	// (no literals-only pages of random ids).
	{"new-no-literal-pages", func(out io.Writer, t benchTable, recs []arrow.RecordBatch, rows int64) error {
		defer parquetfile.SetLiteralPages(parquetfile.SetLiteralPages(false))
		return newEncoder(out, t, recs, rows)
	}},
	{"new-go-allocator", func(out io.Writer, t benchTable, recs []arrow.RecordBatch, rows int64) error {
		defer parquetfile.SetWriterAllocator(parquetfile.SetWriterAllocator(memory.NewGoAllocator()))
		return newEncoder(out, t, recs, rows)
	}},
}

func afterGC(pageZstd bool) encoder {
	return func(out io.Writer, t benchTable, recs []arrow.RecordBatch, rows int64) error {
		defer parquetfile.UsePageZstd(parquetfile.UsePageZstd(pageZstd))
		runtime.GC()
		runtime.GC()
		return newEncoder(out, t, recs, rows)
	}
}

func withMapDict(which string) encoder {
	return func(out io.Writer, t benchTable, recs []arrow.RecordBatch, rows int64) error {
		defer parquetfile.SetMapDict(parquetfile.SetMapDict(which))
		return newEncoder(out, t, recs, rows)
	}
}

// withProps is the new writer with extra arrow-go properties.
func withProps(extra ...pq.WriterProperty) encoder {
	return func(out io.Writer, t benchTable, recs []arrow.RecordBatch, rows int64) error {
		w, err := parquetfile.NewWriterWith(out, t.parquet, t.arrow, parquetfile.Options{BloomColumns: t.bloom, ExpectedRows: rows, LiteralPages: true}, extra...)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			if err := w.Write(rec, nil); err != nil {
				return err
			}
		}
		return w.Close()
	}
}

func withZstd(level int) encoder {
	return func(out io.Writer, t benchTable, recs []arrow.RecordBatch, rows int64) error {
		flat, nested := parquetfile.SetZstdLevels(level, level)
		defer parquetfile.SetZstdLevels(flat, nested)
		return newEncoder(out, t, recs, rows)
	}
}

func withNestedStats(on bool, extra ...pq.WriterProperty) encoder {
	return func(out io.Writer, t benchTable, recs []arrow.RecordBatch, rows int64) error {
		parquetfile.SetNestedStatistics(on)
		defer parquetfile.SetNestedStatistics(false)
		return withProps(extra...)(out, t, recs, rows)
	}
}

// newEncoder is the writer as the flush uses it.
func newEncoder(out io.Writer, t benchTable, recs []arrow.RecordBatch, rows int64) error {
	return encodeWith(out, t, recs, rows, 1)
}

// encodeWith is the writer as the flush uses it with -flush-workers
// workers.
func encodeWith(out io.Writer, t benchTable, recs []arrow.RecordBatch, rows int64, workers int) error {
	w, err := parquetfile.NewWriter(out, t.parquet, t.arrow, parquetfile.Options{BloomColumns: t.bloom, ExpectedRows: rows, LiteralPages: true, EncodeWorkers: workers})
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if err := w.Write(rec, nil); err != nil {
			return err
		}
	}
	return w.Close()
}

func pqarrowFile(out io.Writer, s *arrow.Schema, recs []arrow.RecordBatch, props ...pq.WriterProperty) error {
	w, err := pqarrow.NewFileWriter(s, out, pq.NewWriterProperties(props...), pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if err := w.WriteBuffered(rec); err != nil {
			return err
		}
	}
	return w.Close()
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkEncode writes one file of rows rows per op with each candidate,
// from the same records: realistic OTLP tables (maps, optional columns) and
// flat Arc-protocol measurements. It reports rows/s, ns/row and the file's
// bytes per row beside allocs/op.
//
//	go test ./internal/parquetfile/ -run '^$' -bench Encode -benchmem -cpu 1
func BenchmarkEncode(b *testing.B) {
	for _, t := range benchTables() {
		for _, rows := range []int{1000, 10000} {
			recs := t.batches(b, rows)
			for _, e := range encoders {
				b.Run(t.name+"/rows="+strconv.Itoa(rows)+"/"+e.name, func(b *testing.B) {
					b.ReportAllocs()
					var size int64
					cpu := benchcpu.Process()
					for b.Loop() {
						var cw countWriter
						if err := e.enc(&cw, t, recs, int64(rows)); err != nil {
							b.Fatal(err)
						}
						size = cw.n
					}
					reportRows(b, rows, size, benchcpu.Process()-cpu)
				})
			}
			for _, r := range recs {
				r.Release()
			}
		}
	}
}

// reportRows reports rows/s and ns/row of wall time, cpu-ns/row of the
// process's CPU time (with -cpu 1, the encoding and its garbage
// collection; on a shared machine it moves far less than wall time, since
// waiting for a core is not counted) and the file's bytes per row.
func reportRows(b *testing.B, rows int, size int64, cpu time.Duration) {
	elapsed := b.Elapsed().Seconds()
	total := float64(rows) * float64(b.N)
	b.ReportMetric(total/elapsed, "rows/s")
	b.ReportMetric(elapsed*1e9/total, "ns/row")
	b.ReportMetric(float64(cpu.Nanoseconds())/total, "cpu-ns/row")
	b.ReportMetric(float64(size)/float64(rows), "B/row")
}

// BenchmarkEncodeParallel writes a file of one full row group (the flush's
// row groups under load) with the columns encoded one after the other
// and on GOMAXPROCS goroutines (EncodeWorkers), reporting wall time and
// process CPU per row.
//
//	go test ./internal/parquetfile/ -run '^$' -bench EncodeParallel -cpu 2 -count 6
func BenchmarkEncodeParallel(b *testing.B) {
	for _, t := range benchTables() {
		if t.name != "arc_logs_new" && t.name != "otlp_traces_random_ids" {
			continue
		}
		rows := parquetfile.DefaultRowGroupRows
		recs := t.batches(b, rows)
		for _, parallel := range []bool{false, true} {
			workers := 1
			if parallel {
				workers = runtime.GOMAXPROCS(0)
			}
			b.Run(fmt.Sprintf("%s/rows=%d/parallel=%v", t.name, rows, parallel), func(b *testing.B) {
				b.ReportAllocs()
				var size int64
				cpu := benchcpu.Process()
				for b.Loop() {
					var cw countWriter
					if err := encodeWith(&cw, t, recs, int64(rows), workers); err != nil {
						b.Fatal(err)
					}
					size = cw.n
				}
				reportRows(b, rows, size, benchcpu.Process()-cpu)
			})
		}
		for _, r := range recs {
			r.Release()
		}
	}
}
