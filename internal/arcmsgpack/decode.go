package arcmsgpack

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// Payload keys and the time column's name.
const (
	keyMeasurement = "m"
	keyColumns     = "columns"
	keyBatch       = "batch"
	// Arc's row format: {"m", "t", "fields", "tags"}, "h" a host tag.
	keyTime   = "t"
	keyFields = "fields"
	keyTags   = "tags"
	keyHost   = "h"
	hostTag   = "host"

	TimeColumn = "time"
)

// ErrInput marks errors in the payload itself: the client's fault, never
// fixed by a retry.
var ErrInput = errors.New("bad payload")

func inputErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInput, fmt.Sprintf(format, args...))
}

// within puts where in front of an input error's message, after its
// "bad payload" prefix; other errors pass unchanged.
func within(where string, err error) error {
	if err == nil || !errors.Is(err, ErrInput) {
		return err
	}
	return inputErr("%s: %s", where, strings.TrimPrefix(err.Error(), ErrInput.Error()+": "))
}

// Measurement is one payload object, or the rows of one measurement.
type Measurement struct {
	Name string
	// Time as stored (schema.TimestampUnit since the epoch), from a
	// unit-detected input.
	Time    []int64
	Columns []Column // without time, in payload order
}

// Rows is the measurement's row count.
func (m *Measurement) Rows() int { return len(m.Time) }

// Decode reads a whole (decompressed) payload within DefaultMaxBytes.
func Decode(body []byte) ([]Measurement, error) {
	return DecodeWithin(body, NewBudget(0))
}

// DecodeWithin reads a whole (decompressed) payload, charging the memory
// of its columns to b; past the budget it stops with ErrTooLarge. Columnar
// objects become one Measurement each, in payload order; row-format
// records are gathered per measurement name after them.
// The columns copy what they hold: body may be reused once it returns.
func DecodeWithin(body []byte, b *Budget) ([]Measurement, error) {
	return decode(newBytesSource(body, b), b)
}

// DecodeReader is DecodeWithin reading the payload from r as it goes: a
// decompressing reader, so that the decompressed body is never held whole.
func DecodeReader(r io.Reader, b *Budget) ([]Measurement, error) {
	return decode(newSource(r, b), b)
}

func decode(src *source, b *Budget) ([]Measurement, error) {
	d := &decoder{dec: src, budget: b, rows: NewRows(b), now: schema.TimestampOf(time.Now())}
	c, err := d.dec.PeekCode()
	if err != nil {
		return nil, inputErr("empty or truncated body")
	}
	switch {
	case isArray(c):
		err = d.list("")
	case isMap(c):
		err = d.top()
	default:
		return nil, inputErr("body must be a map or an array of maps, got msgpack type 0x%02x", c)
	}
	if err != nil {
		return nil, err
	}
	if _, err := d.dec.PeekCode(); !errors.Is(err, io.EOF) {
		return nil, inputErr("trailing bytes after the payload")
	}
	out := append(d.out, d.rows.Measurements()...)
	if len(out) == 0 {
		return nil, inputErr("payload holds no measurement")
	}
	return out, nil
}

type decoder struct {
	dec    *source
	budget *Budget
	out    []Measurement // columnar objects
	rows   *Rows
	now    int64 // a row without "t" is stamped with the time of decoding, as Arc does
	row    rowItem
}

// rowItem is one row-format record while its keys are read: they come in
// any order, and its fields go to columns once its measurement is known.
type rowItem struct {
	time    any // int64, float64 or nil
	tags    []keyValue
	fields  []keyValue
	host    string
	hasHost bool
}

type keyValue struct {
	key string
	val any // int64, float64, string, bool or nil
}

func isArray(c byte) bool {
	return msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32
}

func isMap(c byte) bool {
	return msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32
}

// top reads {"batch": [...]} or one item.
func (d *decoder) top() error {
	n, err := d.dec.DecodeMapLen()
	if err != nil {
		return inputErr("truncated map")
	}
	return d.item(n, "", true)
}

func (d *decoder) list(where string) error {
	n, err := d.dec.DecodeArrayLen()
	if err != nil || n < 0 {
		return inputErr("truncated array %s", where)
	}
	for i := 0; i < n; i++ {
		c, err := d.dec.PeekCode()
		if err != nil {
			return inputErr("truncated: %d of %d measurements", i, n)
		}
		if !isMap(c) {
			return inputErr("element %d of the array is not a map", i)
		}
		mn, err := d.dec.DecodeMapLen()
		if err != nil {
			return inputErr("truncated element %d", i)
		}
		if err := d.item(mn, fmt.Sprintf("element %d", i), false); err != nil {
			return err
		}
	}
	return nil
}

