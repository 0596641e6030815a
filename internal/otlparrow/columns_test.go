package otlparrow_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/schema"
)

// The tests below pin the column semantics that docs/SCHEMA.md documents,
// one OTLP record at a time.

func ptr[T any](v T) *T { return &v }

// spanRow converts one span and reads its row back.
func spanRow(t *testing.T, build func(res pcommon.Resource, s ptrace.Span)) schema.Span {
	t.Helper()
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	build(rs.Resource(), s)
	b := newBatches(t)
	c := otlparrow.NewTracesConverter(b.mem, 10)
	defer c.Release()
	require.NoError(t, c.Convert(td, b.emit))
	got := rows[schema.Span](b, schema.TableTraces)
	require.Len(t, got, 1)
	return got[0]
}

func TestSpanColumns(t *testing.T) {
	tests := []struct {
		name  string
		build func(res pcommon.Resource, s ptrace.Span)
		check func(t *testing.T, r schema.Span)
	}{
		{
			name: "ids are lowercase hex, absent ids empty",
			build: func(_ pcommon.Resource, s ptrace.Span) {
				s.SetTraceID(pcommon.TraceID{0xAB, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xFF})
				s.SetSpanID(pcommon.SpanID{0xCD, 1, 2, 3, 4, 5, 6, 0xEF})
			},
			check: func(t *testing.T, r schema.Span) {
				assert.Equal(t, "ab0102030405060708090a0b0c0d0eff", r.TraceID)
				assert.Equal(t, "cd010203040506ef", r.SpanID)
				assert.Empty(t, r.ParentSpanID)
			},
		},
		{
			name: "time is the start in microseconds, truncated; duration end minus start, exact",
			build: func(_ pcommon.Resource, s ptrace.Span) {
				s.SetStartTimestamp(1_000_999)
				s.SetEndTimestamp(3_501_500)
			},
			check: func(t *testing.T, r schema.Span) {
				assert.Equal(t, []int64{1_000, 3_501, 2_500_501}, []int64{r.Time, r.EndTime, r.DurationNs})
			},
		},
		{
			name: "end before start gives a negative duration",
			build: func(_ pcommon.Resource, s ptrace.Span) {
				s.SetStartTimestamp(5_000)
				s.SetEndTimestamp(4_000)
			},
			check: func(t *testing.T, r schema.Span) { assert.Equal(t, int64(-1_000), r.DurationNs) },
		},
		{
			name:  "status error sets error",
			build: func(_ pcommon.Resource, s ptrace.Span) { s.Status().SetCode(ptrace.StatusCodeError) },
			check: func(t *testing.T, r schema.Span) {
				assert.Equal(t, "error", r.SpanStatus)
				assert.True(t, r.Error)
			},
		},
		{
			name:  "status ok is not an error",
			build: func(_ pcommon.Resource, s ptrace.Span) { s.Status().SetCode(ptrace.StatusCodeOk) },
			check: func(t *testing.T, r schema.Span) {
				assert.Equal(t, "ok", r.SpanStatus)
				assert.False(t, r.Error)
			},
		},
		{
			name:  "defaults: unset status, unspecified kind",
			build: func(pcommon.Resource, ptrace.Span) {},
			check: func(t *testing.T, r schema.Span) {
				assert.Equal(t, "unset", r.SpanStatus)
				assert.Equal(t, "unspecified", r.SpanKind)
			},
		},
		{
			name:  "flags as int64",
			build: func(_ pcommon.Resource, s ptrace.Span) { s.SetFlags(math.MaxUint32) },
			check: func(t *testing.T, r schema.Span) { assert.Equal(t, int64(math.MaxUint32), r.Flags) },
		},
		{
			name: "promoted resource columns",
			build: func(res pcommon.Resource, _ ptrace.Span) {
				res.Attributes().PutStr("service.name", "checkout")
				res.Attributes().PutStr("host.name", "node-1")
				res.Attributes().PutStr("deployment.environment", "staging") // the older key
				res.Attributes().PutStr("cloud.region", "eu-west-1")
			},
			check: func(t *testing.T, r schema.Span) {
				assert.Equal(t, "checkout", r.ServiceName)
				assert.Equal(t, ptr("node-1"), r.Host)
				assert.Equal(t, ptr("staging"), r.Environment)
				assert.Equal(t, ptr("eu-west-1"), r.Region)
				assert.Equal(t, "checkout", r.ResourceAttributes["service.name"], "promotion copies")
			},
		},
		{
			name:  "absent resource columns: service_name empty, the others null",
			build: func(pcommon.Resource, ptrace.Span) {},
			check: func(t *testing.T, r schema.Span) {
				assert.Empty(t, r.ServiceName)
				assert.Nil(t, r.Host)
				assert.Nil(t, r.Environment)
				assert.Nil(t, r.Region)
			},
		},
		{
			name: "current semconv key wins over the older one",
			build: func(res pcommon.Resource, s ptrace.Span) {
				res.Attributes().PutStr("deployment.environment", "old")
				res.Attributes().PutStr("deployment.environment.name", "new")
				s.Attributes().PutStr("http.method", "PUT")
				s.Attributes().PutStr("http.request.method", "POST")
				s.Attributes().PutInt("http.status_code", 500)
				s.Attributes().PutInt("http.response.status_code", 201)
			},
			check: func(t *testing.T, r schema.Span) {
				assert.Equal(t, ptr("new"), r.Environment)
				assert.Equal(t, ptr("POST"), r.HTTPMethod)
				assert.Equal(t, ptr(int64(201)), r.StatusCode)
			},
		},
		{
			name: "non-string promoted values are rendered as text",
			build: func(res pcommon.Resource, _ ptrace.Span) {
				res.Attributes().PutInt("service.name", 42)
			},
			check: func(t *testing.T, r schema.Span) { assert.Equal(t, "42", r.ServiceName) },
		},
		{
			name: "attributes: text for every key, a type tag for non-strings",
			build: func(_ pcommon.Resource, s ptrace.Span) {
				a := s.Attributes()
				a.PutStr("s", "x")
				a.PutInt("i", -7)
				a.PutDouble("d", math.Inf(-1))
				a.PutBool("b", true)
				a.PutEmptyBytes("raw").FromRaw([]byte{0xff, 0})
				a.PutEmpty("nothing")
				a.PutEmptySlice("list").AppendEmpty().SetStr("v")
			},
			check: func(t *testing.T, r schema.Span) {
				assert.Equal(t, map[string]string{"s": "x", "i": "-7", "d": "-Inf", "b": "true", "raw": "/wA=", "nothing": "", "list": `["v"]`}, r.Attributes)
				assert.Equal(t, map[string]string{
					"i": "int", "d": "double", "b": "bool", "raw": "bytes", "nothing": "empty",
					"list": `{"arrayValue":{"values":[{"stringValue":"v"}]}}`,
				}, r.AttributeTypes)
			},
		},
		{
			name: "invalid UTF-8 replaced in names, keys and values",
			build: func(_ pcommon.Resource, s ptrace.Span) {
				s.SetName("get\xff")
				s.Attributes().PutStr("k\xfe", "v\xc3")
			},
			check: func(t *testing.T, r schema.Span) {
				assert.Equal(t, "get\uFFFD", r.OperationName)
				assert.Equal(t, map[string]string{"k\uFFFD": "v\uFFFD"}, r.Attributes)
			},
		},
		{
			name: "keys equal after replacing invalid UTF-8: the first wins",
			build: func(_ pcommon.Resource, s ptrace.Span) {
				for i, k := range []string{"a", "k\xff", "b", "k\xfe", "c", "k\xc3"} {
					s.Attributes().PutInt(k, int64(i))
				}
			},
			check: func(t *testing.T, r schema.Span) {
				assert.Equal(t, map[string]string{"a": "0", "k\uFFFD": "1", "b": "2", "c": "4"}, r.Attributes)
				assert.Len(t, r.AttributeTypes, 4)
			},
		},
		{
			name: "events and links keep their attributes and dropped counts",
			build: func(_ pcommon.Resource, s ptrace.Span) {
				ev := s.Events().AppendEmpty()
				ev.SetName("retry")
				ev.SetTimestamp(7_999)
				ev.Attributes().PutInt("attempt", 2)
				ev.SetDroppedAttributesCount(3)
				l := s.Links().AppendEmpty()
				l.SetTraceID(pcommon.TraceID{15: 1})
				l.TraceState().FromRaw("a=b")
				l.SetFlags(1)
				l.SetDroppedAttributesCount(4)
			},
			check: func(t *testing.T, r schema.Span) {
				assert.Equal(t, []schema.SpanEvent{{
					Time: 7, Name: "retry", Attributes: map[string]string{"attempt": "2"},
					AttributeTypes: map[string]string{"attempt": "int"}, DroppedAttributesCount: 3,
				}}, r.Events)
				assert.Equal(t, []schema.SpanLink{{
					TraceID: "00000000000000000000000000000001", TraceState: "a=b", Flags: 1,
					Attributes: map[string]string{}, AttributeTypes: map[string]string{}, DroppedAttributesCount: 4,
				}}, r.Links)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, spanRow(t, tt.build)) })
	}
}

