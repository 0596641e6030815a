// Package otlparrowtest is the test kit of the column contract: generators
// of OTLP data that set every field the contract stores (Traces, Logs,
// Metrics) or look like real traffic (Realistic*), a reader of record
// batches into the row structs of internal/schema (Rows), and comparisons
// of pdata the way the contract promises to keep it (Assert*Equal in order,
// Assert*SameRecords in any order).
//
// What every generator covers: attribute values of every type (string,
// int incl. min and max, double incl. NaN, ±Inf, -0 and the smallest
// subnormal, bool, bytes incl. non-UTF-8 and empty, empty, nested arrays
// and maps, empty array and map), empty and 1 MiB strings, invalid UTF-8 in
// keys, values, names and messages, dropped counts, schema URLs, and
// resources and scopes that all differ, so regrouping is unambiguous.
package otlparrowtest

import (
	"fmt"
	"math"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Mode chooses between the data as sent and the data as the contract reads
// it back (docs/SCHEMA.md, Normalisations).
type Mode int

const (
	// Sent is the data as a client sends it.
	Sent Mode = iota
	// ReadBack is the same data after the documented normalisations.
	ReadBack
)

// Base is the time of the first generated record.
var Base = time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)

func ts(offset time.Duration) pcommon.Timestamp {
	return pcommon.NewTimestampFromTime(Base.Add(offset))
}

// tsm is ts as the mode has it: the contract stores microseconds, so a
// time read back is truncated to the microsecond.
func tsm(m Mode, offset time.Duration) pcommon.Timestamp {
	if m == ReadBack {
		return pcommon.NewTimestampFromTime(Base.Add(offset).Truncate(time.Microsecond))
	}
	return ts(offset)
}

// badUTF8 is a string with invalid UTF-8, or what the contract stores for it.
func badUTF8(m Mode, prefix string) string {
	if m == ReadBack {
		return prefix + "\uFFFD\uFFFDok"
	}
	return prefix + "\xff\xfeok"
}

// big is a 1 MiB string.
var big = strings.Repeat("0123456789abcdef", 1<<16)

// fillAttrs puts one value of every type, nested arrays and maps, and edge
// cases into m; seed makes sets differ.
func fillAttrs(m pcommon.Map, mode Mode, seed int) {
	m.PutStr("str", fmt.Sprintf("value-%d", seed))
	m.PutStr("empty.str", "")
	m.PutStr("utf8", "ünïcødé ✓")
	m.PutStr(badUTF8(mode, "bad.key."), badUTF8(mode, "bad.value."))
	m.PutInt("int", int64(seed)-3)
	m.PutInt("int.max", math.MaxInt64)
	m.PutInt("int.min", math.MinInt64)
	m.PutDouble("double", 0.1+float64(seed))
	m.PutDouble("double.nan", math.NaN())
	m.PutDouble("double.inf", math.Inf(1))
	m.PutDouble("double.-inf", math.Inf(-1))
	m.PutDouble("double.-zero", math.Copysign(0, -1))
	m.PutDouble("double.tiny", 5e-324)
	m.PutBool("bool", seed%2 == 0)
	m.PutEmptyBytes("bytes").FromRaw([]byte{0xff, 0x00, 0xfe, byte(seed)})
	m.PutEmptyBytes("bytes.empty")
	m.PutEmpty("empty")
	s := m.PutEmptySlice("array")
	s.AppendEmpty().SetStr("a")
	s.AppendEmpty().SetInt(1)
	s.AppendEmpty().SetDouble(1)
	s.AppendEmpty().SetBool(true)
	s.AppendEmpty().SetEmptyBytes().FromRaw([]byte("b"))
	s.AppendEmpty().SetEmptySlice().AppendEmpty().SetStr("nested")
	s.AppendEmpty()
	mm := m.PutEmptyMap("map")
	mm.PutStr("k", "v")
	mm.PutDouble("nan", math.NaN())
	mm.PutEmptyMap("inner").PutInt("deep", 42)
	m.PutEmptySlice("array.empty")
	m.PutEmptyMap("map.empty")
}

func fillResource(r pcommon.Resource, mode Mode, seed int) {
	a := r.Attributes()
	a.PutStr("service.name", fmt.Sprintf("svc-%d", seed))
	a.PutStr("host.name", "host-1")
	a.PutStr("deployment.environment.name", "prod")
	a.PutStr("cloud.region", "eu-west-1")
	fillAttrs(a, mode, seed)
	r.SetDroppedAttributesCount(uint32(seed))
}