// item reads one map of n keys: a columnar object, a row-format record,
// or (at the top only) a batch.
func (d *decoder) item(n int, where string, top bool) error {
	wrap := func(err error) error {
		if where == "" {
			return err
		}
		return within(where, err)
	}
	label := where
	if label == "" {
		label = "top-level"
	}
	var m Measurement
	seen := map[string]bool{}
	d.row = rowItem{tags: d.row.tags[:0], fields: d.row.fields[:0]}
	for i := 0; i < n; i++ {
		key, err := decodeKey(d.dec, label)
		if err != nil {
			return err
		}
		if seen[key] {
			return wrap(inputErr("key %q appears twice", key))
		}
		seen[key] = true
		switch key {
		case keyBatch:
			if !top {
				return wrap(inputErr("%q is only allowed at the top level", keyBatch))
			}
			if err := d.list(keyBatch); err != nil {
				return err
			}
		case keyMeasurement:
			c, err := d.dec.PeekCode()
			if err != nil || !msgpcode.IsString(c) {
				return wrap(inputErr("%q must be a string", keyMeasurement))
			}
			if m.Name, err = d.dec.str(); errors.Is(err, ErrTooLarge) {
				return err
			} else if err != nil {
				return wrap(inputErr("truncated %q", keyMeasurement))
			}
		case keyColumns:
			if err := m.decodeColumns(d.dec, d.budget); err != nil {
				return wrap(err)
			}
		case keyTime:
			if d.row.time, err = d.scalar(keyTime, ""); err != nil {
				return wrap(err)
			}
		case keyTags:
			if d.row.tags, err = d.pairs(keyTags, d.row.tags); err != nil {
				return wrap(err)
			}
		case keyFields:
			if d.row.fields, err = d.pairs(keyFields, d.row.fields); err != nil {
				return wrap(err)
			}
		case keyHost:
			v, err := d.scalar(keyHost, "")
			if err != nil {
				return wrap(err)
			}
			if v != nil {
				d.row.host, d.row.hasHost = tagString(v), true
			}
		default:
			return wrap(inputErr("unknown key %q (want %q and %q for columns, %q, %q, %q and %q for a row, or %q)",
				key, keyMeasurement, keyColumns, keyMeasurement, keyTime, keyFields, keyTags, keyBatch))
		}
	}
	isRow := seen[keyFields] || seen[keyTags] || seen[keyTime] || seen[keyHost]
	switch {
	case seen[keyBatch]:
		if len(seen) > 1 {
			return inputErr("%q cannot be mixed with other keys", keyBatch)
		}
		return nil
	case seen[keyColumns] && isRow:
		return wrap(inputErr("%q (columnar) cannot be mixed with %q/%q/%q (row format)", keyColumns, keyTime, keyFields, keyTags))
	case isRow:
		return wrap(d.addRow(m.Name, seen[keyFields]))
	}
	if err := m.finish(seen); err != nil {
		return wrap(err)
	}
	if err := d.budget.take(measurementCost); err != nil {
		return err
	}
	d.out = append(d.out, m)
	return nil
}

// addRow stores the row item just read into its measurement's columns.
func (d *decoder) addRow(name string, hasFields bool) error {
	if name == "" {
		return inputErr("missing measurement name %q", keyMeasurement)
	}
	if !hasFields || len(d.row.fields) == 0 {
		return inputErr("measurement %q: a row needs at least one field in %q", name, keyFields)
	}
	ts := d.now
	switch t := d.row.time.(type) {
	case int64:
		var ok bool
		if ts, ok = intTime(t, unitOf(math.Abs(float64(t)))); !ok {
			return inputErr("measurement %q: %q %d is out of range", name, keyTime, t)
		}
	case float64:
		var ok bool
		if ts, ok = floatTime(t, unitOf(math.Abs(t))); !ok {
			return inputErr("measurement %q: %q %v is out of range", name, keyTime, t)
		}
	case string, bool:
		return inputErr("measurement %q: %q must be an integer or float timestamp", name, keyTime)
	}
	if err := d.rows.Begin(name, ts); err != nil {
		return err
	}
	if d.row.hasHost {
		if err := d.rows.Tag(hostTag, d.row.host); err != nil {
			return err
		}
	}
	for _, kv := range d.row.tags {
		if kv.val == nil || d.row.hasHost && kv.key == hostTag {
			continue // "h" wins over a "host" tag, as in Arc
		}
		if err := d.rows.Tag(kv.key, tagString(kv.val)); err != nil {
			return err
		}
	}
	for _, kv := range d.row.fields {
		col, err := d.rows.Field(kv.key)
		if err != nil {
			return err
		}
		switch v := kv.val.(type) {
		case nil:
			err = col.AppendNull()
		case int64:
			err = col.AppendInt(v)
		case float64:
			err = col.AppendFloat(v)
		case string:
			err = col.appendString(v) // checked as UTF-8 when it was decoded
		case bool:
			err = col.AppendBool(v)
		}
		if err != nil {
			return within(fmt.Sprintf("measurement %q", name), err)
		}
	}
	return d.rows.End()
}