func TestSpanKindNames(t *testing.T) {
	for kind, want := range map[ptrace.SpanKind]string{
		ptrace.SpanKindUnspecified: "unspecified", ptrace.SpanKindInternal: "internal", ptrace.SpanKindServer: "server",
		ptrace.SpanKindClient: "client", ptrace.SpanKindProducer: "producer", ptrace.SpanKindConsumer: "consumer",
	} {
		t.Run(want, func(t *testing.T) {
			assert.Equal(t, want, spanRow(t, func(_ pcommon.Resource, s ptrace.Span) { s.SetKind(kind) }).SpanKind)
		})
	}
}

func TestStatusCodeColumn(t *testing.T) {
	tests := []struct {
		name string
		set  func(pcommon.Map)
		want *int64
	}{
		{"int attribute", func(m pcommon.Map) { m.PutInt("http.response.status_code", 404) }, ptr(int64(404))},
		{"string holding an int", func(m pcommon.Map) { m.PutStr("http.response.status_code", "503") }, ptr(int64(503))},
		{"string with a sign", func(m pcommon.Map) { m.PutStr("http.response.status_code", "-1") }, ptr(int64(-1))},
		{"older key", func(m pcommon.Map) { m.PutStr("http.status_code", "200") }, ptr(int64(200))},
		{"string that is not a number", func(m pcommon.Map) { m.PutStr("http.response.status_code", "OK") }, nil},
		{"string out of int64 range", func(m pcommon.Map) { m.PutStr("http.response.status_code", "9223372036854775808") }, nil},
		{"empty string", func(m pcommon.Map) { m.PutStr("http.response.status_code", "") }, nil},
		{"double", func(m pcommon.Map) { m.PutDouble("http.response.status_code", 200) }, nil},
		{"bool", func(m pcommon.Map) { m.PutBool("http.response.status_code", true) }, nil},
		{"absent", func(pcommon.Map) {}, nil},
		{"first key present decides, even when not a number", func(m pcommon.Map) {
			m.PutStr("http.response.status_code", "n/a")
			m.PutInt("http.status_code", 200)
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := spanRow(t, func(_ pcommon.Resource, s ptrace.Span) { tt.set(s.Attributes()) })
			assert.Equal(t, tt.want, got.StatusCode)
		})
	}
}

