package arcmsgpack

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Payload keys and the time column's name.
const (
	keyMeasurement = "m"
	keyColumns     = "columns"
	keyBatch       = "batch"
	TimeColumn     = "time"
)

// ErrInput marks errors in the payload itself: the client's fault, never
// fixed by a retry.
var ErrInput = errors.New("bad payload")

func inputErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInput, fmt.Sprintf(format, args...))
}

// Kind is a column's value type.
type Kind int

// Kinds.
const (
	KindNull Kind = iota // no non-null value seen yet
	KindInt
	KindFloat
	KindString
	KindBool
)

func (k Kind) String() string {
	return [...]string{"null", "int", "float", "string", "bool"}[k]
}

// Column is one decoded column. Exactly one of the value slices is used,
// per Kind; Null marks null rows (nil when there are none).
type Column struct {
	Name   string
	Kind   Kind
	Ints   []int64
	Floats []float64
	Strs   []string
	Bools  []bool
	Null   []bool
	rows   int
}

// Measurement is one payload object.
type Measurement struct {
	Name string
	// Time in nanoseconds since the epoch, unit-detected.
	Time    []int64
	Columns []Column // without time, in payload order
}

// Rows is the measurement's row count.
func (m *Measurement) Rows() int { return len(m.Time) }

// Decode reads a whole (decompressed) payload.
func Decode(body []byte) ([]Measurement, error) {
	d := msgpack.NewDecoder(bytes.NewReader(body))
	c, err := d.PeekCode()
	if err != nil {
		return nil, inputErr("empty or truncated body")
	}
	var out []Measurement
	switch {
	case isArray(c):
		out, err = decodeList(d, len(body), "")
	case isMap(c):
		out, err = decodeTop(d, len(body))
	default:
		return nil, inputErr("body must be a map or an array of maps, got msgpack type 0x%02x", c)
	}
	if err != nil {
		return nil, err
	}
	if _, err := d.PeekCode(); !errors.Is(err, io.EOF) {
		return nil, inputErr("trailing bytes after the payload")
	}
	if len(out) == 0 {
		return nil, inputErr("payload holds no measurement")
	}
	return out, nil
}

func isArray(c byte) bool {
	return msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32
}

func isMap(c byte) bool {
	return msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32
}

// decodeTop reads either {"batch": [...]} or one measurement object.
func decodeTop(d *msgpack.Decoder, budget int) ([]Measurement, error) {
	n, err := d.DecodeMapLen()
	if err != nil {
		return nil, inputErr("truncated map")
	}
	var m Measurement
	seen := map[string]bool{}
	var batch []Measurement
	for i := 0; i < n; i++ {
		key, err := decodeKey(d, "top-level")
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, inputErr("key %q appears twice", key)
		}
		seen[key] = true
		switch key {
		case keyBatch:
			if batch, err = decodeList(d, budget, "batch"); err != nil {
				return nil, err
			}
		case keyMeasurement, keyColumns:
			if err := m.field(d, key, budget); err != nil {
				return nil, err
			}
		default:
			return nil, inputErr("unknown key %q (want %q and %q, or %q)", key, keyMeasurement, keyColumns, keyBatch)
		}
	}
	if seen[keyBatch] {
		if seen[keyMeasurement] || seen[keyColumns] {
			return nil, inputErr("%q cannot be mixed with %q/%q", keyBatch, keyMeasurement, keyColumns)
		}
		return batch, nil
	}
	if err := m.finish(seen); err != nil {
		return nil, err
	}
	return []Measurement{m}, nil
}