// tagString is a tag's value as text: Arc formats non-string tags.
func tagString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

// pairs reads a map of names to scalars ("tags", "fields").
func (d *decoder) pairs(what string, into []keyValue) ([]keyValue, error) {
	c, err := d.dec.PeekCode()
	if err != nil || !isMap(c) {
		return into, inputErr("%q must be a map of name to value", what)
	}
	n, err := d.dec.DecodeMapLen()
	if err != nil {
		return into, inputErr("truncated %q", what)
	}
	for i := 0; i < n; i++ {
		key, err := decodeKey(d.dec, what)
		if err != nil {
			return into, err
		}
		v, err := d.scalar(what, key)
		if err != nil {
			return into, err
		}
		if s, ok := v.(string); ok && !utf8.ValidString(s) {
			return into, inputErr("%s %q: string is not valid UTF-8", what, key)
		}
		// The key and value are charged like a column's: a record of
		// many tiny fields is no cheaper to hold than their columns.
		if err := d.budget.take(int64(len(key)) + stringCost + 24); err != nil {
			return into, err
		}
		into = append(into, keyValue{key: key, val: v})
	}
	return into, nil
}

// scalar reads one int, float, string, bool or nil: what, or the value
// of key in what (named only in an error, so that reading it allocates
// nothing but the value).
func (d *decoder) scalar(what, key string) (any, error) {
	bad := func(s string) error {
		if key != "" {
			return inputErr("%s %q: %s", what, key, s)
		}
		return inputErr("%s: %s", what, s)
	}
	c, err := d.dec.PeekCode()
	if err != nil {
		return nil, bad("truncated")
	}
	switch {
	case c == msgpcode.Nil:
		d.dec.skipNil()
		return nil, nil
	case c == msgpcode.True || c == msgpcode.False:
		v, err := d.dec.DecodeBool()
		if err != nil {
			return nil, bad("truncated")
		}
		return v, nil
	case msgpcode.IsFixedNum(c) || c >= msgpcode.Uint8 && c <= msgpcode.Int64:
		if c == msgpcode.Uint64 {
			u, err := d.dec.DecodeUint64()
			if err != nil {
				return nil, bad("truncated")
			}
			if u > math.MaxInt64 {
				return nil, bad(fmt.Sprintf("%d does not fit a signed 64-bit integer", u))
			}
			return int64(u), nil
		}
		v, err := d.dec.DecodeInt64()
		if err != nil {
			return nil, bad("truncated")
		}
		return v, nil
	case c == msgpcode.Float || c == msgpcode.Double:
		v, err := d.dec.DecodeFloat64()
		if err != nil {
			return nil, bad("truncated")
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, bad("NaN and infinities are not stored; send null for a missing value")
		}
		return v, nil
	case msgpcode.IsString(c):
		v, err := d.dec.str()
		if err != nil {
			if errors.Is(err, ErrTooLarge) {
				return nil, err
			}
			return nil, bad("truncated")
		}
		return v, nil
	}
	return nil, bad(fmt.Sprintf("unsupported msgpack type 0x%02x (want int, float, string, bool or nil)", c))
}

func decodeKey(d *source, where string) (string, error) {
	c, err := d.PeekCode()
	if err != nil {
		return "", inputErr("truncated %s map", where)
	}
	if !msgpcode.IsString(c) {
		return "", inputErr("%s map has a non-string key", where)
	}
	s, err := d.str()
	if errors.Is(err, ErrTooLarge) {
		return "", err
	}
	if err != nil {
		return "", inputErr("truncated %s key", where)
	}
	return s, nil
}

