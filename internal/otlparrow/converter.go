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
	resP    packedAttrs
	scopeP  packedAttrs
	rec     rendered // the record's own attributes, when they hold duplicate keys
	row     attrRow  // the record's own attributes, as appended
	nested  rendered // span event, span link and exemplar attributes
	current resourceVals
	runs    []*resourceCols // every table's resource columns
}

// resourceVals are the resource and scope columns that are not maps, made
// valid UTF-8 once for all their rows.
type resourceVals struct {
	service                 []byte
	host, env, region       *renderedEntry // nil when absent
	dropped                 int64
	schemaURL               []byte
	scopeName, scopeVersion []byte
	scopeDropped            int64
	scopeSchemaURL          []byte
}

func (c *converter) setResource(res pcommon.Resource, schemaURL string) {
	c.fillRuns()
	c.res.reset(res.Attributes())
	r := &c.current
	r.service = r.service[:0]
	if e := c.res.find(schema.ServiceNameKeys); e != nil {
		r.service = append(r.service, c.res.bytes(e.text)...)
	}
	r.host, r.env, r.region = c.res.find(schema.HostKeys), c.res.find(schema.EnvironmentKeys), c.res.find(schema.RegionKeys)
	r.dropped = int64(res.DroppedAttributesCount())
	r.schemaURL = schema.AppendValidUTF8(r.schemaURL[:0], schemaURL)
	c.res.pack(&c.resP)
}

func (c *converter) setScope(scope pcommon.InstrumentationScope, schemaURL string) {
	c.fillRuns()
	c.scope.reset(scope.Attributes())
	c.scope.pack(&c.scopeP)
	r := &c.current
	r.scopeName = schema.AppendValidUTF8(r.scopeName[:0], scope.Name())
	r.scopeVersion = schema.AppendValidUTF8(r.scopeVersion[:0], scope.Version())
	r.scopeDropped = int64(scope.DroppedAttributesCount())
	r.scopeSchemaURL = schema.AppendValidUTF8(r.scopeSchemaURL[:0], schemaURL)
}

// resourceCols are the resource and scope columns of one table. Their
// values are the same for every row of a resource and scope, so a row only
// counts itself and the run of rows is appended in bulk when the resource
// or scope changes or the batch is cut: a dozen large copies per run
// instead of a dozen small appends per row (a fifth of a span's
// conversion).
type resourceCols struct {
	conv                               *converter
	pending                            int // rows appended to the table but not yet to these columns
	service, host, env, region         *strCol
	attrs, scopeAttrs                  attrCols
	dropped, scopeDropped              *numCol[int64]
	schemaURL, scopeName, scopeVersion *strCol
	scopeSchemaURL                     *strCol
}

func newResourceCols(c *converter, t *table) *resourceCols {
	cols := &resourceCols{
		conv:    c,
		service: t.str("service_name"), host: t.str("host"), env: t.str("environment"), region: t.str("region"),
		attrs: t.attrs("resource_attributes"), scopeAttrs: t.attrs("scope_attributes"),
		dropped: t.i64("resource_dropped_attributes_count"), scopeDropped: t.i64("scope_dropped_attributes_count"),
		schemaURL: t.str("resource_schema_url"), scopeName: t.str("scope_name"), scopeVersion: t.str("scope_version"),
		scopeSchemaURL: t.str("scope_schema_url"),
	}
	c.runs = append(c.runs, cols)
	t.runs = append(t.runs, cols)
	return cols
}

// appendResource adds the current resource and scope to the row being
// appended.
func (c *converter) appendResource(cols *resourceCols) { cols.pending++ }

// fillRuns appends every table's pending rows of the current resource and
// scope; it runs before they change.
func (c *converter) fillRuns() {
	for _, cols := range c.runs {
		cols.fill()
	}
}

func (cols *resourceCols) drop() { cols.pending = 0 }

// fill appends the pending rows to the resource and scope columns.
func (cols *resourceCols) fill() {
	n := cols.pending
	if n == 0 {
		return
	}
	cols.pending = 0
	c := cols.conv
	r := &c.current
	cols.service.appendRepeat(r.service, n)
	c.res.appendEntryTextRepeat(cols.host, r.host, n)
	c.res.appendEntryTextRepeat(cols.env, r.env, n)
	c.res.appendEntryTextRepeat(cols.region, r.region, n)
	c.resP.appendRepeat(cols.attrs, n)
	cols.dropped.appendRepeat(r.dropped, n)
	cols.schemaURL.appendRepeat(r.schemaURL, n)
	cols.scopeName.appendRepeat(r.scopeName, n)
	cols.scopeVersion.appendRepeat(r.scopeVersion, n)
	c.scopeP.appendRepeat(cols.scopeAttrs, n)
	cols.scopeDropped.appendRepeat(r.scopeDropped, n)
	cols.scopeSchemaURL.appendRepeat(r.scopeSchemaURL, n)
}

// appendStr appends s with invalid UTF-8 replaced to a builder of a nested
// list: Parquet strings must be UTF-8.
func (c *converter) appendStr(b *array.StringBuilder, s string) {
	c.scratch = schema.AppendValidUTF8(c.scratch[:0], s)
	b.BinaryBuilder.Append(c.scratch)
}

// appendID appends an id as lowercase hex, or "" for the all-zero id that
// OTLP uses for "absent", to a builder of a nested list.
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

func appendTraceID(c *strCol, id pcommon.TraceID) { c.appendID(id[:], id.IsEmpty()) }
func appendSpanID(c *strCol, id pcommon.SpanID)   { c.appendID(id[:], id.IsEmpty()) }

// appendRecordAttrs appends a record's own attributes and the promoted
// columns taken from them.
func (c *converter) appendRecordAttrs(m pcommon.Map, cols attrCols, httpMethod *strCol, statusCode *numCol[int64]) {
	if c.appendAttrs(m, cols) {
		method, status := c.row.findPromoted(schema.HTTPMethodKeys, schema.HTTPStatusCodeKeys)
		c.row.appendText(httpMethod, method)
		c.row.appendPromotedInt(statusCode, status)
		return
	}
	c.rec.appendEntryText(httpMethod, c.rec.find(schema.HTTPMethodKeys))
	c.rec.appendPromotedInt(statusCode, schema.HTTPStatusCodeKeys)
}

// appendTime and appendNestedTime store an OTLP time (nanoseconds) in the
// contract's unit, the one conversion of the forward direction.
func appendTime(c *numCol[int64], t pcommon.Timestamp) {
	c.append(schema.TimestampFromUnixNano(uint64(t)))
}

func appendNestedTime(b *array.TimestampBuilder, t pcommon.Timestamp) {
	b.Append(arrow.Timestamp(schema.TimestampFromUnixNano(uint64(t))))
}

// otlpTime is a stored timestamp as an OTLP time, the one conversion of
// the reverse direction.
func otlpTime(ts int64) pcommon.Timestamp { return pcommon.Timestamp(schema.TimestampToUnixNano(ts)) }

func appendOptF64(c *numCol[float64], v float64, ok bool) {
	if ok {
		c.append(v)
	} else {
		c.appendNull()
	}
}