func decodeList(d *msgpack.Decoder, budget int, where string) ([]Measurement, error) {
	n, err := d.DecodeArrayLen()
	if err != nil || n < 0 {
		return nil, inputErr("truncated array %s", where)
	}
	out := make([]Measurement, 0, min(n, budget))
	for i := 0; i < n; i++ {
		c, err := d.PeekCode()
		if err != nil {
			return nil, inputErr("truncated: %d of %d measurements", i, n)
		}
		if !isMap(c) {
			return nil, inputErr("element %d of the array is not a map", i)
		}
		mn, err := d.DecodeMapLen()
		if err != nil {
			return nil, inputErr("truncated element %d", i)
		}
		var m Measurement
		seen := map[string]bool{}
		for j := 0; j < mn; j++ {
			key, err := decodeKey(d, fmt.Sprintf("element %d", i))
			if err != nil {
				return nil, err
			}
			if seen[key] {
				return nil, inputErr("element %d: key %q appears twice", i, key)
			}
			seen[key] = true
			if key != keyMeasurement && key != keyColumns {
				return nil, inputErr("element %d: unknown key %q (want %q and %q)", i, key, keyMeasurement, keyColumns)
			}
			if err := m.field(d, key, budget); err != nil {
				return nil, err
			}
		}
		if err := m.finish(seen); err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func decodeKey(d *msgpack.Decoder, where string) (string, error) {
	c, err := d.PeekCode()
	if err != nil {
		return "", inputErr("truncated %s map", where)
	}
	if !msgpcode.IsString(c) {
		return "", inputErr("%s map has a non-string key", where)
	}
	s, err := d.DecodeString()
	if err != nil {
		return "", inputErr("truncated %s key", where)
	}
	return s, nil
}

func (m *Measurement) field(d *msgpack.Decoder, key string, budget int) error {
	if key == keyMeasurement {
		c, err := d.PeekCode()
		if err != nil || !msgpcode.IsString(c) {
			return inputErr("%q must be a string", keyMeasurement)
		}
		if m.Name, err = d.DecodeString(); err != nil {
			return inputErr("truncated %q", keyMeasurement)
		}
		return nil
	}
	return m.decodeColumns(d, budget)
}

func (m *Measurement) finish(seen map[string]bool) error {
	if !seen[keyMeasurement] || m.Name == "" {
		return inputErr("missing measurement name %q", keyMeasurement)
	}
	if !seen[keyColumns] {
		return inputErr("measurement %q: missing %q", m.Name, keyColumns)
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

func (m *Measurement) decodeColumns(d *msgpack.Decoder, budget int) error {
	c, err := d.PeekCode()
	if err != nil || !isMap(c) {
		return inputErr("%q must be a map of column name to values", keyColumns)
	}
	n, err := d.DecodeMapLen()
	if err != nil {
		return inputErr("truncated %q", keyColumns)
	}
	names := map[string]bool{}
	for i := 0; i < n; i++ {
		name, err := decodeKey(d, keyColumns)
		if err != nil {
			return err
		}
		if names[name] {
			return inputErr("column %q appears twice", name)
		}
		names[name] = true
		if err := checkColumnName(name); err != nil {
			return err
		}
		col, err := decodeColumn(d, name, budget)
		if err != nil {
			return err
		}
		if name == TimeColumn {
			if m.Time, err = timeColumn(col); err != nil {
				return err
			}
			continue
		}
		m.Columns = append(m.Columns, col)
	}
	return nil
}

// reserved are column names the layout already uses: the hive partition
// keys would shadow them on read.
var reserved = map[string]bool{"date": true, "hour": true}

func checkColumnName(name string) error {
	switch {
	case name == "":
		return inputErr("empty column name")
	case len(name) > 255:
		return inputErr("column name %.32q... is longer than 255 bytes", name)
	case !utf8.ValidString(name):
		return inputErr("column name %q is not valid UTF-8", name)
	case reserved[name]:
		return inputErr("column name %q is reserved for the partition (date=YYYY-MM-DD/hour=H)", name)
	}
	return nil
}

func decodeColumn(d *msgpack.Decoder, name string, budget int) (Column, error) {
	c, err := d.PeekCode()
	if err != nil || !isArray(c) {
		return Column{}, inputErr("column %q must be an array", name)
	}
	n, err := d.DecodeArrayLen()
	if err != nil || n < 0 {
		return Column{}, inputErr("column %q: truncated", name)
	}
	col := Column{Name: name, rows: n}
	// A length prefix is only a claim: reserve no more than the body could
	// hold, one byte per value at least.
	capHint := min(n, budget)
	for row := 0; row < n; row++ {
		if err := col.add(d, row, capHint); err != nil {
			return Column{}, err
		}
	}
	return col, nil
}

func (col *Column) add(d *msgpack.Decoder, row, capHint int) error {
	c, err := d.PeekCode()
	if err != nil {
		return inputErr("column %q: truncated at row %d", col.Name, row)
	}
	bad := func(what string) error {
		return inputErr("column %q row %d: %s", col.Name, row, what)
	}
	switch {
	case c == msgpcode.Nil:
		_ = d.Skip()
		col.setNull(row, capHint)
		return nil
	case c == msgpcode.True || c == msgpcode.False:
		v, err := d.DecodeBool()
		if err != nil {
			return bad("truncated")
		}
		if err := col.want(KindBool, row, capHint); err != nil {
			return err
		}
		col.Bools = append(col.Bools, v)
	case msgpcode.IsFixedNum(c) || c >= msgpcode.Uint8 && c <= msgpcode.Int64:
		if c == msgpcode.Uint64 {
			u, err := d.DecodeUint64()
			if err != nil {
				return bad("truncated")
			}
			if u > math.MaxInt64 {
				return bad(fmt.Sprintf("%d does not fit a signed 64-bit integer", u))
			}
			return col.addInt(int64(u), row, capHint)
		}
		v, err := d.DecodeInt64()
		if err != nil {
			return bad("truncated")
		}
		return col.addInt(v, row, capHint)
	case c == msgpcode.Float || c == msgpcode.Double:
		v, err := d.DecodeFloat64()
		if err != nil {
			return bad("truncated")
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return bad("NaN and infinities are not stored; send null for a missing value")
		}
		if col.Kind == KindInt {
			col.promote()
		}
		if err := col.want(KindFloat, row, capHint); err != nil {
			return err
		}
		col.Floats = append(col.Floats, v)
	case msgpcode.IsString(c):
		v, err := d.DecodeString()
		if err != nil {
			return bad("truncated")
		}
		if !utf8.ValidString(v) {
			return bad("string is not valid UTF-8")
		}
		if err := col.want(KindString, row, capHint); err != nil {
			return err
		}
		col.Strs = append(col.Strs, v)
	default:
		return bad(fmt.Sprintf("unsupported msgpack type 0x%02x (want int, float, string, bool or nil)", c))
	}
	col.markValid()
	return nil
}

func (col *Column) addInt(v int64, row, capHint int) error {
	if col.Kind == KindFloat {
		col.Floats = append(col.Floats, float64(v))
		col.markValid()
		return nil
	}
	if err := col.want(KindInt, row, capHint); err != nil {
		return err
	}
	col.Ints = append(col.Ints, v)
	col.markValid()
	return nil
}

// want fixes the column's kind at its first non-null value, backfilling
// zero values for the nulls before it.
func (col *Column) want(k Kind, row, capHint int) error {
	if col.Kind == k {
		return nil
	}
	if col.Kind != KindNull {
		return inputErr("column %q row %d: a %s among %s values; a column has one type", col.Name, row, k, col.Kind)
	}
	col.Kind = k
	switch k {
	case KindInt:
		col.Ints = make([]int64, row, capHint)
	case KindFloat:
		col.Floats = make([]float64, row, capHint)
	case KindString:
		col.Strs = make([]string, row, capHint)
	case KindBool:
		col.Bools = make([]bool, row, capHint)
	}
	return nil
}

// promote turns an int column into a float one: JSON-minded clients send
// 1 and 1.5 in the same column.
func (col *Column) promote() {
	col.Floats = make([]float64, len(col.Ints), cap(col.Ints))
	for i, v := range col.Ints {
		col.Floats[i] = float64(v)
	}
	col.Ints, col.Kind = nil, KindFloat
}

func (col *Column) setNull(row, capHint int) {
	if col.Null == nil {
		col.Null = make([]bool, row, capHint)
	}
	col.Null = append(col.Null, true)
	switch col.Kind {
	case KindInt:
		col.Ints = append(col.Ints, 0)
	case KindFloat:
		col.Floats = append(col.Floats, 0)
	case KindString:
		col.Strs = append(col.Strs, "")
	case KindBool:
		col.Bools = append(col.Bools, false)
	}
}

func (col *Column) markValid() {
	if col.Null != nil {
		col.Null = append(col.Null, false)
	}
}

// Time units are told apart by magnitude, as Arc does: a timestamp of
// today is about 1.7e9 in seconds, 1.7e12 in ms, 1.7e15 in µs, 1.7e18 in ns.
func unitOf(maxAbs float64) int64 {
	switch {
	case maxAbs < 1e11:
		return 1e9
	case maxAbs < 1e14:
		return 1e6
	case maxAbs < 1e17:
		return 1e3
	}
	return 1
}

func timeColumn(col Column) ([]int64, error) {
	if col.Null != nil {
		return nil, inputErr("column %q: null timestamps are not allowed", TimeColumn)
	}
	out := make([]int64, col.rows)
	switch col.Kind {
	case KindNull: // no rows
	case KindInt:
		var top float64
		for _, v := range col.Ints {
			top = max(top, math.Abs(float64(v)))
		}
		unit := unitOf(top)
		for i, v := range col.Ints {
			if v > math.MaxInt64/unit || v < math.MinInt64/unit {
				return nil, inputErr("column %q row %d: %d is out of range", TimeColumn, i, v)
			}
			out[i] = v * unit
		}
	case KindFloat:
		var top float64
		for _, v := range col.Floats {
			top = max(top, math.Abs(v))
		}
		unit := float64(unitOf(top))
		for i, v := range col.Floats {
			ns := v * unit
			if ns > math.MaxInt64 || ns < math.MinInt64 {
				return nil, inputErr("column %q row %d: %v is out of range", TimeColumn, i, v)
			}
			out[i] = int64(ns)
		}
	default:
		return nil, inputErr("column %q must hold integer or float timestamps, not %s", TimeColumn, col.Kind)
	}
	return out, nil
}