func fillScope(s pcommon.InstrumentationScope, mode Mode, seed int) {
	s.SetName(fmt.Sprintf("scope-%d", seed))
	s.SetVersion("v1.2." + fmt.Sprint(seed))
	s.Attributes().PutStr("scope.attr", badUTF8(mode, "s"))
	s.Attributes().PutInt("scope.n", int64(seed))
	s.SetDroppedAttributesCount(math.MaxUint32)
}

func traceID(seed int) pcommon.TraceID {
	return pcommon.TraceID{0xde, 0xad, byte(seed >> 8), byte(seed), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0xff}
}

func spanID(seed int) pcommon.SpanID {
	return pcommon.SpanID{0xbe, 0xef, byte(seed >> 8), byte(seed), 1, 2, 3, 0xff}
}

// Traces returns 4*spansPerScope spans in two resources with two scopes
// each: every kind and status, trace state, flags, parent ids (and roots),
// events and links with attributes and dropped counts, an empty link, a
// span whose end precedes its start, promoted HTTP attributes and a 1 MiB
// attribute value.
func Traces(mode Mode, spansPerScope int) ptrace.Traces {
	td := ptrace.NewTraces()
	n := 0
	for r := range 2 {
		rs := td.ResourceSpans().AppendEmpty()
		rs.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
		fillResource(rs.Resource(), mode, r)
		for sc := range 2 {
			ss := rs.ScopeSpans().AppendEmpty()
			ss.SetSchemaUrl(fmt.Sprintf("https://example.com/scope/%d", sc))
			fillScope(ss.Scope(), mode, r*2+sc)
			for range spansPerScope {
				fillSpan(ss.Spans().AppendEmpty(), mode, n)
				n++
			}
		}
	}
	return td
}

func fillSpan(s ptrace.Span, mode Mode, i int) {
	s.SetTraceID(traceID(i / 3))
	s.SetSpanID(spanID(i))
	if i%3 != 0 {
		s.SetParentSpanID(spanID(i - i%3))
	}
	s.TraceState().FromRaw("vendor=a,other=b")
	s.SetFlags(uint32(i) | 0x100)
	s.SetName(fmt.Sprintf("GET /orders/%d", i%7))
	if i == 1 {
		s.SetName(badUTF8(mode, "name"))
	}
	s.SetKind(ptrace.SpanKind(i % 6))
	s.Status().SetCode(ptrace.StatusCode(i % 3))
	s.Status().SetMessage(fmt.Sprintf("status %d", i))
	if i == 1 {
		s.Status().SetMessage(badUTF8(mode, "status"))
	}
	s.SetStartTimestamp(tsm(mode, time.Duration(i)*time.Millisecond+time.Duration(i)*333))
	s.SetEndTimestamp(tsm(mode, time.Duration(i)*time.Millisecond+1234567))
	if i == 4 { // a clock skewed span: duration_ns is negative, not clamped
		s.SetEndTimestamp(tsm(mode, time.Duration(i)*time.Millisecond-1))
	}
	a := s.Attributes()
	a.PutStr("http.request.method", "POST")
	a.PutInt("http.response.status_code", int64(200+i%5*100))
	if i == 2 {
		a.PutStr("big", big)
	}
	fillAttrs(a, mode, i)
	s.SetDroppedAttributesCount(uint32(i))
	s.SetDroppedEventsCount(2)
	s.SetDroppedLinksCount(3)
	for e := range i % 3 {
		ev := s.Events().AppendEmpty()
		ev.SetName(fmt.Sprintf("event-%d", e))
		if e == 1 {
			ev.SetName(badUTF8(mode, "event"))
		}
		ev.SetTimestamp(tsm(mode, time.Duration(i)*time.Millisecond+time.Duration(e)*1001))
		ev.Attributes().PutInt("attempt", int64(e))
		ev.Attributes().PutEmptyBytes("raw").FromRaw([]byte{0x80})
		ev.SetDroppedAttributesCount(1)
	}
	if i%2 == 1 {
		l := s.Links().AppendEmpty()
		l.SetTraceID(traceID(i + 1000))
		l.SetSpanID(spanID(i + 1000))
		l.TraceState().FromRaw("k=v")
		l.SetFlags(1)
		l.Attributes().PutStr("link.kind", "follows")
		l.Attributes().PutDouble("w", 0.5)
		l.SetDroppedAttributesCount(4)
		s.Links().AppendEmpty() // a link with nothing set
	}
}

