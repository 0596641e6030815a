package otlparrow

import (
	"encoding/hex"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// converter holds what every signal's converter shares: scratch buffers and
// the current resource and scope, rendered once for all their rows.
type converter struct {
	scratch []byte
	res     rendered // resource attributes
	scope   rendered // scope attributes
	rec     rendered // the record's own attributes
	nested  rendered // span event, span link and exemplar attributes
	current resourceVals
}

// resourceVals are the resource and scope columns that are not maps.
type resourceVals struct {
	service                 []byte
	host, env, region       *renderedEntry // nil when absent
	dropped                 int64
	schemaURL               string
	scopeName, scopeVersion string
	scopeDropped            int64
	scopeSchemaURL          string
}

func (c *converter) setResource(res pcommon.Resource, schemaURL string) {
	c.res.reset(res.Attributes())
	r := &c.current
	r.service = r.service[:0]
	if e := c.res.find(schema.ServiceNameKeys); e != nil {
		r.service = append(r.service, c.res.bytes(e.text)...)
	}
	r.host, r.env, r.region = c.res.find(schema.HostKeys), c.res.find(schema.EnvironmentKeys), c.res.find(schema.RegionKeys)
	r.dropped = int64(res.DroppedAttributesCount())
	r.schemaURL = schemaURL
}

func (c *converter) setScope(scope pcommon.InstrumentationScope, schemaURL string) {
	c.scope.reset(scope.Attributes())
	r := &c.current
	r.scopeName, r.scopeVersion = scope.Name(), scope.Version()
	r.scopeDropped = int64(scope.DroppedAttributesCount())
	r.scopeSchemaURL = schemaURL
}

// resourceCols are the builders of the resource and scope columns.
type resourceCols struct {
	service, host, env, region         *array.StringBuilder
	attrs, scopeAttrs                  attrCols
	dropped, scopeDropped              *array.Int64Builder
	schemaURL, scopeName, scopeVersion *array.StringBuilder
	scopeSchemaURL                     *array.StringBuilder
}

func newResourceCols(t *table) resourceCols {
	return resourceCols{
		service: t.str("service_name"), host: t.str("host"), env: t.str("environment"), region: t.str("region"),
		attrs: t.attrs("resource_attributes"), scopeAttrs: t.attrs("scope_attributes"),
		dropped: t.i64("resource_dropped_attributes_count"), scopeDropped: t.i64("scope_dropped_attributes_count"),
		schemaURL: t.str("resource_schema_url"), scopeName: t.str("scope_name"), scopeVersion: t.str("scope_version"),
		scopeSchemaURL: t.str("scope_schema_url"),
	}
}

func (c *converter) appendResource(cols *resourceCols) {
	r := &c.current
	cols.service.BinaryBuilder.Append(r.service)
	c.res.appendEntryText(cols.host, r.host)
	c.res.appendEntryText(cols.env, r.env)
	c.res.appendEntryText(cols.region, r.region)
	c.res.appendTo(cols.attrs)
	cols.dropped.Append(r.dropped)
	c.appendStr(cols.schemaURL, r.schemaURL)
	c.appendStr(cols.scopeName, r.scopeName)
	c.appendStr(cols.scopeVersion, r.scopeVersion)
	c.scope.appendTo(cols.scopeAttrs)
	cols.scopeDropped.Append(r.scopeDropped)
	c.appendStr(cols.scopeSchemaURL, r.scopeSchemaURL)
}

// appendStr appends s with invalid UTF-8 replaced: Parquet strings must be
// UTF-8.
func (c *converter) appendStr(b *array.StringBuilder, s string) {
	c.scratch = schema.AppendValidUTF8(c.scratch[:0], s)
	b.BinaryBuilder.Append(c.scratch)
}

// appendID appends an id as lowercase hex, or "" for the all-zero id that
// OTLP uses for "absent".
func (c *converter) appendID(b *array.StringBuilder, id []byte, empty bool) {
	if empty {
		b.BinaryBuilder.Append(nil)
		return
	}
	c.scratch = hex.AppendEncode(c.scratch[:0], id)
	b.BinaryBuilder.Append(c.scratch)
}

func (c *converter) appendTraceID(b *array.StringBuilder, id pcommon.TraceID) {
	c.appendID(b, id[:], id.IsEmpty())
}

func (c *converter) appendSpanID(b *array.StringBuilder, id pcommon.SpanID) {
	c.appendID(b, id[:], id.IsEmpty())
}

// appendRecordAttrs renders a record's own attributes and appends the
// promoted columns taken from them.
func (c *converter) appendRecordAttrs(m pcommon.Map, httpMethod *array.StringBuilder, statusCode *array.Int64Builder) {
	c.rec.reset(m)
	c.rec.appendEntryText(httpMethod, c.rec.find(schema.HTTPMethodKeys))
	c.rec.appendPromotedInt(statusCode, schema.HTTPStatusCodeKeys)
}

func appendTime(b *array.TimestampBuilder, t pcommon.Timestamp) {
	b.Append(arrow.Timestamp(int64(t)))
}

func appendOptF64(b *array.Float64Builder, v float64, ok bool) {
	if ok {
		b.Append(v)
	} else {
		b.AppendNull()
	}
}
