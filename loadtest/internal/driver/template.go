package driver

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// IDAttribute is the item attribute that makes every sent span, log record
// and metric point unique across a run: 16 hex digits, patched into the
// pre-marshalled request before each send. Unique content matters twice:
// the loss check counts distinct ids, and the sidecar drops batches whose
// content it has already stored (a retried copy), so resending identical
// requests would look like loss.
const IDAttribute = "loadtest.id"

// Signal is one OTLP signal the driver sends.
type Signal string

// Signals.
const (
	Traces  Signal = "traces"
	Logs    Signal = "logs"
	Metrics Signal = "metrics"
)

// Table is the sidecar table the signal's items land in.
func (s Signal) Table() string { return string(s) }

// template is one marshalled OTLP export request of n items whose id
// attribute values sit at known offsets.
type template struct {
	signal  Signal
	items   int
	body    []byte
	offsets []int // of each item's 16-digit id value
	// traceIDs are the offsets of every span's trace id: each send writes
	// its own number into their first 8 bytes, so traces are new on every
	// send, as a trace-by-id lookup expects.
	traceIDs []int
	// spanIDs, when the plan asks for random ids, are the offsets of each
	// span's id and of its children's parent ids, one group per span.
	spanIDs [][]int
	// randomIDs: each send writes random trace ids (one per client and
	// server pair) and random span ids, as SDKs make them, instead of its
	// number into the trace ids; span ids otherwise repeat from one send
	// to the next, which zstd compresses far better than real ids.
	randomIDs bool
	// times are the timestamp fields, set on each send to the send's
	// time plus their offset in the template, so rows spread over the run
	// as real telemetry does.
	times  []timeField
	method string
}

type timeField struct {
	offset int
	delta  time.Duration
}

const idWidth = 16

// newTemplate builds a request of n items in the shapes telemetrygen sends
// (same names, attributes and kinds), plus the id attribute.
func newTemplate(signal Signal, n int, now time.Time, randomIDs bool) (*template, error) {
	placeholders := make([]string, n)
	for i := range placeholders {
		// Random placeholders are what the offsets are found by; a 64-bit
		// collision with other request bytes is not a practical concern,
		// and findOffsets checks for it anyway.
		placeholders[i] = fmt.Sprintf("%016x", rand.Uint64())
	}
	var (
		body   []byte
		err    error
		method string
	)
	switch signal {
	case Traces:
		body, err = ptraceotlp.NewExportRequestFromTraces(traceShape(placeholders, now)).MarshalProto()
		method = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
	case Logs:
		body, err = plogotlp.NewExportRequestFromLogs(logShape(placeholders, now)).MarshalProto()
		method = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
	case Metrics:
		body, err = pmetricotlp.NewExportRequestFromMetrics(metricShape(placeholders, now)).MarshalProto()
		method = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"
	default:
		return nil, fmt.Errorf("unknown signal %q", signal)
	}
	if err != nil {
		return nil, fmt.Errorf("marshal %s request: %w", signal, err)
	}
	offsets, err := findOffsets(body, placeholders)
	if err != nil {
		return nil, err
	}
	t := &template{signal: signal, items: n, body: body, offsets: offsets, method: method}
	if signal == Traces {
		t.traceIDs = traceIDOffsets(body, n)
		if randomIDs {
			t.spanIDs, t.randomIDs = spanIDOffsets(body), true
		}
	}
	t.times = timeOffsets(signal, body, n, now)
	return t, nil
}

// Protobuf tags of the fixed64 timestamp fields in the shapes above:
// Span.start_time_unix_nano (7) and end_time_unix_nano (8),
// LogRecord.time_unix_nano (1) and observed_time_unix_nano (11),
// NumberDataPoint.time_unix_nano (3).
var timeTags = map[Signal][]struct {
	tag   byte
	extra time.Duration // end = start + the span's length
}{
	Traces:  {{0x39, 0}, {0x41, spanLength}},
	Logs:    {{0x09, 0}, {0x59, 0}},
	Metrics: {{0x19, 0}},
}

const spanLength = 123 * time.Microsecond

// timeOffsets finds each item's timestamp fields by tag and value: item i
// was built at now + i µs.
func timeOffsets(signal Signal, body []byte, n int, now time.Time) []timeField {
	var out []timeField
	var want [9]byte
	for i := 0; i < n; i++ {
		delta := time.Duration(i) * time.Microsecond
		for _, f := range timeTags[signal] {
			want[0] = f.tag
			binary.LittleEndian.PutUint64(want[1:], uint64(now.Add(delta+f.extra).UnixNano()))
			if at := bytes.Index(body, want[:]); at >= 0 {
				out = append(out, timeField{offset: at + 1, delta: delta + f.extra})
			}
		}
	}
	return out
}

// traceIDOffsets finds the trace id fields of a traces request: the
// protobuf tag of Span.trace_id (field 1, bytes, length 16).
func traceIDOffsets(body []byte, spans int) []int {
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(body); err != nil {
		return nil
	}
	var out []int
	ss := req.Traces().ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	seen := map[pcommon.TraceID]bool{}
	for i := range ss.Len() {
		id := ss.At(i).TraceID()
		if seen[id] {
			continue
		}
		seen[id] = true
		for from := 0; ; {
			at := bytes.Index(body[from:], append([]byte{0x0a, 0x10}, id[:]...))
			if at < 0 {
				break
			}
			out = append(out, from+at+2)
			from += at + 2 + len(id)
		}
	}
	return out
}

func findOffsets(body []byte, placeholders []string) ([]int, error) {
	offsets := make([]int, len(placeholders))
	for i, p := range placeholders {
		at := bytes.Index(body, []byte(p))
		if at < 0 || bytes.LastIndex(body, []byte(p)) != at {
			return nil, fmt.Errorf("id placeholder %d not found exactly once in the request", i)
		}
		offsets[i] = at
	}
	return offsets, nil
}