// Rows of one key set look their promoted entries up once: each row must
// still get its own values, whatever their types, and a row whose keys
// differ (another order, another key, a cut between batches) its own.
func TestPromotedColumnsFollowEachRow(t *testing.T) {
	type want struct {
		method *string
		status *int64
	}
	rowsIn := []struct {
		set  func(pcommon.Map)
		want want
	}{
		{func(m pcommon.Map) {
			m.PutStr("http.request.method", "GET")
			m.PutInt("http.response.status_code", 200)
		}, want{ptr("GET"), ptr(int64(200))}},
		{func(m pcommon.Map) {
			m.PutStr("http.request.method", "PUT")
			m.PutStr("http.response.status_code", "503")
		}, want{ptr("PUT"), ptr(int64(503))}},
		{func(m pcommon.Map) {
			m.PutStr("http.request.method", "POST")
			m.PutStr("http.response.status_code", "OK")
		}, want{ptr("POST"), nil}},
		{func(m pcommon.Map) { m.PutInt("http.request.method", 7); m.PutDouble("http.response.status_code", 1) }, want{ptr("7"), nil}},
		{func(m pcommon.Map) {
			m.PutInt("http.response.status_code", 404)
			m.PutStr("http.request.method", "HEAD")
		}, want{ptr("HEAD"), ptr(int64(404))}},
		{func(m pcommon.Map) {
			m.PutInt("http.response.status_code", 500)
			m.PutStr("http.request.method", "GET")
		}, want{ptr("GET"), ptr(int64(500))}},
		{func(m pcommon.Map) { m.PutInt("http.response.status_code", 500); m.PutStr("other", "GET") }, want{nil, ptr(int64(500))}},
		{func(m pcommon.Map) { m.PutStr("http.method", "DELETE"); m.PutStr("other", "x") }, want{ptr("DELETE"), nil}},
		{func(m pcommon.Map) { m.PutStr("http.method", "PATCH"); m.PutStr("other", "\xff") }, want{ptr("PATCH"), nil}},
		{func(m pcommon.Map) { m.PutStr("http.method", "\xffX"); m.PutStr("other", "y") }, want{ptr("\uFFFDX"), nil}},
		{func(m pcommon.Map) { m.PutStr("http.method", "GET"); m.PutStr("other", "z") }, want{ptr("GET"), nil}},
		{func(pcommon.Map) {}, want{nil, nil}},
		{func(pcommon.Map) {}, want{nil, nil}},
		{func(m pcommon.Map) { m.PutStr("http.method", "GET"); m.PutStr("other", "z") }, want{ptr("GET"), nil}},
	}
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for _, r := range rowsIn {
		r.set(spans.AppendEmpty().Attributes())
	}
	b := newBatches(t)
	c := otlparrow.NewTracesConverter(b.mem, 4) // cuts between rows of one key set
	defer c.Release()
	require.NoError(t, c.Convert(td, b.emit))
	got := rows[schema.Span](b, schema.TableTraces)
	require.Len(t, got, len(rowsIn))
	for i, r := range rowsIn {
		assert.Equal(t, r.want.method, got[i].HTTPMethod, "row %d", i)
		assert.Equal(t, r.want.status, got[i].StatusCode, "row %d", i)
	}
}

