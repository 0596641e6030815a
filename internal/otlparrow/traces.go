package otlparrow

import (
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// TracesConverter turns traces into record batches of the traces table.
type TracesConverter struct {
	converter
	t   *table
	res *resourceCols

	time, endTime                                  *numCol[int64]
	duration, flags, dropped, droppedEv, droppedLn *numCol[int64]
	traceID, spanID, parentID, traceState          *strCol
	name, kind, status, statusMsg, httpMethod      *strCol
	statusCode                                     *numCol[int64]
	isError                                        *boolCol
	attrs                                          attrCols

	events, links *structListCol
	event, link   *array.StructBuilder
	ev            spanEventCols
	ln            spanLinkCols
}

// spanEventCols are the fields of the events list's struct.
type spanEventCols struct {
	time    *array.TimestampBuilder
	name    *array.StringBuilder
	attrs   nestedAttrCols
	dropped *array.Int64Builder
}

// spanLinkCols are the fields of the links list's struct.
type spanLinkCols struct {
	traceID, spanID, state *array.StringBuilder
	flags, dropped         *array.Int64Builder
	attrs                  nestedAttrCols
}

// NewTracesConverter returns a converter that cuts batches of batchSize
// rows (at least 1).
func NewTracesConverter(mem memory.Allocator, batchSize int) *TracesConverter {
	t := newTable(mem, schema.Traces, batchSize)
	c := &TracesConverter{t: t}
	c.res = newResourceCols(&c.converter, t)
	c.time, c.endTime = t.ts("time"), t.ts("end_time")
	c.duration, c.flags = t.i64("duration_ns"), t.i64("flags")
	c.dropped, c.droppedEv, c.droppedLn = t.i64("dropped_attributes_count"), t.i64("dropped_events_count"), t.i64("dropped_links_count")
	c.traceID, c.spanID, c.parentID, c.traceState = t.str("trace_id"), t.str("span_id"), t.str("parent_span_id"), t.str("trace_state")
	c.name, c.kind, c.status, c.statusMsg = t.str("operation_name"), t.str("span_kind"), t.str("span_status"), t.str("span_status_message")
	c.httpMethod, c.statusCode, c.isError = t.str("http_method"), t.i64("status_code"), t.boolean("error")
	c.attrs = t.attrs("attributes")

	c.events = t.structList("events")
	f := newStructFields(c.events)
	c.event = f.s
	c.ev = spanEventCols{time: f.ts("time"), name: f.str("name"), attrs: f.attrs("attributes"), dropped: f.i64("dropped_attributes_count")}

	c.links = t.structList("links")
	f = newStructFields(c.links)
	c.link = f.s
	c.ln = spanLinkCols{
		traceID: f.str("trace_id"), spanID: f.str("span_id"), state: f.str("trace_state"), flags: f.i64("flags"),
		attrs: f.attrs("attributes"), dropped: f.i64("dropped_attributes_count"),
	}
	return c
}

// Release frees the builders.
func (c *TracesConverter) Release() { c.t.release() }

var (
	spanKinds    = [...]string{"unspecified", "internal", "server", "client", "producer", "consumer"}
	spanStatuses = [...]string{"unset", "ok", "error"}
)

// enumName names an OTLP enum value; a value newer than this code reads as
// the zero value's name.
func enumName(names []string, i int) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return names[0]
}

// Convert appends every span of td, emitting a batch every batchSize rows
// and the remainder at the end. After an error the converter holds no rows
// and can be reused.
func (c *TracesConverter) Convert(td ptrace.Traces, emit Emit) error {
	c.t.start(td.SpanCount())
	if err := c.convert(td, emit); err != nil {
		c.t.discard()
		return err
	}
	return nil
}

func (c *TracesConverter) convert(td ptrace.Traces, emit Emit) error {
	for _, rs := range td.ResourceSpans().All() {
		c.setResource(rs.Resource(), rs.SchemaUrl())
		for _, ss := range rs.ScopeSpans().All() {
			c.setScope(ss.Scope(), ss.SchemaUrl())
			for _, s := range ss.Spans().All() {
				c.appendSpan(s)
				if err := c.t.rowDone(emit); err != nil {
					return err
				}
			}
		}
	}
	return c.t.flush(emit)
}

func (c *TracesConverter) appendSpan(s ptrace.Span) {
	start, end := s.StartTimestamp(), s.EndTimestamp()
	appendTime(c.time, start)
	appendTime(c.endTime, end)
	c.duration.append(int64(end) - int64(start)) // negative when end < start: kept, not hidden
	appendTraceID(c.traceID, s.TraceID())
	appendSpanID(c.spanID, s.SpanID())
	appendSpanID(c.parentID, s.ParentSpanID())
	c.traceState.appendValidUTF8(s.TraceState().AsRaw())
	c.flags.append(int64(s.Flags()))
	c.name.appendValidUTF8(s.Name())
	c.kind.appendString(enumName(spanKinds[:], int(s.Kind())))
	status := s.Status()
	c.status.appendString(enumName(spanStatuses[:], int(status.Code())))
	c.statusMsg.appendValidUTF8(status.Message())
	c.isError.append(status.Code() == ptrace.StatusCodeError)
	c.appendRecordAttrs(s.Attributes(), c.attrs, c.httpMethod, c.statusCode)
	c.appendResource(c.res)
	c.dropped.append(int64(s.DroppedAttributesCount()))
	c.appendEvents(s.Events())
	c.droppedEv.append(int64(s.DroppedEventsCount()))
	c.appendLinks(s.Links())
	c.droppedLn.append(int64(s.DroppedLinksCount()))
}

func (c *TracesConverter) appendEvents(evs ptrace.SpanEventSlice) {
	for _, ev := range evs.All() {
		c.event.Append(true)
		appendNestedTime(c.ev.time, ev.Timestamp())
		c.appendStr(c.ev.name, ev.Name())
		c.nested.reset(ev.Attributes())
		c.nested.appendToNested(c.ev.attrs)
		c.ev.dropped.Append(int64(ev.DroppedAttributesCount()))
	}
	c.events.end()
}

func (c *TracesConverter) appendLinks(links ptrace.SpanLinkSlice) {
	for _, l := range links.All() {
		c.link.Append(true)
		c.appendTraceID(c.ln.traceID, l.TraceID())
		c.appendSpanID(c.ln.spanID, l.SpanID())
		c.appendStr(c.ln.state, l.TraceState().AsRaw())
		c.ln.flags.Append(int64(l.Flags()))
		c.nested.reset(l.Attributes())
		c.nested.appendToNested(c.ln.attrs)
		c.ln.dropped.Append(int64(l.DroppedAttributesCount()))
	}
	c.links.end()
}
