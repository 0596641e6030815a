package arcmsgpack

import (
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// DefaultMaxBytes is the default Budget of one request: what its decoded
// columns may take in memory.
const DefaultMaxBytes = 64 << 20

// ErrTooLarge marks a request whose decoded columns would take more memory
// than its Budget allows: the client's fault, answered with 413.
var ErrTooLarge = errors.New("request too large")

// Per-object charges: a column's and a measurement's own structures and
// map entries, so that many tiny columns cannot hide behind a small body.
const (
	columnCost      = int64(unsafe.Sizeof(Column{})) + 64
	measurementCost = int64(unsafe.Sizeof(Measurement{})) + 64
	stringCost      = int64(unsafe.Sizeof(""))
)

// Budget bounds the memory one request's decoded columns take. Every slice
// the decoder grows is charged here before it is allocated, so a length
// prefix that claims billions of values, or a small body of one-byte values
// that widen to eight, is refused before it costs memory. The Arrow record
// is built on the columns' own slices (plus validity bitmaps), so a
// request's peak heap is a small multiple of what the budget counts (the
// columns and record together, then the IPC copy). It is not safe for
// concurrent use: one request, one budget.
type Budget struct {
	limit, used int64
}

// NewBudget returns a budget of limit bytes; DefaultMaxBytes if limit <= 0.
func NewBudget(limit int64) *Budget {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	return &Budget{limit: limit}
}

// Used is what has been charged so far.
func (b *Budget) Used() int64 { return b.used }

// Limit is the budget's size.
func (b *Budget) Limit() int64 { return b.limit }

// Charge takes n bytes from the budget, for memory a caller holds for
// the request besides its columns; ErrTooLarge past the limit.
func (b *Budget) Charge(n int64) error { return b.take(n) }

// Release gives back n bytes charged with Charge, once the caller no
// longer holds them.
func (b *Budget) Release(n int64) { b.used = max(b.used-n, 0) }

func (b *Budget) take(n int64) error {
	if n > b.limit-b.used {
		return fmt.Errorf("%w: its decoded columns take more than %d bytes of memory", ErrTooLarge, b.limit)
	}
	b.used += n
	return nil
}

// grow makes room for one more value, charging the new array before it is
// allocated. hint is the number of values the column says it holds (0 when
// unknown): it sizes the array at once when the budget can afford all of
// it, so an honest column is allocated exactly once; otherwise capacity
// doubles, and a lying prefix costs no more than the values really sent.
// The whole new array is charged, the one it replaces included, so the
// budget bounds what a request allocates, garbage and all.
func grow[T any](b *Budget, s []T, hint int) ([]T, error) {
	if len(s) < cap(s) {
		return s, nil
	}
	var zero T
	size := int64(unsafe.Sizeof(zero))
	n := max(2*cap(s), 8)
	if hint > len(s) && int64(hint)*size <= b.limit-b.used {
		n = hint
	} else if hint > len(s) {
		n = min(n, hint)
	}
	if err := b.take(int64(n) * size); err != nil {
		return s, err
	}
	out := make([]T, len(s), n)
	copy(out, s)
	return out, nil
}

func push[T any](b *Budget, s []T, v T, hint int) ([]T, error) {
	s, err := grow(b, s, hint)
	if err != nil {
		return s, err
	}
	return append(s, v), nil
}

// extend appends n zero values, charged before they are allocated.
func extend[T any](b *Budget, s []T, n, hint int) ([]T, error) {
	if n == 0 {
		return s, nil
	}
	if len(s)+n > cap(s) {
		var zero T
		size := int64(unsafe.Sizeof(zero))
		want := len(s) + n
		if hint > want && int64(hint)*size <= b.limit-b.used {
			want = hint
		}
		if err := b.take(int64(want) * size); err != nil {
			return s, err
		}
		out := make([]T, len(s), want)
		copy(out, s)
		s = out
	}
	s = s[:len(s)+n]
	clear(s[len(s)-n:])
	return s, nil
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
// per Kind; Null marks null rows (nil when there are none). Strings are
// kept as Arrow keeps them, one byte slice and the offsets into it (value
// i is Data[Offsets[i]:Offsets[i+1]]), so that a payload's strings are
// read straight into the buffer the record is built on: no string is
// allocated per value, and none is copied again.
type Column struct {
	Name    string
	Kind    Kind
	Ints    []int64
	Floats  []float64
	Bools   []bool
	Offsets []int32 // KindString: rows+1 offsets into Data
	Data    []byte  // KindString: the values' bytes, back to back
	Null    []bool
	rows    int
	hint    int // rows the payload announced, 0 when unknown
	budget  *Budget
}

// NewColumn starts an empty column whose appends are charged to b.
func NewColumn(name string, b *Budget) (Column, error) {
	if err := b.take(columnCost + int64(len(name))); err != nil {
		return Column{}, err
	}
	return Column{Name: name, budget: b}, nil
}

// Rows is the number of values appended so far, nulls included.
func (col *Column) Rows() int { return col.rows }

// Str is the string of row i of a KindString column.
func (col *Column) Str(i int) string {
	return string(col.Data[col.Offsets[i]:col.Offsets[i+1]])
}

// Strings returns the values of a KindString column ("" for nulls).
func (col *Column) Strings() []string {
	if col.Kind != KindString {
		return nil
	}
	out := make([]string, col.rows)
	for i := range out {
		out[i] = col.Str(i)
	}
	return out
}

// offsetsHint is the hint of the Offsets slice: one more than the rows.
func (col *Column) offsetsHint() int {
	if col.hint == 0 {
		return 0
	}
	return col.hint + 1
}

func (col *Column) bad(format string, args ...any) error {
	return col.badAt(col.rows, format, args...)
}

func (col *Column) badAt(row int, format string, args ...any) error {
	return inputErr("column %q row %d: %s", col.Name, row, fmt.Sprintf(format, args...))
}

// AppendNull appends a null.
func (col *Column) AppendNull() error {
	var err error
	if col.Null == nil {
		col.Null, err = extend(col.budget, col.Null, col.rows, col.hint)
		if err != nil {
			return err
		}
	}
	if col.Null, err = push(col.budget, col.Null, true, col.hint); err != nil {
		return err
	}
	switch col.Kind {
	case KindInt:
		col.Ints, err = push(col.budget, col.Ints, 0, col.hint)
	case KindFloat:
		col.Floats, err = push(col.budget, col.Floats, 0, col.hint)
	case KindString:
		col.Offsets, err = push(col.budget, col.Offsets, int32(len(col.Data)), col.offsetsHint())
	case KindBool:
		col.Bools, err = push(col.budget, col.Bools, false, col.hint)
	}
	if err != nil {
		return err
	}
	col.rows++
	return nil
}

// AppendInt appends an integer; in a float column it becomes a float.
func (col *Column) AppendInt(v int64) error {
	if col.Kind == KindFloat {
		return col.AppendFloat(float64(v))
	}
	if col.Kind != KindInt {
		if err := col.want(KindInt); err != nil {
			return err
		}
	}
	if len(col.Ints) == cap(col.Ints) {
		var err error
		if col.Ints, err = grow(col.budget, col.Ints, col.hint); err != nil {
			return err
		}
	}
	col.Ints = append(col.Ints, v)
	return col.valid()
}

// AppendFloat appends a float; an integer column before it becomes a float
// column (JSON-minded clients send 1 and 1.5 in the same column).
func (col *Column) AppendFloat(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return col.bad("NaN and infinities are not stored; send null for a missing value")
	}
	if col.Kind == KindInt {
		if err := col.promote(); err != nil {
			return err
		}
	}
	if err := col.want(KindFloat); err != nil {
		return err
	}
	var err error
	if col.Floats, err = push(col.budget, col.Floats, v, col.hint); err != nil {
		return err
	}
	return col.valid()
}

// AppendString appends a string, which must be valid UTF-8; its bytes are
// charged to the budget.
func (col *Column) AppendString(v string) error {
	if !utf8.ValidString(v) {
		return col.bad("string is not valid UTF-8")
	}
	return col.appendString(v)
}

// appendString appends a string known to be valid UTF-8.
func (col *Column) appendString(v string) error {
	start, err := col.reserveString(len(v))
	if err != nil {
		return err
	}
	copy(col.Data[start:], v)
	return nil
}

// reserveString appends a string of n bytes to a string column and
// returns where its bytes go in Data, for the caller to fill; the growth
// of Data and Offsets is charged to the budget first.
func (col *Column) reserveString(n int) (int, error) {
	if col.Kind != KindString {
		if err := col.want(KindString); err != nil {
			return 0, err
		}
	}
	start := len(col.Data)
	if int64(start)+int64(n) > math.MaxInt32 {
		return 0, fmt.Errorf("%w: column %q holds more than %d bytes of strings", ErrTooLarge, col.Name, math.MaxInt32)
	}
	if start+n > cap(col.Data) {
		var err error
		if col.Data, err = growData(col.budget, col.Data, n, col.rows, col.hint); err != nil {
			return 0, err
		}
	}
	col.Data = col.Data[:start+n]
	if len(col.Offsets) == cap(col.Offsets) {
		var err error
		if col.Offsets, err = grow(col.budget, col.Offsets, col.offsetsHint()); err != nil {
			return 0, err
		}
	}
	col.Offsets = append(col.Offsets, int32(start+n))
	return start, col.valid()
}

// sizeData gives a column whose values are known to hold n bytes of
// strings (source.stringBytes) room for them all at once, when the budget
// affords it; otherwise Data grows value by value (growData), and the
// value past the budget is the one refused.
func (col *Column) sizeData(n int) error {
	if n <= cap(col.Data)-len(col.Data) || int64(len(col.Data))+int64(n) > math.MaxInt32 ||
		int64(n) > col.budget.limit-col.budget.used {
		return nil
	}
	if err := col.budget.take(int64(len(col.Data) + n)); err != nil {
		return err
	}
	out := make([]byte, len(col.Data), len(col.Data)+n)
	copy(out, col.Data)
	col.Data = out
	return nil
}

// growData makes room for n more bytes of strings in data, the column
// holding rows values of hint announced. When the budget can afford it,
// the new array is sized for every announced value at the average length
// so far, so an honest column grows a few times, not once per doubling;
// otherwise it doubles. The whole new array is charged, as grow does.
func growData(b *Budget, data []byte, n, rows, hint int) ([]byte, error) {
	need := len(data) + n
	size := max(2*cap(data), need, 256)
	if left := hint - rows - 1; left > 0 {
		avg := need / (rows + 1)
		if est := int64(need) + int64(left)*int64(avg+avg/8); est > int64(size) && est <= (b.limit-b.used)/2 && est <= math.MaxInt32 {
			size = int(est)
		}
	}
	if left := b.limit - b.used; int64(size) > left && int64(need) <= left {
		size = need // what remains of the budget may still hold the value
	}
	if err := b.take(int64(size)); err != nil {
		return data, err
	}
	out := make([]byte, len(data), size)
	copy(out, data)
	return out, nil
}

// checkUTF8 checks that every string of a KindString column is valid
// UTF-8, all at once (schema.ValidStrings); it names the first bad row.
func (col *Column) checkUTF8() error {
	if col.Kind != KindString || schema.ValidStrings(col.Data, col.Offsets) {
		return nil
	}
	for i := range col.rows {
		if !utf8.Valid(col.Data[col.Offsets[i]:col.Offsets[i+1]]) {
			return col.badAt(i, "string is not valid UTF-8")
		}
	}
	return nil
}

// AppendBool appends a boolean.
func (col *Column) AppendBool(v bool) error {
	if err := col.want(KindBool); err != nil {
		return err
	}
	var err error
	if col.Bools, err = push(col.budget, col.Bools, v, col.hint); err != nil {
		return err
	}
	return col.valid()
}

func (col *Column) valid() error {
	if col.Null != nil {
		var err error
		if col.Null, err = push(col.budget, col.Null, false, col.hint); err != nil {
			return err
		}
	}
	col.rows++
	return nil
}

// want fixes the column's kind at its first non-null value, backfilling
// zero values (empty strings) for the nulls before it.
func (col *Column) want(k Kind) error {
	if col.Kind == k {
		return nil
	}
	if col.Kind != KindNull {
		return col.bad("a %s among %s values; a column has one type", k, col.Kind)
	}
	col.Kind = k
	var err error
	switch k {
	case KindInt:
		col.Ints, err = extend(col.budget, col.Ints, col.rows, col.hint)
	case KindFloat:
		col.Floats, err = extend(col.budget, col.Floats, col.rows, col.hint)
	case KindString:
		col.Offsets, err = extend(col.budget, col.Offsets, col.rows+1, col.offsetsHint())
	case KindBool:
		col.Bools, err = extend(col.budget, col.Bools, col.rows, col.hint)
	}
	return err
}

// truncate keeps the column's first n rows. Its kind stays: Rows makes a
// column with its first value, so a column whose first value is dropped
// is dropped too (Rows.Discard).
func (col *Column) truncate(n int) {
	if col.rows <= n {
		return
	}
	col.rows = n
	switch col.Kind {
	case KindInt:
		col.Ints = col.Ints[:n]
	case KindFloat:
		col.Floats = col.Floats[:n]
	case KindBool:
		col.Bools = col.Bools[:n]
	case KindString:
		col.Offsets = col.Offsets[:n+1]
		col.Data = col.Data[:col.Offsets[n]]
	}
	if col.Null != nil {
		col.Null = col.Null[:n]
	}
}

// promote turns an int column into a float one.
func (col *Column) promote() error {
	if err := col.budget.take(int64(cap(col.Ints)) * 8); err != nil {
		return err
	}
	col.Floats = make([]float64, len(col.Ints), cap(col.Ints))
	for i, v := range col.Ints {
		col.Floats[i] = float64(v)
	}
	col.Ints, col.Kind = nil, KindFloat
	return nil
}

// Time units are told apart by magnitude, as Arc does: a timestamp of
// today is about 1.7e9 in seconds, 1.7e12 in ms, 1.7e15 in µs, 1.7e18 in ns.
func unitOf(maxAbs float64) time.Duration {
	switch {
	case maxAbs < 1e11:
		return time.Second
	case maxAbs < 1e14:
		return time.Millisecond
	case maxAbs < 1e17:
		return time.Microsecond
	}
	return time.Nanosecond
}

// intTime scales an integer timestamp of the given unit to the stored
// unit (schema.TimestampUnit, microseconds; finer input is truncated).
func intTime(v int64, unit time.Duration) (int64, bool) { return schema.ScaleTimestamp(v, unit) }

// floatTime scales a float timestamp of the given unit to the stored unit.
func floatTime(v float64, unit time.Duration) (int64, bool) {
	return schema.ScaleFloatTimestamp(v, unit)
}

// timeColumn turns a decoded time column into stored timestamps, in place for
// integers: the values are not copied again.
func timeColumn(col Column) ([]int64, error) {
	if col.Null != nil {
		return nil, inputErr("column %q: null timestamps are not allowed", TimeColumn)
	}
	switch col.Kind {
	case KindNull: // no rows
		return []int64{}, nil
	case KindInt:
		var top float64
		for _, v := range col.Ints {
			top = max(top, math.Abs(float64(v)))
		}
		unit := unitOf(top)
		for i, v := range col.Ints {
			ts, ok := intTime(v, unit)
			if !ok {
				return nil, inputErr("column %q row %d: %d is out of range", TimeColumn, i, v)
			}
			col.Ints[i] = ts
		}
		return col.Ints, nil
	case KindFloat:
		var top float64
		for _, v := range col.Floats {
			top = max(top, math.Abs(v))
		}
		unit := unitOf(top)
		if err := col.budget.take(int64(len(col.Floats)) * 8); err != nil {
			return nil, err
		}
		out := make([]int64, len(col.Floats))
		for i, v := range col.Floats {
			ts, ok := floatTime(v, unit)
			if !ok {
				return nil, inputErr("column %q row %d: %v is out of range", TimeColumn, i, v)
			}
			out[i] = ts
		}
		return out, nil
	}
	return nil, inputErr("column %q must hold integer or float timestamps, not %s", TimeColumn, col.Kind)
}