// Logs returns 4*recordsPerScope log records in two resources with two
// scopes each: bodies of every type (a 1 MiB string among them), every
// severity number, severity texts, trace context on every other record,
// records with only an observed time, and on every fourth record (i%4 == 1)
// an event name: those belong in the events table.
func Logs(mode Mode, recordsPerScope int) plog.Logs {
	ld := plog.NewLogs()
	n := 0
	for r := range 2 {
		rl := ld.ResourceLogs().AppendEmpty()
		rl.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
		fillResource(rl.Resource(), mode, r)
		for sc := range 2 {
			sl := rl.ScopeLogs().AppendEmpty()
			sl.SetSchemaUrl(fmt.Sprintf("https://example.com/scope/%d", sc))
			fillScope(sl.Scope(), mode, r*2+sc)
			for range recordsPerScope {
				fillLog(sl.LogRecords().AppendEmpty(), mode, n)
				n++
			}
		}
	}
	return ld
}

func fillLog(lr plog.LogRecord, mode Mode, i int) {
	lr.SetObservedTimestamp(tsm(mode, time.Duration(i)*time.Millisecond+5))
	if i%11 != 5 { // some records carry only the observed time
		lr.SetTimestamp(tsm(mode, time.Duration(i)*time.Millisecond+999))
	} else if mode == ReadBack {
		lr.SetTimestamp(lr.ObservedTimestamp())
	}
	if i%2 == 0 {
		lr.SetTraceID(traceID(i))
		lr.SetSpanID(spanID(i))
	}
	lr.SetFlags(plog.LogRecordFlags(i % 2))
	lr.SetSeverityNumber(plog.SeverityNumber(i % 25))
	if i%3 == 0 {
		lr.SetSeverityText("Warning")
	}
	if i == 3 {
		lr.SetSeverityText(badUTF8(mode, "sev"))
	}
	if i%4 == 1 {
		lr.SetEventName(fmt.Sprintf("campaign.event.%d", i%3))
	}
	if i == 5 {
		lr.SetEventName(badUTF8(mode, "campaign.event."))
	}
	fillBody(lr.Body(), mode, i)
	a := lr.Attributes()
	a.PutStr("http.method", "GET")
	a.PutStr("http.status_code", "404")
	fillAttrs(a, mode, i)
	lr.SetDroppedAttributesCount(uint32(i % 4))
}

func fillBody(b pcommon.Value, mode Mode, i int) {
	switch i % 9 {
	case 0:
		b.SetStr(fmt.Sprintf("request %d served", i))
		if i == 9 {
			b.SetStr(big)
		}
	case 1:
		b.SetInt(int64(-i))
	case 2:
		b.SetDouble(math.Inf(-1))
	case 3:
		b.SetBool(true)
	case 4:
		b.SetEmptyBytes().FromRaw([]byte{0xc3, 0x28, byte(i)})
	case 5:
		fillAttrs(b.SetEmptyMap(), mode, i)
	case 6:
		s := b.SetEmptySlice()
		s.AppendEmpty().SetStr("x")
		s.AppendEmpty().SetEmptyMap().PutBool("ok", false)
	case 7:
		b.SetStr(badUTF8(mode, "body"))
	default: // empty body
	}
}

// Metrics returns, in two resources, 10 metrics of pointsPerMetric points
// each: a gauge (double, int, -0, NaN and valueless points, metadata of
// every type), sums of both temporalities monotonic and not, histograms and
// exponential histograms of both temporalities (some points without sum,
// min and max), and a summary; exemplars with int and double values.
func Metrics(mode Mode, pointsPerMetric int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	for r := range 2 {
		rm := md.ResourceMetrics().AppendEmpty()
		rm.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
		fillResource(rm.Resource(), mode, r)
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.SetSchemaUrl("https://example.com/scope")
		fillScope(sm.Scope(), mode, r)
		addMetrics(sm.Metrics(), mode, pointsPerMetric, r)
	}
	return md
}

