package otlparrow

import (
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// The functions below rebuild pdata from rows read back from Parquet.
// Consecutive rows with an equal resource share a Resource*, consecutive
// rows with an equal scope share a Scope*, and consecutive metric points
// with an equal metric identity share a Metric.

func sameResource(a, b *schema.Resource) bool {
	return a.ServiceName == b.ServiceName && equalPtr(a.Host, b.Host) && equalPtr(a.Environment, b.Environment) &&
		equalPtr(a.Region, b.Region) &&
		maps.Equal(a.ResourceAttributes, b.ResourceAttributes) &&
		maps.Equal(a.ResourceAttributeTypes, b.ResourceAttributeTypes) &&
		a.ResourceDroppedAttributesCount == b.ResourceDroppedAttributesCount &&
		a.ResourceSchemaURL == b.ResourceSchemaURL
}

func sameScope(a, b *schema.Resource) bool {
	return sameResource(a, b) && a.ScopeName == b.ScopeName && a.ScopeVersion == b.ScopeVersion &&
		maps.Equal(a.ScopeAttributes, b.ScopeAttributes) &&
		maps.Equal(a.ScopeAttributeTypes, b.ScopeAttributeTypes) &&
		a.ScopeDroppedAttributesCount == b.ScopeDroppedAttributesCount &&
		a.ScopeSchemaURL == b.ScopeSchemaURL
}

func equalPtr[T comparable](a, b *T) bool {
	return a == b || (a != nil && b != nil && *a == *b)
}

// enumValue is the index of name in names; "" is the zero value, as an
// unset column reads.
func enumValue(column string, names []string, name string) (int, error) {
	if name == "" {
		return 0, nil
	}
	if i := slices.Index(names, name); i >= 0 {
		return i, nil
	}
	return 0, fmt.Errorf("unknown %s %q", column, name)
}

func fillResource(r *schema.Resource, res pcommon.Resource) error {
	res.SetDroppedAttributesCount(uint32(r.ResourceDroppedAttributesCount))
	return schema.ParseMap(r.ResourceAttributes, r.ResourceAttributeTypes, res.Attributes())
}

func fillScope(r *schema.Resource, scope pcommon.InstrumentationScope) error {
	scope.SetName(r.ScopeName)
	scope.SetVersion(r.ScopeVersion)
	scope.SetDroppedAttributesCount(uint32(r.ScopeDroppedAttributesCount))
	return schema.ParseMap(r.ScopeAttributes, r.ScopeAttributeTypes, scope.Attributes())
}

func parseTraceID(s string) (pcommon.TraceID, error) {
	var id pcommon.TraceID
	if s == "" {
		return id, nil
	}
	if len(s) != 2*len(id) {
		return id, fmt.Errorf("trace id %q: want %d hex digits", s, 2*len(id))
	}
	_, err := hex.Decode(id[:], []byte(s))
	return id, err
}

func parseSpanID(s string) (pcommon.SpanID, error) {
	var id pcommon.SpanID
	if s == "" {
		return id, nil
	}
	if len(s) != 2*len(id) {
		return id, fmt.Errorf("span id %q: want %d hex digits", s, 2*len(id))
	}
	_, err := hex.Decode(id[:], []byte(s))
	return id, err
}

// SpansToTraces rebuilds traces from rows of the traces table.
func SpansToTraces(rows []schema.Span) (ptrace.Traces, error) {
	td := ptrace.NewTraces()
	var rs ptrace.ResourceSpans
	var ss ptrace.ScopeSpans
	for i := range rows {
		r := &rows[i]
		if i == 0 || !sameResource(&rows[i-1].Resource, &r.Resource) {
			rs = td.ResourceSpans().AppendEmpty()
			rs.SetSchemaUrl(r.ResourceSchemaURL)
			if err := fillResource(&r.Resource, rs.Resource()); err != nil {
				return td, err
			}
		}
		if i == 0 || !sameScope(&rows[i-1].Resource, &r.Resource) {
			ss = rs.ScopeSpans().AppendEmpty()
			ss.SetSchemaUrl(r.ScopeSchemaURL)
			if err := fillScope(&r.Resource, ss.Scope()); err != nil {
				return td, err
			}
		}
		if err := fillSpan(r, ss.Spans().AppendEmpty()); err != nil {
			return td, fmt.Errorf("span %d: %w", i, err)
		}
	}
	return td, nil
}

func fillSpan(r *schema.Span, s ptrace.Span) error {
	kind, err := enumValue("span_kind", spanKinds[:], r.SpanKind)
	if err != nil {
		return err
	}
	code, err := enumValue("span_status", spanStatuses[:], r.SpanStatus)
	if err != nil {
		return err
	}
	s.TraceState().FromRaw(r.TraceState)
	s.SetFlags(uint32(r.Flags))
	s.SetName(r.OperationName)
	s.SetKind(ptrace.SpanKind(kind))
	s.Status().SetCode(ptrace.StatusCode(code))
	s.Status().SetMessage(r.SpanStatusMessage)
	s.SetStartTimestamp(otlpTime(r.Time))
	s.SetEndTimestamp(otlpTime(r.EndTime))
	s.SetDroppedAttributesCount(uint32(r.DroppedAttributesCount))
	s.SetDroppedEventsCount(uint32(r.DroppedEventsCount))
	s.SetDroppedLinksCount(uint32(r.DroppedLinksCount))
	return errors.Join(
		setTraceID(r.TraceID, s.SetTraceID),
		setSpanID(r.SpanID, s.SetSpanID),
		setSpanID(r.ParentSpanID, s.SetParentSpanID),
		schema.ParseMap(r.Attributes, r.AttributeTypes, s.Attributes()),
		fillEvents(r.Events, s.Events()),
		fillLinks(r.Links, s.Links()),
	)
}

func fillEvents(rows []schema.SpanEvent, evs ptrace.SpanEventSlice) error {
	evs.EnsureCapacity(len(rows))
	for _, e := range rows {
		ev := evs.AppendEmpty()
		ev.SetTimestamp(otlpTime(e.Time))
		ev.SetName(e.Name)
		ev.SetDroppedAttributesCount(uint32(e.DroppedAttributesCount))
		if err := schema.ParseMap(e.Attributes, e.AttributeTypes, ev.Attributes()); err != nil {
			return err
		}
	}
	return nil
}

func fillLinks(rows []schema.SpanLink, links ptrace.SpanLinkSlice) error {
	links.EnsureCapacity(len(rows))
	for _, l := range rows {
		ln := links.AppendEmpty()
		ln.TraceState().FromRaw(l.TraceState)
		ln.SetFlags(uint32(l.Flags))
		ln.SetDroppedAttributesCount(uint32(l.DroppedAttributesCount))
		err := errors.Join(
			setTraceID(l.TraceID, ln.SetTraceID),
			setSpanID(l.SpanID, ln.SetSpanID),
			schema.ParseMap(l.Attributes, l.AttributeTypes, ln.Attributes()),
		)
		if err != nil {
			return err
		}
	}
	return nil
}

func setTraceID(s string, set func(pcommon.TraceID)) error {
	id, err := parseTraceID(s)
	set(id)
	return err
}

func setSpanID(s string, set func(pcommon.SpanID)) error {
	id, err := parseSpanID(s)
	set(id)
	return err
}

// LogRecordsToLogs rebuilds logs from rows of the logs or events table.
func LogRecordsToLogs(rows []schema.LogRecord) (plog.Logs, error) {
	ld := plog.NewLogs()
	var rl plog.ResourceLogs
	var sl plog.ScopeLogs
	for i := range rows {
		r := &rows[i]
		if i == 0 || !sameResource(&rows[i-1].Resource, &r.Resource) {
			rl = ld.ResourceLogs().AppendEmpty()
			rl.SetSchemaUrl(r.ResourceSchemaURL)
			if err := fillResource(&r.Resource, rl.Resource()); err != nil {
				return ld, err
			}
		}
		if i == 0 || !sameScope(&rows[i-1].Resource, &r.Resource) {
			sl = rl.ScopeLogs().AppendEmpty()
			sl.SetSchemaUrl(r.ScopeSchemaURL)
			if err := fillScope(&r.Resource, sl.Scope()); err != nil {
				return ld, err
			}
		}
		if err := fillLog(r, sl.LogRecords().AppendEmpty()); err != nil {
			return ld, fmt.Errorf("log record %d: %w", i, err)
		}
	}
	return ld, nil
}

func fillLog(r *schema.LogRecord, lr plog.LogRecord) error {
	lr.SetTimestamp(otlpTime(r.Time))
	lr.SetObservedTimestamp(otlpTime(r.ObservedTime))
	lr.SetFlags(plog.LogRecordFlags(r.Flags))
	lr.SetSeverityNumber(plog.SeverityNumber(r.SeverityNumber))
	lr.SetSeverityText(r.SeverityText)
	lr.SetEventName(r.EventType)
	lr.SetDroppedAttributesCount(uint32(r.DroppedAttributesCount))
	return errors.Join(
		setTraceID(r.TraceID, lr.SetTraceID),
		setSpanID(r.SpanID, lr.SetSpanID),
		fillBody(r, lr.Body()),
		schema.ParseMap(r.Attributes, r.AttributeTypes, lr.Attributes()),
	)
}

func fillBody(r *schema.LogRecord, body pcommon.Value) error {
	switch r.BodyType {
	case schema.TypeArray, schema.TypeMap:
		if r.BodyJSON == nil {
			return fmt.Errorf("body of type %s without body_json", r.BodyType)
		}
		return schema.ParseOTLPJSON(*r.BodyJSON, body)
	case schema.TypeString:
		return schema.ParseValue(r.Message, "", body)
	}
	return schema.ParseValue(r.Message, r.BodyType, body)
}
