package otlparrow

import (
	"encoding/hex"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// Emit receives each finished record batch; ownership passes to the callee,
// which must Release it.
type Emit func(table *schema.Table, rec arrow.RecordBatch) error

// table builds the record batches of one table.
type table struct {
	schema    *schema.Table
	rb        *array.RecordBuilder
	batchSize int
	rows      int
}

func newTable(mem memory.Allocator, t *schema.Table, batchSize int) *table {
	rb := array.NewRecordBuilder(mem, t.Arrow)
	rb.Reserve(batchSize)
	return &table{schema: t, rb: rb, batchSize: batchSize}
}

func (t *table) field(name string) array.Builder { return t.rb.Field(t.schema.FieldIndex(name)) }
func (t *table) str(name string) *array.StringBuilder {
	return t.field(name).(*array.StringBuilder)
}
func (t *table) i64(name string) *array.Int64Builder { return t.field(name).(*array.Int64Builder) }
func (t *table) f64(name string) *array.Float64Builder {
	return t.field(name).(*array.Float64Builder)
}
func (t *table) ts(name string) *array.TimestampBuilder {
	return t.field(name).(*array.TimestampBuilder)
}
func (t *table) boolean(name string) *array.BooleanBuilder {
	return t.field(name).(*array.BooleanBuilder)
}
func (t *table) attrs(name string) attrCols {
	return newAttrCols(t.field(name).(*array.MapBuilder), t.field(typesColumn(name)).(*array.MapBuilder))
}

// typesColumn names the type-tag map that goes with a text map.
func typesColumn(name string) string {
	if name == "attributes" {
		return schema.ColAttributeTypes
	}
	if n := len(name) - len("attributes"); n > 0 && name[n:] == "attributes" {
		return name[:n] + "attribute_types"
	}
	return name + "_types"
}

// rowDone counts a finished row and emits the batch when it is full.
func (t *table) rowDone(emit Emit) error {
	t.rows++
	if t.rows < t.batchSize {
		return nil
	}
	return t.flush(emit)
}

func (t *table) flush(emit Emit) error {
	if t.rows == 0 {
		return nil
	}
	t.rows = 0
	rec := t.rb.NewRecordBatch()
	return emit(t.schema, rec)
}

func (t *table) release() { t.rb.Release() }

// attrCols are the two map columns of one attribute set.
type attrCols struct {
	text, types        *array.MapBuilder
	textKey, textVal   *array.StringBuilder
	typesKey, typesVal *array.StringBuilder
}

func newAttrCols(text, types *array.MapBuilder) attrCols {
	return attrCols{
		text: text, types: types,
		textKey: text.KeyBuilder().(*array.StringBuilder), textVal: text.ItemBuilder().(*array.StringBuilder),
		typesKey: types.KeyBuilder().(*array.StringBuilder), typesVal: types.ItemBuilder().(*array.StringBuilder),
	}
}

// rendered is an attribute set rendered once (key, text, type tag) into one
// byte arena, so a resource's attributes are rendered once per resource and
// only copied for each of its rows.
type rendered struct {
	buf     []byte
	entries []renderedEntry
}

type renderedEntry struct {
	key, text, tag [2]int // offsets into buf
}

func (r *rendered) reset(m pcommon.Map) {
	r.buf = r.buf[:0]
	r.entries = r.entries[:0]
	m.Range(func(k string, v pcommon.Value) bool {
		var e renderedEntry
		e.key[0] = len(r.buf)
		r.buf = schema.AppendValidUTF8(r.buf, k)
		e.key[1] = len(r.buf)
		r.buf = schema.AppendText(r.buf, v)
		e.text[1] = len(r.buf)
		e.text[0] = e.key[1]
		var ok bool
		r.buf, ok = schema.AppendTypeTag(r.buf, v)
		e.tag = [2]int{e.text[1], len(r.buf)}
		if !ok {
			e.tag = [2]int{-1, -1}
		}
		r.entries = append(r.entries, e)
		return true
	})
}

func (r *rendered) slice(s [2]int) []byte { return r.buf[s[0]:s[1]] }

func (r *rendered) appendTo(c attrCols) {
	c.text.Append(true)
	c.types.Append(true)
	for _, e := range r.entries {
		c.textKey.BinaryBuilder.Append(r.slice(e.key))
		c.textVal.BinaryBuilder.Append(r.slice(e.text))
		if e.tag[0] >= 0 {
			c.typesKey.BinaryBuilder.Append(r.slice(e.key))
			c.typesVal.BinaryBuilder.Append(r.slice(e.tag))
		}
	}
}

// text returns the rendered text of the first key present, if any.
func (r *rendered) text(keys []string) ([]byte, bool) {
	for _, k := range keys {
		for _, e := range r.entries {
			if string(r.slice(e.key)) == k {
				return r.slice(e.text), true
			}
		}
	}
	return nil, false
}

// converter holds what every signal's converter shares.
type converter struct {
	mem       memory.Allocator
	batchSize int
	scratch   []byte
	res       rendered
	scope     rendered
	rec       rendered
	nested    rendered
	resource  resourceVals
}

// resourceVals are the promoted resource columns, computed once per
// resource.
type resourceVals struct {
	service                 []byte
	host, env, region       []byte
	hasHost, hasEnv, hasReg bool
	dropped                 int64
	schemaURL               string
	scopeName, scopeVersion string
	scopeDropped            int64
	scopeSchemaURL          string
}

func (c *converter) setResource(res pcommon.Resource, schemaURL string) {
	c.res.reset(res.Attributes())
	r := &c.resource
	r.service, _ = c.res.text(schema.ServiceNameKeys)
	r.host, r.hasHost = c.res.text(schema.HostKeys)
	r.env, r.hasEnv = c.res.text(schema.EnvironmentKeys)
	r.region, r.hasReg = c.res.text(schema.RegionKeys)
	r.dropped = int64(res.DroppedAttributesCount())
	r.schemaURL = schemaURL
}

func (c *converter) setScope(scope pcommon.InstrumentationScope, schemaURL string) {
	c.scope.reset(scope.Attributes())
	r := &c.resource
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

func (c *converter) appendResource(cols resourceCols) {
	r := &c.resource
	cols.service.BinaryBuilder.Append(r.service)
	appendOptBytes(cols.host, r.host, r.hasHost)
	appendOptBytes(cols.env, r.env, r.hasEnv)
	appendOptBytes(cols.region, r.region, r.hasReg)
	c.res.appendTo(cols.attrs)
	cols.dropped.Append(r.dropped)
	c.appendStr(cols.schemaURL, r.schemaURL)
	c.appendStr(cols.scopeName, r.scopeName)
	c.appendStr(cols.scopeVersion, r.scopeVersion)
	c.scope.appendTo(cols.scopeAttrs)
	cols.scopeDropped.Append(r.scopeDropped)
	c.appendStr(cols.scopeSchemaURL, r.scopeSchemaURL)
}

func appendOptBytes(b *array.StringBuilder, v []byte, ok bool) {
	if ok {
		b.BinaryBuilder.Append(v)
	} else {
		b.AppendNull()
	}
}

// appendStr appends s, replacing invalid UTF-8.
func (c *converter) appendStr(b *array.StringBuilder, s string) {
	c.scratch = schema.AppendValidUTF8(c.scratch[:0], s)
	b.BinaryBuilder.Append(c.scratch)
}

func (c *converter) appendTraceID(b *array.StringBuilder, id pcommon.TraceID) {
	if id.IsEmpty() {
		b.BinaryBuilder.Append(nil)
		return
	}
	c.scratch = hex.AppendEncode(c.scratch[:0], id[:])
	b.BinaryBuilder.Append(c.scratch)
}

func (c *converter) appendSpanID(b *array.StringBuilder, id pcommon.SpanID) {
	if id.IsEmpty() {
		b.BinaryBuilder.Append(nil)
		return
	}
	c.scratch = hex.AppendEncode(c.scratch[:0], id[:])
	b.BinaryBuilder.Append(c.scratch)
}

// appendAttrs renders a record's own attribute set and appends it.
func (c *converter) appendAttrs(cols attrCols, m pcommon.Map, r *rendered) {
	r.reset(m)
	r.appendTo(cols)
}

// promoted returns the text of the first of keys in a rendered set.
func promotedInt(r *rendered, keys []string) (int64, bool) {
	b, ok := r.text(keys)
	if !ok {
		return 0, false
	}
	var n int64
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		n = n*10 + int64(ch-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

func appendTime(b *array.TimestampBuilder, t pcommon.Timestamp) {
	b.Append(arrow.Timestamp(int64(t)))
}