func addMetrics(ms pmetric.MetricSlice, mode Mode, n, seed int) {
	newMetric := func(name, unit string) pmetric.Metric {
		m := ms.AppendEmpty()
		m.SetName(fmt.Sprintf("%s.%d", name, seed))
		m.SetDescription("what " + name + " measures")
		if name == "rpc.duration" {
			m.SetDescription(badUTF8(mode, "what rpc.duration measures"))
		}
		m.SetUnit(unit)
		m.Metadata().PutStr("origin", "test")
		m.Metadata().PutInt("version", 2)
		return m
	}
	gm := newMetric("cpu.usage", "%")
	fillAttrs(gm.Metadata(), mode, seed)
	g := gm.SetEmptyGauge()
	for i := range n {
		dp := g.DataPoints().AppendEmpty()
		fillPoint(dp, mode, i)
		switch {
		case i == 0:
			dp.SetDoubleValue(math.Copysign(0, -1))
		case i == 2:
			dp.SetDoubleValue(math.NaN())
		case i%4 == 3: // no value at all: value and value_int are null
		case i%2 == 1:
			dp.SetIntValue(int64(i))
		default:
			dp.SetDoubleValue(float64(i) * 1.5)
		}
	}
	for _, temporality := range []pmetric.AggregationTemporality{pmetric.AggregationTemporalityDelta, pmetric.AggregationTemporalityCumulative} {
		for _, mono := range []bool{true, false} {
			s := newMetric(fmt.Sprintf("requests.%d.%t", temporality, mono), "1").SetEmptySum()
			s.SetAggregationTemporality(temporality)
			s.SetIsMonotonic(mono)
			for i := range n {
				dp := s.DataPoints().AppendEmpty()
				fillPoint(dp, mode, i)
				dp.SetIntValue(math.MaxInt64 - int64(i))
				addExemplars(dp.Exemplars(), mode, i)
			}
		}
		h := newMetric(fmt.Sprintf("latency.%d", temporality), "ms").SetEmptyHistogram()
		h.SetAggregationTemporality(temporality)
		for i := range n {
			dp := h.DataPoints().AppendEmpty()
			fillPoint(dp, mode, i)
			dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(i%2 == 0))
			dp.SetCount(uint64(i * 10))
			if i%2 == 0 { // the others leave sum, min and max unset
				dp.SetSum(float64(i) * 12.5)
				dp.SetMin(0.5)
				dp.SetMax(99)
			}
			dp.BucketCounts().FromRaw([]uint64{1, 2, uint64(i)})
			dp.ExplicitBounds().FromRaw([]float64{10, 100})
			addExemplars(dp.Exemplars(), mode, i)
		}
		e := newMetric(fmt.Sprintf("latency.exp.%d", temporality), "ms").SetEmptyExponentialHistogram()
		e.SetAggregationTemporality(temporality)
		for i := range n {
			dp := e.DataPoints().AppendEmpty()
			fillPoint(dp, mode, i)
			dp.SetCount(uint64(i + 5))
			if i%3 != 1 { // the others leave sum, min and max unset
				dp.SetSum(3.25)
				dp.SetMin(-1)
				dp.SetMax(8)
			}
			dp.SetScale(int32(i%5) - 2)
			dp.SetZeroCount(uint64(i))
			dp.SetZeroThreshold(1e-9)
			dp.Positive().SetOffset(int32(i) - 3)
			dp.Positive().BucketCounts().FromRaw([]uint64{4, 5, 6})
			dp.Negative().SetOffset(-int32(i))
			dp.Negative().BucketCounts().FromRaw([]uint64{1})
			addExemplars(dp.Exemplars(), mode, i)
		}
	}
	su := newMetric("rpc.duration", "s").SetEmptySummary()
	for i := range n {
		dp := su.DataPoints().AppendEmpty()
		fillPoint(dp, mode, i)
		dp.SetCount(uint64(i))
		dp.SetSum(float64(i) / 3)
		for _, q := range []float64{0, 0.5, 0.99, 1} {
			qv := dp.QuantileValues().AppendEmpty()
			qv.SetQuantile(q)
			qv.SetValue(q * float64(i))
		}
	}
}

type point interface {
	SetTimestamp(pcommon.Timestamp)
	SetStartTimestamp(pcommon.Timestamp)
	Attributes() pcommon.Map
}

func fillPoint(p point, mode Mode, i int) {
	p.SetStartTimestamp(tsm(mode, -time.Hour+789))
	p.SetTimestamp(tsm(mode, time.Duration(i)*time.Second+321))
	p.Attributes().PutStr("route", fmt.Sprintf("/r/%d", i%3))
	if i == 0 {
		fillAttrs(p.Attributes(), mode, i)
	}
}

func addExemplars(exs pmetric.ExemplarSlice, mode Mode, i int) {
	if i%2 == 1 {
		return
	}
	e := exs.AppendEmpty()
	e.SetTimestamp(tsm(mode, time.Duration(i)*time.Second+1500))
	e.SetDoubleValue(0.25)
	e.SetTraceID(traceID(i))
	e.SetSpanID(spanID(i))
	e.FilteredAttributes().PutStr("user", badUTF8(mode, "u"))
	e2 := exs.AppendEmpty()
	e2.SetTimestamp(tsm(mode, time.Duration(i)*time.Second-1))
	e2.SetIntValue(-7)
}
