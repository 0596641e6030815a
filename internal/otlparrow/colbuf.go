package otlparrow

import (
	"encoding/hex"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// The flat columns (strings, numbers, booleans, attribute maps) and the
// lists of numbers (bucket counts, bounds, quantiles) are built in plain Go
// slices and handed to Arrow as buffers when the batch is cut. arrow-go's
// builders check capacity, grow two buffers and set a validity bit on every
// call; appending to a slice is a bounds check and a copy, which made them
// the largest cost of a conversion. The lists of structs (span events and
// links, exemplars) are rare: their structs keep arrow-go builders.
//
// The buffers are allocated by Go, not by the table's allocator, and come
// back to their column when the record is released (see recycler): a
// record batch may outlive the Convert call (the exporter holds it until
// the sidecar acknowledges it), so a column never writes to a buffer it
// handed over before the record lets go of it.

// column is one top-level column of a batch being built.
type column interface {
	// newArray hands the appended rows over as an array; the column
	// starts empty.
	newArray(dt arrow.DataType) arrow.Array
	// reserve makes room for about frac of the rows of the last batch.
	reserve(frac float64)
	// discard drops the appended rows.
	discard()
}

// validity is a column's validity bitmap, made only once a null is
// appended: most columns never hold one.
type validity struct {
	bits  []byte
	nulls int
}

// add records whether row i (the next one) is valid.
func (v *validity) add(i int, valid bool) {
	if v.bits == nil {
		if valid {
			return
		}
		v.start(i)
	} else if i/8 == len(v.bits) {
		v.bits = append(v.bits, 0)
	}
	if valid {
		v.bits[i/8] |= 1 << (i % 8)
	} else {
		v.nulls++
	}
}

// start makes the bitmap at the first null, row i: every row before it
// is valid. Bits from row i on are zero, and stay zero until their row is
// added.
func (v *validity) start(i int) {
	v.bits = make([]byte, i/8, i/8+64)
	for j := range v.bits {
		v.bits[j] = 0xFF
	}
	v.bits = append(v.bits, byte(1)<<(i%8)-1)
}

// addRepeat records n rows from row i on as valid or null, a byte at a
// time: the absent columns of a metric type take their nulls in runs.
func (v *validity) addRepeat(i, n int, valid bool) {
	if n <= 0 || (v.bits == nil && valid) {
		return
	}
	if v.bits == nil {
		v.start(i)
	}
	if need := (i + n + 7) / 8; need > len(v.bits) {
		v.bits = append(v.bits, make([]byte, need-len(v.bits))...)
	}
	if !valid {
		v.nulls += n // their bits are zero already
		return
	}
	for ; n > 0 && i%8 != 0; i, n = i+1, n-1 {
		v.bits[i/8] |= 1 << (i % 8)
	}
	for ; n >= 8; i, n = i+8, n-8 {
		v.bits[i/8] = 0xFF
	}
	for ; n > 0; i, n = i+1, n-1 {
		v.bits[i/8] |= 1 << (i % 8)
	}
}

func (v *validity) buffer() *memory.Buffer {
	if v.bits == nil {
		return nil
	}
	return memory.NewBufferBytes(v.bits)
}

func (v *validity) reset() { *v = validity{} }

// sizeFor scales a length of the last batch by frac.
func sizeFor(n int, frac float64) int { return int(float64(n)*frac) + 1 }

// strCol builds a string column.
type strCol struct {
	offsets []int32 // one more than rows: offsets[0] = 0
	data    []byte
	valid   validity
	lastN   int // rows of the last batch
	lastLen int // data bytes of the last batch
	offR    recycler[int32]
	dataR   recycler[byte]
	// unchecked: rows appended by appendValidUTF8 since the last cut,
	// checked in one pass over the column when it is cut.
	unchecked bool
}

func newStrCol() *strCol { return &strCol{offsets: []int32{0}} }

func (c *strCol) rows() int { return len(c.offsets) - 1 }

// The appends below grow a slice explicitly and then reslice it in place:
// storing a slice that append returned writes its pointer back into the
// heap-allocated column, and with the garbage the collector frees between
// batches it is often marking, so every such store paid a write barrier
// (a fifth of a conversion's CPU). A reslice of the same slice stores only
// its length.

// extend extends *s by n elements and returns them; the pointer in *s is
// rewritten only when the slice grows. extend and push are written for the
// inliner: in the slices.Grow form their cost (73) pushed strCol.room over
// the budget of 80, and room is called per value.
func extend[T any](s *[]T, n int) []T {
	l := len(*s)
	if cap(*s)-l < n {
		*s = append(*s, make([]T, n)...)[:l]
	}
	*s = (*s)[:l+n]
	return (*s)[l:]
}

// push is *s = append(*s, v) that rewrites the pointer only when it grows.
func push[T any](s *[]T, v T) {
	n := len(*s)
	if n == cap(*s) {
		*s = append(*s, v)[:n]
	}
	*s = (*s)[:n+1]
	(*s)[n] = v
}

// room extends c.data by n bytes and returns them.
func (c *strCol) room(n int) []byte { return extend(&c.data, n) }

// end closes the row whose bytes were appended to c.data.
func (c *strCol) end() {
	if c.valid.bits != nil {
		c.valid.add(c.rows(), true)
	}
	push(&c.offsets, int32(len(c.data)))
}

func (c *strCol) append(b []byte) {
	copy(c.room(len(b)), b)
	c.end()
}

func (c *strCol) appendString(s string) {
	copy(c.room(len(s)), s)
	c.end()
}

// appendValidUTF8 appends s, whose invalid UTF-8 is replaced when the
// column is cut (Parquet strings must be UTF-8): one check of the whole
// column costs less than a call per value, most of them short or empty.
func (c *strCol) appendValidUTF8(s string) {
	c.unchecked = true
	c.appendString(s)
}

// makeValid replaces invalid UTF-8 in every row, as schema.AppendValidUTF8
// does per value; rows already valid come out unchanged.
func (c *strCol) makeValid() {
	c.unchecked = false
	if c.validFrom(0) {
		return
	}
	old := c.data
	data := make([]byte, 0, len(old)+len(old)/2)
	start := c.offsets[0]
	for i := range c.rows() {
		end := c.offsets[i+1]
		data = schema.AppendValidUTF8(data, string(old[start:end]))
		start = end
		c.offsets[i+1] = int32(len(data))
	}
	c.data = data
}

// validFrom reports whether every row from row first on is valid UTF-8.
// One pass over their bytes, then a look at each row's first byte: valid
// bytes that split a character between two rows are two invalid rows.
func (c *strCol) validFrom(first int) bool {
	offs := c.offsets[first:]
	if !utf8.Valid(c.data[offs[0]:]) {
		return false
	}
	for _, o := range offs[1:] {
		if int(o) < len(c.data) && !utf8.RuneStart(c.data[o]) {
			return false
		}
	}
	return true
}

// appendID appends an id as lowercase hex, or "" for the all-zero id that
// OTLP uses for "absent".
func (c *strCol) appendID(id []byte, empty bool) {
	if !empty {
		hex.Encode(c.room(hex.EncodedLen(len(id))), id)
	}
	c.end()
}

// appendRepeat appends b as n rows.
func (c *strCol) appendRepeat(b []byte, n int) {
	base := len(c.data)
	fillRepeat(c.room(len(b)*n), b)
	c.valid.addRepeat(c.rows(), n, true)
	offs := c.grow(n)
	for i := range offs {
		offs[i] = int32(base + (i+1)*len(b))
	}
}

// appendNullRepeat appends n null rows.
func (c *strCol) appendNullRepeat(n int) {
	c.valid.addRepeat(c.rows(), n, false)
	end := int32(len(c.data))
	for i, offs := 0, c.grow(n); i < len(offs); i++ {
		offs[i] = end
	}
}

// grow extends c.offsets by n and returns the new slots.
func (c *strCol) grow(n int) []int32 { return extend(&c.offsets, n) }

// appendPackedRepeat appends the strings of a packed map n times.
func (c *strCol) appendPackedRepeat(data []byte, ends []int32, n int) {
	if len(ends) == 0 {
		return
	}
	base := int32(len(c.data))
	fillRepeat(c.room(len(data)*n), data)
	c.valid.addRepeat(c.rows(), len(ends)*n, true)
	offs := c.grow(len(ends) * n)
	for r := range n {
		o := offs[r*len(ends) : (r+1)*len(ends)]
		for i, e := range ends {
			o[i] = base + e
		}
		base += int32(len(data))
	}
}

// fillRepeat fills dst with copies of b; len(dst) is a multiple of len(b).
// Each copy doubles what is filled, so a long run costs a few large copies.
func fillRepeat(dst, b []byte) {
	if len(dst) == 0 {
		return
	}
	k := copy(dst, b)
	for k < len(dst) {
		k += copy(dst[k:], dst[:k])
	}
}

// value returns the bytes of row i.
func (c *strCol) value(i int) []byte { return c.data[c.offsets[i]:c.offsets[i+1]] }

// truncate drops the rows from rows on, of a column that holds no nulls.
func (c *strCol) truncate(rows int) {
	c.offsets = c.offsets[:rows+1]
	c.data = c.data[:c.offsets[rows]]
}

func (c *strCol) appendNull() {
	c.valid.add(c.rows(), false)
	push(&c.offsets, int32(len(c.data)))
}

func (c *strCol) arrayData(dt arrow.DataType) arrow.ArrayData {
	if c.unchecked {
		c.makeValid()
	}
	if len(c.data) > math.MaxInt32 {
		panic(fmt.Sprintf("otlparrow: string column of %d bytes, over Arrow's 2 GiB", len(c.data)))
	}
	n := c.rows()
	d := newData(dt, n, []*memory.Buffer{
		c.valid.buffer(),
		c.offR.buffer(c.offsets),
		c.dataR.buffer(c.data),
	}, nil, c.valid.nulls)
	c.lastN, c.lastLen = n, len(c.data)
	c.offsets, c.data = []int32{0}, nil
	c.valid.reset()
	return d
}

func (c *strCol) newArray(dt arrow.DataType) arrow.Array { return makeArray(c.arrayData(dt)) }

func (c *strCol) reserve(frac float64) {
	if n := sizeFor(c.lastN, frac) + 1; cap(c.offsets) < n {
		c.offsets = append(c.offR.get(n), c.offsets...)
	}
	if n := sizeFor(c.lastLen, frac); cap(c.data) < n {
		c.data = append(c.dataR.get(n), c.data...)
	}
}

func (c *strCol) discard() {
	c.unchecked = false
	c.offsets, c.data = c.offsets[:1], c.data[:0]
	c.valid.reset()
}

// newData is array.NewData that hands it the buffers: NewData retains
// them, and the recycled ones count references.
func newData(dt arrow.DataType, n int, bufs []*memory.Buffer, children []arrow.ArrayData, nulls int) *array.Data {
	d := array.NewData(dt, n, bufs, children, nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	return d
}

// makeArray makes the array of d and drops d's own reference.
func makeArray(d arrow.ArrayData) arrow.Array {
	defer d.Release()
	return array.MakeFromData(d)
}

// numCol builds an int64, timestamp or float64 column.
type numCol[T int64 | float64] struct {
	vals  []T
	valid validity
	lastN int
	valsR recycler[T]
}

func (c *numCol[T]) append(v T) {
	if c.valid.bits != nil {
		c.valid.add(len(c.vals), true)
	}
	c.push(v)
}

// appendRepeat appends v n times.
func (c *numCol[T]) appendRepeat(v T, n int) {
	c.valid.addRepeat(len(c.vals), n, true)
	for i, vals := 0, extend(&c.vals, n); i < len(vals); i++ {
		vals[i] = v
	}
}

// appendNullRepeat appends n null rows; their values are zero, as
// appendNull's, so that a batch converted again has the same bytes.
func (c *numCol[T]) appendNullRepeat(n int) {
	c.valid.addRepeat(len(c.vals), n, false)
	clear(extend(&c.vals, n))
}

func (c *numCol[T]) appendNull() {
	c.valid.add(len(c.vals), false)
	c.push(0)
}

// push is c.vals = append(c.vals, v) without the write barrier (see extend).
func (c *numCol[T]) push(v T) { push(&c.vals, v) }

func (c *numCol[T]) arrayData(dt arrow.DataType) *array.Data {
	d := newData(dt, len(c.vals), []*memory.Buffer{c.valid.buffer(), c.valsR.buffer(c.vals)}, nil, c.valid.nulls)
	c.lastN, c.vals = len(c.vals), nil
	c.valid.reset()
	return d
}

func (c *numCol[T]) newArray(dt arrow.DataType) arrow.Array { return makeArray(c.arrayData(dt)) }

func (c *numCol[T]) reserve(frac float64) {
	if n := sizeFor(c.lastN, frac); cap(c.vals) < n {
		c.vals = append(c.valsR.get(n), c.vals...)
	}
}

func (c *numCol[T]) discard() {
	c.vals = c.vals[:0]
	c.valid.reset()
}

// boolCol builds a boolean column of no nulls.
type boolCol struct {
	bits []byte
	n    int
}

func (c *boolCol) append(v bool) {
	if c.n/8 == len(c.bits) {
		c.bits = append(c.bits, 0)
	}
	if v {
		c.bits[c.n/8] |= 1 << (c.n % 8)
	}
	c.n++
}

// appendRepeat appends v n times.
func (c *boolCol) appendRepeat(v bool, n int) {
	for range n {
		c.append(v)
	}
}

func (c *boolCol) newArray(dt arrow.DataType) arrow.Array {
	d := array.NewData(dt, c.n, []*memory.Buffer{nil, memory.NewBufferBytes(c.bits)}, nil, 0, 0)
	c.bits, c.n = make([]byte, 0, len(c.bits)), 0
	return makeArray(d)
}

func (c *boolCol) reserve(float64) {}

func (c *boolCol) discard() { c.bits, c.n = c.bits[:0], 0 }

// mapCol builds a map<string, string> column of no null maps and no null
// items: an attribute map.
type mapCol struct {
	offsets     []int32 // entry offsets, one more than rows
	keys, items strCol
	lastN       int
	offR        recycler[int32]
}

func newMapCol() *mapCol {
	return &mapCol{offsets: []int32{0}, keys: strCol{offsets: []int32{0}}, items: strCol{offsets: []int32{0}}}
}

// add appends one entry to the row being built.
func (c *mapCol) add(key, item []byte) {
	c.keys.append(key)
	c.items.append(item)
}

// end closes the row whose entries were added.
func (c *mapCol) end() { push(&c.offsets, int32(c.keys.rows())) }

// packedMap is an attribute map laid out as its column's children lay it
// out, so that repeating it for the rows of a resource or scope costs a few
// copies and an offset loop per child instead of an append per entry.
type packedMap struct {
	keys, items       []byte
	keyEnds, itemEnds []int32 // relative to keys and items
}

func (p *packedMap) reset() {
	p.keys, p.items, p.keyEnds, p.itemEnds = p.keys[:0], p.items[:0], p.keyEnds[:0], p.itemEnds[:0]
}

func (p *packedMap) add(key, item []byte) {
	p.keys = append(p.keys, key...)
	p.keyEnds = append(p.keyEnds, int32(len(p.keys)))
	p.items = append(p.items, item...)
	p.itemEnds = append(p.itemEnds, int32(len(p.items)))
}

// appendPackedRepeat appends n rows holding p.
func (c *mapCol) appendPackedRepeat(p *packedMap, n int) {
	first := c.keys.rows()
	c.keys.appendPackedRepeat(p.keys, p.keyEnds, n)
	c.items.appendPackedRepeat(p.items, p.itemEnds, n)
	for i, offs := 0, extend(&c.offsets, n); i < len(offs); i++ {
		offs[i] = int32(first + (i+1)*len(p.keyEnds))
	}
}

func (c *mapCol) newArray(dt arrow.DataType) arrow.Array {
	mt := dt.(*arrow.MapType)
	entries := c.keys.rows()
	keys := c.keys.arrayData(mt.KeyType())
	defer keys.Release()
	items := c.items.arrayData(mt.ItemType())
	defer items.Release()
	st := array.NewData(mt.Elem(), entries, []*memory.Buffer{nil}, []arrow.ArrayData{keys, items}, 0, 0)
	defer st.Release()
	n := len(c.offsets) - 1
	d := newData(dt, n, []*memory.Buffer{nil, c.offR.buffer(c.offsets)},
		[]arrow.ArrayData{st}, 0)
	c.lastN, c.offsets = n, []int32{0}
	return makeArray(d)
}

func (c *mapCol) reserve(frac float64) {
	if n := sizeFor(c.lastN, frac) + 1; cap(c.offsets) < n {
		c.offsets = append(c.offR.get(n), c.offsets...)
	}
	c.keys.reserve(frac)
	c.items.reserve(frac)
}

func (c *mapCol) discard() {
	c.offsets = c.offsets[:1]
	c.keys.discard()
	c.items.discard()
}

// listCol builds a list<int64> or list<float64> column of no null lists
// and no null elements: bucket counts, bounds and quantiles.
type listCol[T int64 | float64] struct {
	offsets []int32 // element offsets, one more than rows
	elems   numCol[T]
	lastN   int
	offR    recycler[int32]
}

func newListCol[T int64 | float64]() *listCol[T] { return &listCol[T]{offsets: []int32{0}} }

// end closes the row whose elements were appended to c.elems.
func (c *listCol[T]) end() { push(&c.offsets, int32(len(c.elems.vals))) }

// endRepeat appends n empty rows.
func (c *listCol[T]) endRepeat(n int) { fillInt32(extend(&c.offsets, n), int32(len(c.elems.vals))) }

func (c *listCol[T]) newArray(dt arrow.DataType) arrow.Array {
	elems := c.elems.arrayData(dt.(*arrow.ListType).Elem())
	defer elems.Release()
	n := len(c.offsets) - 1
	d := newData(dt, n, []*memory.Buffer{nil, c.offR.buffer(c.offsets)}, []arrow.ArrayData{elems}, 0)
	c.lastN, c.offsets = n, []int32{0}
	return makeArray(d)
}

func (c *listCol[T]) reserve(frac float64) {
	if n := sizeFor(c.lastN, frac) + 1; cap(c.offsets) < n {
		c.offsets = append(c.offR.get(n), c.offsets...)
	}
	c.elems.reserve(frac)
}

func (c *listCol[T]) discard() {
	c.offsets = c.offsets[:1]
	c.elems.discard()
}

// structListCol builds a list<struct> column of no null lists: span events
// and links, exemplars. The structs are rare and built by an arrow-go
// builder; the list's offsets are a slice, as in listCol, because nearly
// every row appends an empty list and ListBuilder.Append per row, with
// its buffers allocated anew every batch, cost a twentieth of a span.
type structListCol struct {
	offsets []int32 // struct offsets, one more than rows
	elems   *array.StructBuilder
	lastN   int
	offR    recycler[int32]
	// empty is the elements of a batch without structs, built once and
	// shared by every such batch (arrays are immutable): the builder makes
	// a child array of every field and works out the struct's type anew
	// each time, a tenth of a span's conversion for links that are nearly
	// always absent.
	empty arrow.Array
}

func newStructListCol(elems *array.StructBuilder) *structListCol {
	return &structListCol{offsets: []int32{0}, elems: elems}
}

// end closes the row whose structs were appended to c.elems.
func (c *structListCol) end() { push(&c.offsets, int32(c.elems.Len())) }

// endRepeat appends n empty rows.
func (c *structListCol) endRepeat(n int) { fillInt32(extend(&c.offsets, n), int32(c.elems.Len())) }

func fillInt32(s []int32, v int32) {
	for i := range s {
		s[i] = v
	}
}

func (c *structListCol) newArray(dt arrow.DataType) arrow.Array {
	elems := c.emptyElems()
	if elems == nil {
		elems = c.elems.NewArray()
	}
	defer elems.Release()
	n := len(c.offsets) - 1
	d := newData(dt, n, []*memory.Buffer{nil, c.offR.buffer(c.offsets)}, []arrow.ArrayData{elems.Data()}, 0)
	c.lastN, c.offsets = n, []int32{0}
	return makeArray(d)
}

func (c *structListCol) reserve(frac float64) {
	if n := sizeFor(c.lastN, frac) + 1; cap(c.offsets) < n {
		c.offsets = append(c.offR.get(n), c.offsets...)
	}
}

// emptyElems returns the shared empty elements, retained, when no struct
// was appended since the last batch, and nil otherwise.
func (c *structListCol) emptyElems() arrow.Array {
	if c.elems.Len() != 0 {
		return nil
	}
	if c.empty == nil {
		c.empty = c.elems.NewArray()
	}
	c.empty.Retain()
	return c.empty
}

func (c *structListCol) discard() {
	c.offsets = c.offsets[:1]
	if c.elems.Len() != 0 {
		c.elems.NewArray().Release()
	}
}

func (c *structListCol) release() {
	c.elems.Release()
	if c.empty != nil {
		c.empty.Release()
		c.empty = nil
	}
}

// builderCol is a column built by an arrow-go builder: the nested lists.
type builderCol struct{ b array.Builder }

func (c builderCol) newArray(arrow.DataType) arrow.Array { return c.b.NewArray() }
func (c builderCol) reserve(float64)                     {} // table.reserve sizes the builders
func (c builderCol) discard()                            { c.b.NewArray().Release() }
