package otlparrow

import (
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
	res *resourceCols

	time, observed                     *numCol[int64]
	traceID, spanID                    *strCol
	flags, sevNum, dropped, statusCode *numCol[int64]
	sevText, level, eventType, message *strCol
	bodyType, bodyJSON, httpMethod     *strCol
	attrs                              attrCols
}

func newLogCols(c *converter, mem memory.Allocator, st *schema.Table, batchSize int) *logCols {
	t := newTable(mem, st, batchSize)
	return &logCols{
		t: t, res: newResourceCols(c, t),
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
// (at least 1) per table.
func NewLogsConverter(mem memory.Allocator, batchSize int) *LogsConverter {
	c := &LogsConverter{}
	c.logs = newLogCols(&c.converter, mem, schema.Logs, batchSize)
	c.events = newLogCols(&c.converter, mem, schema.Events, batchSize)
	return c
}

// Release frees the builders.
func (c *LogsConverter) Release() {
	c.logs.t.release()
	c.events.t.release()
}

// Convert appends every log record of ld to the logs or the events table,
// emitting a table's batch every batchSize rows of it and the remainders
// at the end (logs first). After an error the converter holds no rows and
// can be reused.
func (c *LogsConverter) Convert(ld plog.Logs, emit Emit) error {
	events := countEvents(ld)
	c.logs.t.start(ld.LogRecordCount() - events)
	c.events.t.start(events)
	if err := c.convert(ld, emit); err != nil {
		c.logs.t.discard()
		c.events.t.discard()
		return err
	}
	return nil
}

// countEvents counts the records bound for the events table, so that each
// table reserves for its own rows.
func countEvents(ld plog.Logs) int {
	n := 0
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				if lr.EventName() != "" {
					n++
				}
			}
		}
	}
	return n
}

func (c *LogsConverter) convert(ld plog.Logs, emit Emit) error {
	for _, rl := range ld.ResourceLogs().All() {
		c.setResource(rl.Resource(), rl.SchemaUrl())
		for _, sl := range rl.ScopeLogs().All() {
			c.setScope(sl.Scope(), sl.SchemaUrl())
			for _, lr := range sl.LogRecords().All() {
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

// Level returns the level column of a log record: the severity text as
// sent, else the name of the severity number's range, else "".
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
		ts = lr.ObservedTimestamp() // time partitions the row; the reverse direction sets Timestamp to it
	}
	appendTime(l.time, ts)
	appendTime(l.observed, lr.ObservedTimestamp())
	appendTraceID(l.traceID, lr.TraceID())
	appendSpanID(l.spanID, lr.SpanID())
	l.flags.append(int64(lr.Flags()))
	l.sevNum.append(int64(lr.SeverityNumber()))
	l.sevText.appendValidUTF8(lr.SeverityText())
	l.level.appendValidUTF8(Level(lr.SeverityText(), lr.SeverityNumber()))
	l.eventType.appendValidUTF8(lr.EventName())
	appendBody(l, lr.Body())
	c.appendRecordAttrs(lr.Attributes(), l.attrs, l.httpMethod, l.statusCode)
	c.appendResource(l.res)
	l.dropped.append(int64(lr.DroppedAttributesCount()))
}

func appendBody(l *logCols, body pcommon.Value) {
	l.message.data = schema.AppendText(l.message.data, body)
	l.message.end()
	l.bodyType.appendString(schema.ValueTypeName(body.Type()))
	switch body.Type() {
	case pcommon.ValueTypeMap, pcommon.ValueTypeSlice:
		l.bodyJSON.data = schema.AppendOTLPJSON(l.bodyJSON.data, body)
		l.bodyJSON.end()
	default:
		l.bodyJSON.appendNull()
	}
}