// fill writes the request with ids first, first+1, ... and timestamps from
// at into dst.
func (t *template) fill(dst []byte, first uint64, at time.Time) []byte {
	dst = append(dst[:0], t.body...)
	for i, off := range t.offsets {
		putHex(dst[off:off+idWidth], first+uint64(i))
	}
	if t.randomIDs {
		t.fillRandomIDs(dst)
	} else {
		for _, off := range t.traceIDs {
			binary.BigEndian.PutUint64(dst[off:off+8], first)
		}
	}
	base := at.UnixNano()
	for _, f := range t.times {
		binary.LittleEndian.PutUint64(dst[f.offset:f.offset+8], uint64(base+int64(f.delta)))
	}
	return dst
}

func putHex(dst []byte, v uint64) {
	const digits = "0123456789abcdef"
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	for i, c := range b {
		dst[2*i] = digits[c>>4]
		dst[2*i+1] = digits[c&0xf]
	}
}

func resource(r pcommon.Resource) {
	r.Attributes().PutStr("service.name", "telemetrygen")
}

// traceShape mirrors telemetrygen's traces: a client span "lets-go" and a
// server child "okey-dokey-0" per trace, 123µs long.
func traceShape(ids []string, now time.Time) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	resource(rs.Resource())
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("telemetrygen")
	spans := ss.Spans()
	spans.EnsureCapacity(len(ids))
	var traceID pcommon.TraceID
	var parent pcommon.SpanID
	for i, id := range ids {
		sp := spans.AppendEmpty()
		var spanID pcommon.SpanID
		binary.BigEndian.PutUint64(spanID[:], rand.Uint64())
		sp.SetSpanID(spanID)
		start := now.Add(time.Duration(i) * time.Microsecond)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(spanLength)))
		attrs := sp.Attributes()
		attrs.PutStr("network.peer.address", "1.2.3.4")
		if i%2 == 0 {
			binary.BigEndian.PutUint64(traceID[:8], rand.Uint64())
			binary.BigEndian.PutUint64(traceID[8:], rand.Uint64())
			parent = spanID
			sp.SetName("lets-go")
			sp.SetKind(ptrace.SpanKindClient)
			attrs.PutStr("service.peer.name", "telemetrygen-server")
		} else {
			sp.SetParentSpanID(parent)
			sp.SetName("okey-dokey-0")
			sp.SetKind(ptrace.SpanKindServer)
			attrs.PutStr("service.peer.name", "telemetrygen-client")
		}
		sp.SetTraceID(traceID)
		attrs.PutStr(IDAttribute, id)
	}
	return td
}

// logShape mirrors telemetrygen's logs: "the message" at Info with app=server.
func logShape(ids []string, now time.Time) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	resource(rl.Resource())
	records := rl.ScopeLogs().AppendEmpty().LogRecords()
	records.EnsureCapacity(len(ids))
	for i, id := range ids {
		lr := records.AppendEmpty()
		ts := pcommon.NewTimestampFromTime(now.Add(time.Duration(i) * time.Microsecond))
		lr.SetTimestamp(ts)
		lr.SetObservedTimestamp(ts)
		lr.SetSeverityNumber(plog.SeverityNumberInfo)
		lr.SetSeverityText("Info")
		lr.Body().SetStr("the message")
		lr.Attributes().PutStr("app", "server")
		lr.Attributes().PutStr(IDAttribute, id)
		lr.SetDroppedAttributesCount(1)
	}
	return ld
}

// metricShape mirrors telemetrygen's default metric: an int gauge "gen",
// one point per item.
func metricShape(ids []string, now time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	resource(rm.Resource())
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("gen")
	points := m.SetEmptyGauge().DataPoints()
	points.EnsureCapacity(len(ids))
	for i, id := range ids {
		dp := points.AppendEmpty()
		dp.SetTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Duration(i) * time.Microsecond)))
		dp.SetIntValue(int64(i))
		dp.Attributes().PutStr("worker", strconv.Itoa(i%4))
		dp.Attributes().PutStr(IDAttribute, id)
	}
	return md
}

// fillRandomIDs writes random ids into dst: traceIDOffsets lists a trace
// id's fields together, and every trace is a pair of spans.
func (t *template) fillRandomIDs(dst []byte) {
	for i := 0; i < len(t.traceIDs); i += 2 {
		hi, lo := rand.Uint64(), rand.Uint64()
		for _, off := range t.traceIDs[i:min(i+2, len(t.traceIDs))] {
			binary.BigEndian.PutUint64(dst[off:], hi)
			binary.BigEndian.PutUint64(dst[off+8:], lo)
		}
	}
	for _, group := range t.spanIDs {
		id := rand.Uint64()
		for _, off := range group {
			binary.BigEndian.PutUint64(dst[off:], id)
		}
	}
}

// spanIDOffsets finds, for each span of a traces request, its span id
// field (Span.span_id, field 2) and the parent id fields that name it
// (Span.parent_span_id, field 4), both bytes of length 8.
func spanIDOffsets(body []byte) [][]int {
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(body); err != nil {
		return nil
	}
	spans := req.Traces().ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	out := make([][]int, 0, spans.Len())
	for i := range spans.Len() {
		id := spans.At(i).SpanID()
		var group []int
		for _, tag := range []byte{0x12, 0x22} {
			field := append([]byte{tag, 0x08}, id[:]...)
			for from := 0; ; {
				at := bytes.Index(body[from:], field)
				if at < 0 {
					break
				}
				group = append(group, from+at+2)
				from += at + len(field)
			}
		}
		out = append(out, group)
	}
	return out
}
