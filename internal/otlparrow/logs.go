package otlparrow

import (
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// LogsConverter turns logs into record batches of the logs table, and log
// records that carry an event name into the events table.
type LogsConverter struct {
	converter
	logs, events *logCols
}

// logCols are the builders of one table with the log record columns.
type logCols struct {
	t   *table
	res resourceCols

	time, observed                     *array.TimestampBuilder
	traceID, spanID                    *array.StringBuilder
	flags, sevNum, dropped, statusCode *array.Int64Builder
	sevText, level, eventType, message *array.StringBuilder
	bodyType, bodyJSON, httpMethod     *array.StringBuilder
	attrs                              attrCols
}

func newLogCols(mem memory.Allocator, st *schema.Table, batchSize int) *logCols {
	t := newTable(mem, st, batchSize)
	return &logCols{
		t: t, res: newResourceCols(t),
		time: t.ts("time"), observed: t.ts("observed_time"),
		traceID: t.str("trace_id"), spanID: t.str("span_id"),
		flags: t.i64("flags"), sevNum: t.i64("severity_number"), dropped: t.i64("dropped_attributes_count"),
		statusCode: t.i64("status_code"),
		sevText:    t.str("severity_text"), level: t.str("level"), eventType: t.str("event_type"), message: t.str("message"),
		bodyType: t.str("body_type"), bodyJSON: t.str("body_json"), httpMethod: t.str("http_method"),
		attrs: t.attrs("attributes"),
	}
}

// NewLogsConverter returns a converter that cuts batches of batchSize rows
// per table.
func NewLogsConverter(mem memory.Allocator, batchSize int) *LogsConverter {
	return &LogsConverter{
		converter: converter{mem: mem, batchSize: batchSize},
		logs:      newLogCols(mem, schema.Logs, batchSize),
		events:    newLogCols(mem, schema.Events, batchSize),
	}
}

// Release frees the builders.
func (c *LogsConverter) Release() {
	c.logs.t.release()
	c.events.t.release()
}

// Convert appends every log record of ld.
func (c *LogsConverter) Convert(ld plog.Logs, emit Emit) error {
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		rl := rls.At(i)
		c.setResource(rl.Resource(), rl.SchemaUrl())
		sls := rl.ScopeLogs()
		for j := range sls.Len() {
			sl := sls.At(j)
			c.setScope(sl.Scope(), sl.SchemaUrl())
			lrs := sl.LogRecords()
			for k := range lrs.Len() {
				lr := lrs.At(k)
				cols := c.logs
				if lr.EventName() != "" {
					cols = c.events
				}
				c.appendLog(cols, lr)
				if err := cols.t.rowDone(emit); err != nil {
					return err
				}
			}
		}
	}
	if err := c.logs.t.flush(emit); err != nil {
		return err
	}
	return c.events.t.flush(emit)
}

// levels names severity numbers by range of four, as the OpenTelemetry log
// data model groups them.
var levels = [...]string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"}

// Level returns the level column of a log record.
func Level(text string, num plog.SeverityNumber) string {
	if text != "" {
		return text
	}
	if num < 1 || num > 24 {
		return ""
	}
	return levels[(num-1)/4]
}

func (c *LogsConverter) appendLog(l *logCols, lr plog.LogRecord) {
	ts := lr.Timestamp()
	if ts == 0 {
		ts = lr.ObservedTimestamp()
	}
	appendTime(l.time, ts)
	appendTime(l.observed, lr.ObservedTimestamp())
	c.appendTraceID(l.traceID, lr.TraceID())
	c.appendSpanID(l.spanID, lr.SpanID())
	l.flags.Append(int64(lr.Flags()))
	l.sevNum.Append(int64(lr.SeverityNumber()))
	c.appendStr(l.sevText, lr.SeverityText())
	c.appendStr(l.level, Level(lr.SeverityText(), lr.SeverityNumber()))
	c.appendStr(l.eventType, lr.EventName())
	c.appendBody(l, lr.Body())

	c.rec.reset(lr.Attributes())
	m, ok := c.rec.text(schema.HTTPMethodKeys)
	appendOptBytes(l.httpMethod, m, ok)
	if n, ok := promotedInt(&c.rec, schema.HTTPStatusCodeKeys); ok {
		l.statusCode.Append(n)
	} else {
		l.statusCode.AppendNull()
	}
	c.appendResource(l.res)
	c.rec.appendTo(l.attrs)
	l.dropped.Append(int64(lr.DroppedAttributesCount()))
}

func (c *LogsConverter) appendBody(l *logCols, body pcommon.Value) {
	c.scratch = schema.AppendText(c.scratch[:0], body)
	l.message.BinaryBuilder.Append(c.scratch)
	l.bodyType.Append(schema.ValueTypeName(body.Type()))
	switch body.Type() {
	case pcommon.ValueTypeMap, pcommon.ValueTypeSlice:
		c.scratch = schema.AppendOTLPJSON(c.scratch[:0], body)
		l.bodyJSON.BinaryBuilder.Append(c.scratch)
	default:
		l.bodyJSON.AppendNull()
	}
}