// logRow converts one log record and reads its row back from whichever
// table it went to.
func logRow(t *testing.T, build func(lr plog.LogRecord)) (string, schema.LogRecord) {
	t.Helper()
	ld := plog.NewLogs()
	build(ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
	b := newBatches(t)
	c := otlparrow.NewLogsConverter(b.mem, 10)
	defer c.Release()
	require.NoError(t, c.Convert(ld, b.emit))
	require.Len(t, b.order, 1)
	table := schema.TableLogs
	if len(b.recs[schema.TableEvents]) > 0 {
		table = schema.TableEvents
	}
	return table, rows[schema.LogRecord](b, table)[0]
}

func TestLogColumns(t *testing.T) {
	tests := []struct {
		name  string
		build func(lr plog.LogRecord)
		table string
		check func(t *testing.T, r schema.LogRecord)
	}{
		{
			name:  "time is the timestamp",
			build: func(lr plog.LogRecord) { lr.SetTimestamp(10_500); lr.SetObservedTimestamp(20_999) },
			table: schema.TableLogs,
			check: func(t *testing.T, r schema.LogRecord) {
				assert.Equal(t, []int64{10, 20}, []int64{r.Time, r.ObservedTime})
			},
		},
		{
			name:  "time falls back to the observed time",
			build: func(lr plog.LogRecord) { lr.SetObservedTimestamp(20_001) },
			table: schema.TableLogs,
			check: func(t *testing.T, r schema.LogRecord) {
				assert.Equal(t, []int64{20, 20}, []int64{r.Time, r.ObservedTime})
			},
		},
		{
			name:  "an event name sends the record to events",
			build: func(lr plog.LogRecord) { lr.SetEventName("user.login") },
			table: schema.TableEvents,
			check: func(t *testing.T, r schema.LogRecord) { assert.Equal(t, "user.login", r.EventType) },
		},
		{
			name: "severity text is the level when set",
			build: func(lr plog.LogRecord) {
				lr.SetSeverityText("Warning")
				lr.SetSeverityNumber(plog.SeverityNumberError)
			},
			table: schema.TableLogs,
			check: func(t *testing.T, r schema.LogRecord) {
				assert.Equal(t, "Warning", r.Level)
				assert.Equal(t, "Warning", r.SeverityText)
				assert.Equal(t, int64(17), r.SeverityNumber)
			},
		},
		{
			name: "trace context and flags",
			build: func(lr plog.LogRecord) {
				lr.SetTraceID(pcommon.TraceID{0: 0xaa, 15: 0xbb})
				lr.SetSpanID(pcommon.SpanID{7: 0xcc})
				lr.SetFlags(plog.DefaultLogRecordFlags.WithIsSampled(true))
			},
			table: schema.TableLogs,
			check: func(t *testing.T, r schema.LogRecord) {
				assert.Equal(t, "aa0000000000000000000000000000bb", r.TraceID)
				assert.Equal(t, "00000000000000cc", r.SpanID)
				assert.Equal(t, int64(1), r.Flags)
			},
		},
		{
			name: "promoted HTTP columns from the record's attributes",
			build: func(lr plog.LogRecord) {
				lr.Attributes().PutStr("http.method", "GET")
				lr.Attributes().PutStr("http.status_code", "404")
			},
			table: schema.TableLogs,
			check: func(t *testing.T, r schema.LogRecord) {
				assert.Equal(t, ptr("GET"), r.HTTPMethod)
				assert.Equal(t, ptr(int64(404)), r.StatusCode)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, r := logRow(t, tt.build)
			assert.Equal(t, tt.table, table)
			tt.check(t, r)
		})
	}
}

func TestLogLevelFromSeverityNumber(t *testing.T) {
	want := []string{"", "TRACE", "TRACE", "TRACE", "TRACE", "DEBUG", "DEBUG", "DEBUG", "DEBUG", "INFO", "INFO", "INFO", "INFO",
		"WARN", "WARN", "WARN", "WARN", "ERROR", "ERROR", "ERROR", "ERROR", "FATAL", "FATAL", "FATAL", "FATAL"}
	for n, level := range want {
		_, r := logRow(t, func(lr plog.LogRecord) { lr.SetSeverityNumber(plog.SeverityNumber(n)) })
		assert.Equal(t, level, r.Level, "severity number %d", n)
		assert.Equal(t, level, otlparrow.Level("", plog.SeverityNumber(n)))
	}
}

func TestLogBodyColumns(t *testing.T) {
	tests := []struct {
		name         string
		set          func(pcommon.Value)
		message, typ string
		json         *string
	}{
		{"string", func(v pcommon.Value) { v.SetStr("hello") }, "hello", "string", nil},
		{"invalid UTF-8 string", func(v pcommon.Value) { v.SetStr("a\xffb") }, "a\uFFFDb", "string", nil},
		{"int", func(v pcommon.Value) { v.SetInt(-3) }, "-3", "int", nil},
		{"double", func(v pcommon.Value) { v.SetDouble(0.1) }, "0.1", "double", nil},
		{"NaN", func(v pcommon.Value) { v.SetDouble(math.NaN()) }, "NaN", "double", nil},
		{"bool", func(v pcommon.Value) { v.SetBool(false) }, "false", "bool", nil},
		{"bytes", func(v pcommon.Value) { v.SetEmptyBytes().FromRaw([]byte("hi")) }, "aGk=", "bytes", nil},
		{"empty", func(pcommon.Value) {}, "", "empty", nil},
		{"map", func(v pcommon.Value) { v.SetEmptyMap().PutInt("n", 1) }, `{"n":1}`, "map",
			ptr(`{"kvlistValue":{"values":[{"key":"n","value":{"intValue":"1"}}]}}`)},
		{"array", func(v pcommon.Value) { v.SetEmptySlice().AppendEmpty().SetBool(true) }, `[true]`, "array",
			ptr(`{"arrayValue":{"values":[{"boolValue":true}]}}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, r := logRow(t, func(lr plog.LogRecord) { tt.set(lr.Body()) })
			assert.Equal(t, tt.message, r.Message)
			assert.Equal(t, tt.typ, r.BodyType)
			assert.Equal(t, tt.json, r.BodyJSON)
		})
	}
}

// metricRows converts one metric and reads its rows back.
func metricRows(t *testing.T, build func(m pmetric.Metric)) []schema.MetricPoint {
	t.Helper()
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("m")
	build(m)
	b := newBatches(t)
	c := otlparrow.NewMetricsConverter(b.mem, 10)
	defer c.Release()
	require.NoError(t, c.Convert(md, b.emit))
	return rows[schema.MetricPoint](b, schema.TableMetrics)
}

// unused lists the columns a point of the given type leaves null or empty.
func unused(r schema.MetricPoint) map[string]bool {
	return map[string]bool{
		"value": r.Value == nil, "value_int": r.ValueInt == nil, "count": r.Count == nil, "sum": r.Sum == nil,
		"min": r.Min == nil, "max": r.Max == nil, "bucket_counts": len(r.BucketCounts) == 0,
		"explicit_bounds": len(r.ExplicitBounds) == 0, "scale": r.Scale == nil, "zero_count": r.ZeroCount == nil,
		"zero_threshold": r.ZeroThreshold == nil, "positive_offset": r.PositiveOffset == nil,
		"positive_bucket_counts": len(r.PositiveBucketCounts) == 0, "negative_offset": r.NegativeOffset == nil,
		"negative_bucket_counts": len(r.NegativeBucketCounts) == 0, "quantile_levels": len(r.QuantileLevels) == 0,
		"quantile_values": len(r.QuantileValues) == 0, "exemplars": len(r.Exemplars) == 0,
	}
}

// onlyUsed returns what unused should return when exactly cols are used.
func onlyUsed(cols ...string) map[string]bool {
	m := unused(schema.MetricPoint{})
	for _, c := range cols {
		m[c] = false
	}
	return m
}

func TestMetricColumns(t *testing.T) {
	tests := []struct {
		name  string
		build func(m pmetric.Metric)
		check func(t *testing.T, r schema.MetricPoint)
	}{
		{
			name: "gauge, double point",
			build: func(m pmetric.Metric) {
				dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
				dp.SetDoubleValue(2.5)
				dp.SetTimestamp(20_001)
				dp.SetStartTimestamp(10_999)
			},
			check: func(t *testing.T, r schema.MetricPoint) {
				assert.Equal(t, []string{"gauge", ""}, []string{r.MetricType, r.Temporality})
				assert.Equal(t, []int64{20, 10}, []int64{r.Time, r.StartTime})
				assert.Equal(t, ptr(2.5), r.Value)
				assert.Equal(t, onlyUsed("value"), unused(r))
			},
		},
		{
			name:  "gauge, int point: exact in value_int, converted in value",
			build: func(m pmetric.Metric) { m.SetEmptyGauge().DataPoints().AppendEmpty().SetIntValue(math.MaxInt64) },
			check: func(t *testing.T, r schema.MetricPoint) {
				assert.Equal(t, ptr(int64(math.MaxInt64)), r.ValueInt)
				assert.Equal(t, ptr(float64(math.MaxInt64)), r.Value)
			},
		},
		{
			name:  "gauge, point without a value",
			build: func(m pmetric.Metric) { m.SetEmptyGauge().DataPoints().AppendEmpty() },
			check: func(t *testing.T, r schema.MetricPoint) { assert.Equal(t, onlyUsed(), unused(r)) },
		},
		{
			name: "monotonic delta sum",
			build: func(m pmetric.Metric) {
				s := m.SetEmptySum()
				s.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
				s.SetIsMonotonic(true)
				s.DataPoints().AppendEmpty().SetIntValue(3)
			},
			check: func(t *testing.T, r schema.MetricPoint) {
				assert.Equal(t, []string{"sum", "delta"}, []string{r.MetricType, r.Temporality})
				assert.True(t, r.IsMonotonic)
			},
		},
		{
			name: "cumulative sum",
			build: func(m pmetric.Metric) {
				s := m.SetEmptySum()
				s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				s.DataPoints().AppendEmpty().SetDoubleValue(1)
			},
			check: func(t *testing.T, r schema.MetricPoint) {
				assert.Equal(t, "cumulative", r.Temporality)
				assert.False(t, r.IsMonotonic)
			},
		},
		{
			name:  "sum with unspecified temporality",
			build: func(m pmetric.Metric) { m.SetEmptySum().DataPoints().AppendEmpty() },
			check: func(t *testing.T, r schema.MetricPoint) { assert.Empty(t, r.Temporality) },
		},
		{
			name: "histogram without sum, min and max",
			build: func(m pmetric.Metric) {
				h := m.SetEmptyHistogram()
				h.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
				dp := h.DataPoints().AppendEmpty()
				dp.SetCount(6)
				dp.BucketCounts().FromRaw([]uint64{1, 5})
				dp.ExplicitBounds().FromRaw([]float64{10})
			},
			check: func(t *testing.T, r schema.MetricPoint) {
				assert.Equal(t, []string{"histogram", "delta"}, []string{r.MetricType, r.Temporality})
				assert.Equal(t, ptr(int64(6)), r.Count)
				assert.Equal(t, []int64{1, 5}, r.BucketCounts)
				assert.Equal(t, []float64{10}, r.ExplicitBounds)
				assert.Equal(t, onlyUsed("count", "bucket_counts", "explicit_bounds"), unused(r))
			},
		},
		{
			name: "exponential histogram",
			build: func(m pmetric.Metric) {
				dp := m.SetEmptyExponentialHistogram().DataPoints().AppendEmpty()
				dp.SetCount(3)
				dp.SetSum(1.5)
				dp.SetMin(-1)
				dp.SetMax(2)
				dp.SetScale(-2)
				dp.SetZeroCount(1)
				dp.SetZeroThreshold(1e-6)
				dp.Positive().SetOffset(-3)
				dp.Positive().BucketCounts().FromRaw([]uint64{1})
				dp.Negative().SetOffset(4)
				dp.Negative().BucketCounts().FromRaw([]uint64{1})
			},
			check: func(t *testing.T, r schema.MetricPoint) {
				assert.Equal(t, "exponential_histogram", r.MetricType)
				assert.Equal(t, []*float64{ptr(1.5), ptr(-1.0), ptr(2.0), ptr(1e-6)}, []*float64{r.Sum, r.Min, r.Max, r.ZeroThreshold})
				assert.Equal(t, []*int64{ptr(int64(3)), ptr(int64(-2)), ptr(int64(1)), ptr(int64(-3)), ptr(int64(4))},
					[]*int64{r.Count, r.Scale, r.ZeroCount, r.PositiveOffset, r.NegativeOffset})
				assert.Equal(t, onlyUsed("count", "sum", "min", "max", "scale", "zero_count", "zero_threshold",
					"positive_offset", "positive_bucket_counts", "negative_offset", "negative_bucket_counts"), unused(r))
			},
		},
		{
			name: "summary",
			build: func(m pmetric.Metric) {
				dp := m.SetEmptySummary().DataPoints().AppendEmpty()
				dp.SetCount(4)
				dp.SetSum(0) // a summary's sum is always set
				q := dp.QuantileValues().AppendEmpty()
				q.SetQuantile(0.5)
				q.SetValue(7)
			},
			check: func(t *testing.T, r schema.MetricPoint) {
				assert.Equal(t, []string{"summary", ""}, []string{r.MetricType, r.Temporality})
				assert.Equal(t, []float64{0.5}, r.QuantileLevels)
				assert.Equal(t, []float64{7}, r.QuantileValues)
				assert.Equal(t, onlyUsed("count", "sum", "quantile_levels", "quantile_values"), unused(r))
			},
		},
		{
			name: "exemplars: a double in value, an int in both",
			build: func(m pmetric.Metric) {
				exs := m.SetEmptyGauge().DataPoints().AppendEmpty().Exemplars()
				exs.AppendEmpty().SetDoubleValue(0.5)
				e := exs.AppendEmpty()
				e.SetIntValue(-2)
				e.SetTraceID(pcommon.TraceID{15: 1})
				e.SetSpanID(pcommon.SpanID{7: 2})
				e.FilteredAttributes().PutBool("sampled", true)
				exs.AppendEmpty()
			},
			check: func(t *testing.T, r schema.MetricPoint) {
				require.Len(t, r.Exemplars, 3)
				assert.Equal(t, schema.Exemplar{Value: ptr(0.5), FilteredAttributes: map[string]string{}, FilteredAttributeTypes: map[string]string{}}, r.Exemplars[0])
				assert.Equal(t, schema.Exemplar{
					Value: ptr(-2.0), ValueInt: ptr(int64(-2)), TraceID: "00000000000000000000000000000001", SpanID: "0000000000000002",
					FilteredAttributes: map[string]string{"sampled": "true"}, FilteredAttributeTypes: map[string]string{"sampled": "bool"},
				}, r.Exemplars[1])
				assert.Nil(t, r.Exemplars[2].Value)
				assert.Nil(t, r.Exemplars[2].ValueInt)
			},
		},
		{
			name: "metric metadata",
			build: func(m pmetric.Metric) {
				m.Metadata().PutInt("v", 2)
				m.SetEmptyGauge().DataPoints().AppendEmpty()
			},
			check: func(t *testing.T, r schema.MetricPoint) {
				assert.Equal(t, map[string]string{"v": "2"}, r.MetricMetadata)
				assert.Equal(t, map[string]string{"v": "int"}, r.MetricMetadataTypes)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := metricRows(t, tt.build)
			require.Len(t, got, 1)
			tt.check(t, got[0])
		})
	}
}

func TestMetricWithoutTypeHasNoRows(t *testing.T) {
	assert.Empty(t, metricRows(t, func(pmetric.Metric) {}))
}