func (m *Measurement) finish(seen map[string]bool) error {
	if !seen[keyMeasurement] || m.Name == "" {
		return inputErr("missing measurement name %q", keyMeasurement)
	}
	if !seen[keyColumns] {
		return inputErr("measurement %q: missing %q (or %q for a row)", m.Name, keyColumns, keyFields)
	}
	if m.Time == nil {
		return inputErr("measurement %q: missing the %q column", m.Name, TimeColumn)
	}
	for _, c := range m.Columns {
		if c.rows != len(m.Time) {
			return inputErr("measurement %q: column %q has %d values, %q has %d", m.Name, c.Name, c.rows, TimeColumn, len(m.Time))
		}
	}
	return nil
}

func (m *Measurement) decodeColumns(d *source, b *Budget) error {
	c, err := d.PeekCode()
	if err != nil || !isMap(c) {
		return inputErr("%q must be a map of column name to values", keyColumns)
	}
	n, err := d.DecodeMapLen()
	if err != nil {
		return inputErr("truncated %q", keyColumns)
	}
	sent := map[string]bool{}
	var names schema.ColumnNames
	for i := 0; i < n; i++ {
		name, err := decodeKey(d, keyColumns)
		if err != nil {
			return err
		}
		if sent[name] {
			return inputErr("column %q appears twice", name)
		}
		sent[name] = true
		if name == TimeColumn {
			col, err := decodeColumn(d, name, b)
			if err != nil {
				return err
			}
			if m.Time, err = timeColumn(col); err != nil {
				return err
			}
			continue
		}
		stored, err := names.Store(name)
		if err != nil {
			return inputErr("%v", err)
		}
		col, err := decodeColumn(d, stored, b)
		if err != nil {
			return err
		}
		if m.Columns, err = push(b, m.Columns, col, 0); err != nil {
			return err
		}
	}
	return nil
}

func decodeColumn(d *source, name string, b *Budget) (Column, error) {
	c, err := d.PeekCode()
	if err != nil || !isArray(c) {
		return Column{}, inputErr("column %q must be an array", name)
	}
	n, err := d.DecodeArrayLen()
	if err != nil || n < 0 {
		return Column{}, inputErr("column %q: truncated", name)
	}
	col, err := NewColumn(name, b)
	if err != nil {
		return Column{}, err
	}
	// A length prefix is only a claim: it caps how far a slice grows, it
	// never sizes one, and every growth is charged to the budget first.
	col.hint = n
	if size, ok := d.stringBytes(n); ok {
		if err := col.sizeData(size); err != nil {
			return Column{}, err
		}
	}
	for row := 0; row < n; {
		if k := d.run(&col, n-row); k > 0 {
			row += k
			continue
		}
		if err := col.add(d); err != nil {
			return Column{}, err
		}
		row++
	}
	if err := col.checkUTF8(); err != nil {
		return Column{}, err
	}
	return col, nil
}

func (col *Column) add(d *source) error {
	if col.Kind == KindString {
		if ok, err := d.shortStrInto(col); ok || err != nil {
			return err
		}
	}
	c, err := d.PeekCode()
	if err != nil {
		return inputErr("column %q: truncated at row %d", col.Name, col.rows)
	}
	switch {
	case c == msgpcode.Nil:
		d.skipNil()
		return col.AppendNull()
	case c == msgpcode.True || c == msgpcode.False:
		v, err := d.DecodeBool()
		if err != nil {
			return col.bad("truncated")
		}
		return col.AppendBool(v)
	case msgpcode.IsFixedNum(c) || c >= msgpcode.Uint8 && c <= msgpcode.Int64:
		if c == msgpcode.Uint64 {
			u, err := d.DecodeUint64()
			if err != nil {
				return col.bad("truncated")
			}
			if u > math.MaxInt64 {
				return col.bad("%d does not fit a signed 64-bit integer", u)
			}
			return col.AppendInt(int64(u))
		}
		v, err := d.DecodeInt64()
		if err != nil {
			return col.bad("truncated")
		}
		return col.AppendInt(v)
	case c == msgpcode.Float || c == msgpcode.Double:
		v, err := d.DecodeFloat64()
		if err != nil {
			return col.bad("truncated")
		}
		return col.AppendFloat(v)
	case msgpcode.IsString(c):
		// Checked as UTF-8 with the column's other strings, in one pass.
		row := col.rows
		if err := d.strInto(col); err != nil {
			if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrInput) {
				return err
			}
			return col.badAt(row, "truncated")
		}
		return nil
	}
	return col.bad("unsupported msgpack type 0x%02x (want int, float, string, bool or nil)", c)
}
