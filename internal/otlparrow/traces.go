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
	res resourceCols

	time, endTime                                  *array.TimestampBuilder
	duration, flags, dropped, droppedEv, droppedLn *array.Int64Builder
	traceID, spanID, parentID, traceState          *array.StringBuilder
	name, kind, status, statusMsg, httpMethod      *array.StringBuilder
	statusCode                                     *array.Int64Builder
	isError                                        *array.BooleanBuilder
	attrs                                          attrCols

	events, links *array.ListBuilder
	event, link   *array.StructBuilder
	evTime        *array.TimestampBuilder
	evName        *array.StringBuilder
	evAttrs       attrCols
	evDropped     *array.Int64Builder
	lnTraceID     *array.StringBuilder
	lnSpanID      *array.StringBuilder
	lnState       *array.StringBuilder
	lnFlags       *array.Int64Builder
	lnAttrs       attrCols
	lnDropped     *array.Int64Builder
}

// NewTracesConverter returns a converter that cuts batches of batchSize rows.
func NewTracesConverter(mem memory.Allocator, batchSize int) *TracesConverter {
	t := newTable(mem, schema.Traces, batchSize)
	c := &TracesConverter{converter: converter{mem: mem, batchSize: batchSize}, t: t, res: newResourceCols(t)}
	c.time, c.endTime = t.ts("time"), t.ts("end_time")
	c.duration, c.flags = t.i64("duration_ns"), t.i64("flags")
	c.dropped, c.droppedEv, c.droppedLn = t.i64("dropped_attributes_count"), t.i64("dropped_events_count"), t.i64("dropped_links_count")
	c.traceID, c.spanID, c.parentID, c.traceState = t.str("trace_id"), t.str("span_id"), t.str("parent_span_id"), t.str("trace_state")
	c.name, c.kind, c.status, c.statusMsg = t.str("operation_name"), t.str("span_kind"), t.str("span_status"), t.str("span_status_message")
	c.httpMethod, c.statusCode, c.isError = t.str("http_method"), t.i64("status_code"), t.boolean("error")
	c.attrs = t.attrs("attributes")

	c.events = t.field("events").(*array.ListBuilder)
	c.event = c.events.ValueBuilder().(*array.StructBuilder)
	c.evTime = c.event.FieldBuilder(0).(*array.TimestampBuilder)
	c.evName = c.event.FieldBuilder(1).(*array.StringBuilder)
	c.evAttrs = newAttrCols(c.event.FieldBuilder(2).(*array.MapBuilder), c.event.FieldBuilder(3).(*array.MapBuilder))
	c.evDropped = c.event.FieldBuilder(4).(*array.Int64Builder)

	c.links = t.field("links").(*array.ListBuilder)
	c.link = c.links.ValueBuilder().(*array.StructBuilder)
	c.lnTraceID = c.link.FieldBuilder(0).(*array.StringBuilder)
	c.lnSpanID = c.link.FieldBuilder(1).(*array.StringBuilder)
	c.lnState = c.link.FieldBuilder(2).(*array.StringBuilder)
	c.lnFlags = c.link.FieldBuilder(3).(*array.Int64Builder)
	c.lnAttrs = newAttrCols(c.link.FieldBuilder(4).(*array.MapBuilder), c.link.FieldBuilder(5).(*array.MapBuilder))
	c.lnDropped = c.link.FieldBuilder(6).(*array.Int64Builder)
	return c
}

// Release frees the builders.
func (c *TracesConverter) Release() { c.t.release() }

var spanKinds = [...]string{"unspecified", "internal", "server", "client", "producer", "consumer"}
var spanStatuses = [...]string{"unset", "ok", "error"}

func enumName(names []string, i int) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return names[0]
}

// Convert appends every span of td, emitting a batch every batchSize rows
// and the remainder at the end.
func (c *TracesConverter) Convert(td ptrace.Traces, emit Emit) error {
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		c.setResource(rs.Resource(), rs.SchemaUrl())
		sss := rs.ScopeSpans()
		for j := range sss.Len() {
			ss := sss.At(j)
			c.setScope(ss.Scope(), ss.SchemaUrl())
			spans := ss.Spans()
			for k := range spans.Len() {
				c.appendSpan(spans.At(k))
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
	c.duration.Append(int64(end) - int64(start))
	c.appendTraceID(c.traceID, s.TraceID())
	c.appendSpanID(c.spanID, s.SpanID())
	c.appendSpanID(c.parentID, s.ParentSpanID())
	c.appendStr(c.traceState, s.TraceState().AsRaw())
	c.flags.Append(int64(s.Flags()))
	c.appendStr(c.name, s.Name())
	c.kind.Append(enumName(spanKinds[:], int(s.Kind())))
	code := int(s.Status().Code())
	c.status.Append(enumName(spanStatuses[:], code))
	c.appendStr(c.statusMsg, s.Status().Message())
	c.isError.Append(s.Status().Code() == ptrace.StatusCodeError)

	c.rec.reset(s.Attributes())
	m, ok := c.rec.text(schema.HTTPMethodKeys)
	appendOptBytes(c.httpMethod, m, ok)
	if n, ok := promotedInt(&c.rec, schema.HTTPStatusCodeKeys); ok {
		c.statusCode.Append(n)
	} else {
		c.statusCode.AppendNull()
	}
	c.appendResource(c.res)
	c.rec.appendTo(c.attrs)
	c.dropped.Append(int64(s.DroppedAttributesCount()))
	c.appendEvents(s.Events())
	c.droppedEv.Append(int64(s.DroppedEventsCount()))
	c.appendLinks(s.Links())
	c.droppedLn.Append(int64(s.DroppedLinksCount()))
}

func (c *TracesConverter) appendEvents(evs ptrace.SpanEventSlice) {
	c.events.Append(true)
	for i := range evs.Len() {
		ev := evs.At(i)
		c.event.Append(true)
		appendTime(c.evTime, ev.Timestamp())
		c.appendStr(c.evName, ev.Name())
		c.appendAttrs(c.evAttrs, ev.Attributes(), &c.nested)
		c.evDropped.Append(int64(ev.DroppedAttributesCount()))
	}
}

func (c *TracesConverter) appendLinks(links ptrace.SpanLinkSlice) {
	c.links.Append(true)
	for i := range links.Len() {
		l := links.At(i)
		c.link.Append(true)
		c.appendTraceID(c.lnTraceID, l.TraceID())
		c.appendSpanID(c.lnSpanID, l.SpanID())
		c.appendStr(c.lnState, l.TraceState().AsRaw())
		c.lnFlags.Append(int64(l.Flags()))
		c.appendAttrs(c.lnAttrs, l.Attributes(), &c.nested)
		c.lnDropped.Append(int64(l.DroppedAttributesCount()))
	}
}
