package otlparrow

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// attrCols are the two map columns of one attribute set.
type attrCols struct{ text, types *mapCol }

// nestedAttrCols are the two map fields of one attribute set in a struct of
// a list (span events and links, exemplars), built by arrow-go builders.
type nestedAttrCols struct {
	text, types *array.MapBuilder
	// A map's entries are a struct of key and item. Appending to the struct
	// per entry keeps it level with its children; otherwise MapBuilder.Append
	// catches up with Reserve, which reserves the children's lengths again
	// and makes them outgrow what table.reserve sized them for.
	textEntries, typesEntries *array.StructBuilder
	textKey, textVal          *array.BinaryBuilder
	typesKey, typesVal        *array.BinaryBuilder
}

func newNestedAttrCols(text, types *array.MapBuilder) nestedAttrCols {
	return nestedAttrCols{
		text: text, types: types,
		textEntries: text.ValueBuilder().(*array.StructBuilder), typesEntries: types.ValueBuilder().(*array.StructBuilder),
		textKey: text.KeyBuilder().(*array.StringBuilder).BinaryBuilder, textVal: text.ItemBuilder().(*array.StringBuilder).BinaryBuilder,
		typesKey: types.KeyBuilder().(*array.StringBuilder).BinaryBuilder, typesVal: types.ItemBuilder().(*array.StringBuilder).BinaryBuilder,
	}
}

// rendered is an attribute set rendered once (key, text, type tag) into one
// byte arena: a resource's attributes are rendered once per resource and
// only copied for each of its rows, and the arena is reused across sets.
type rendered struct {
	buf     []byte
	entries []renderedEntry
	hashes  []keyHash // scratch of dropDuplicateKeys
}

type renderedEntry struct {
	key, text, tag span // tag.end < 0: the value needs no type tag
	typ            pcommon.ValueType
	num            int64 // the value of an int
}

// span is a byte range of rendered.buf.
type span struct{ start, end int }

func (r *rendered) reset(m pcommon.Map) {
	// Locals, stored back once: storing an appended slice into r per
	// entry pays a write barrier whenever the collector is marking.
	buf, entries := r.buf[:0], r.entries[:0]
	for k, v := range m.All() {
		e := renderedEntry{typ: v.Type()}
		e.key.start = len(buf)
		buf = schema.AppendValidUTF8(buf, k)
		e.key.end = len(buf)
		if e.typ == pcommon.ValueTypeStr {
			buf = schema.AppendValidUTF8(buf, v.Str())
			e.text = span{e.key.end, len(buf)}
			e.tag = span{len(buf), -1}
			entries = append(entries, e)
			continue
		}
		if e.typ == pcommon.ValueTypeInt {
			e.num = v.Int()
		}
		buf = schema.AppendText(buf, v)
		e.text = span{e.key.end, len(buf)}
		var tagged bool
		buf, tagged = schema.AppendTypeTag(buf, v)
		e.tag = span{e.text.end, len(buf)}
		if !tagged {
			e.tag.end = -1
		}
		entries = append(entries, e)
	}
	r.buf, r.entries = buf, entries
	r.dropDuplicateKeys()
}

// dropDuplicateKeys keeps the first of entries with equal keys, the one
// pcommon.Map.Get finds. Map keys must be unique for query engines, and
// replacing invalid UTF-8 can make two keys equal (the wire can also carry
// duplicates that pdata keeps).
func (r *rendered) dropDuplicateKeys() {
	var found bool
	if len(r.entries) <= smallSet {
		found = r.markDuplicatesPairwise()
	} else {
		found = r.markDuplicatesHashed()
	}
	if found {
		r.entries = slices.DeleteFunc(r.entries, func(e renderedEntry) bool { return e.key.start < 0 })
	}
}

// smallSet is the size up to which comparing every pair of keys is cheaper
// than hashing and sorting them.
const smallSet = 16

// markDuplicatesPairwise marks (key.start = -1) every entry whose key an
// earlier entry has.
func (r *rendered) markDuplicatesPairwise() bool {
	found := false
	for j := 1; j < len(r.entries); j++ {
		kj := r.bytes(r.entries[j].key)
		for i := range j {
			if e := &r.entries[i]; e.key.start >= 0 && len(kj) == e.key.end-e.key.start && string(kj) == string(r.bytes(e.key)) {
				r.entries[j].key.start = -1
				found = true
				break
			}
		}
	}
	return found
}

type keyHash struct {
	hash uint64
	i    int
}

// markDuplicatesHashed does what markDuplicatesPairwise does in
// O(n log n): sort key hashes, then compare keys only within runs of equal
// hashes, in index order.
func (r *rendered) markDuplicatesHashed() bool {
	r.hashes = r.hashes[:0]
	for i := range r.entries {
		r.hashes = append(r.hashes, keyHash{fnv1a(r.bytes(r.entries[i].key)), i})
	}
	slices.SortFunc(r.hashes, func(a, b keyHash) int {
		return cmp.Or(cmp.Compare(a.hash, b.hash), cmp.Compare(a.i, b.i))
	})
	found := false
	for run := 0; run < len(r.hashes); {
		end := run + 1
		for end < len(r.hashes) && r.hashes[end].hash == r.hashes[run].hash {
			end++
		}
		found = r.markDuplicates(r.hashes[run:end]) || found
		run = end
	}
	return found
}

// markDuplicates marks, in a run of entries in index order, every entry
// whose key an earlier one has.
func (r *rendered) markDuplicates(run []keyHash) bool {
	found := false
	for j := 1; j < len(run); j++ {
		for k := range j {
			a, b := &r.entries[run[k].i], &r.entries[run[j].i]
			if a.key.start >= 0 && bytes.Equal(r.bytes(a.key), r.bytes(b.key)) {
				b.key.start = -1
				found = true
				break
			}
		}
	}
	return found
}

func fnv1a(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

func (r *rendered) bytes(s span) []byte { return r.buf[s.start:s.end] }

func (r *rendered) appendTo(c attrCols) {
	for i := range r.entries {
		e := &r.entries[i]
		c.text.add(r.bytes(e.key), r.bytes(e.text))
		if e.tag.end >= 0 {
			c.types.add(r.bytes(e.key), r.bytes(e.tag))
		}
	}
	c.text.end()
	c.types.end()
}

// packedAttrs is a rendered attribute set packed for repetition.
type packedAttrs struct{ text, types packedMap }

func (r *rendered) pack(p *packedAttrs) {
	p.text.reset()
	p.types.reset()
	for i := range r.entries {
		e := &r.entries[i]
		p.text.add(r.bytes(e.key), r.bytes(e.text))
		if e.tag.end >= 0 {
			p.types.add(r.bytes(e.key), r.bytes(e.tag))
		}
	}
}

// appendRepeat appends n rows holding p.
func (p *packedAttrs) appendRepeat(c attrCols, n int) {
	c.text.appendPackedRepeat(&p.text, n)
	c.types.appendPackedRepeat(&p.types, n)
}

func (r *rendered) appendToNested(c nestedAttrCols) {
	c.text.Append(true)
	c.types.Append(true)
	for i := range r.entries {
		e := &r.entries[i]
		c.textEntries.Append(true)
		c.textKey.Append(r.bytes(e.key))
		c.textVal.Append(r.bytes(e.text))
		if e.tag.end >= 0 {
			c.typesEntries.Append(true)
			c.typesKey.Append(r.bytes(e.key))
			c.typesVal.Append(r.bytes(e.tag))
		}
	}
}

// find returns the entry of the first of keys present, as semconv.go
// promises, or nil.
func (r *rendered) find(keys []string) *renderedEntry {
	for _, k := range keys {
		for i := range r.entries {
			if string(r.bytes(r.entries[i].key)) == k {
				return &r.entries[i]
			}
		}
	}
	return nil
}

// appendEntryText appends the text of e, or null when e is nil.
func (r *rendered) appendEntryText(c *strCol, e *renderedEntry) {
	if e != nil {
		c.append(r.bytes(e.text))
	} else {
		c.appendNull()
	}
}

// appendEntryTextRepeat appends the text of e, or null when e is nil, n
// times.
func (r *rendered) appendEntryTextRepeat(c *strCol, e *renderedEntry, n int) {
	if e != nil {
		c.appendRepeat(r.bytes(e.text), n)
	} else {
		c.appendNullRepeat(n)
	}
}

// appendPromotedInt appends the first of keys present if it is an int or a
// string holding a decimal int64, else null.
func (r *rendered) appendPromotedInt(b *numCol[int64], keys []string) {
	e := r.find(keys)
	switch {
	case e == nil:
		b.appendNull()
	case e.typ == pcommon.ValueTypeInt:
		b.append(e.num)
	case e.typ == pcommon.ValueTypeStr:
		if n, ok := parseInt(r.bytes(e.text)); ok {
			b.append(n)
		} else {
			b.appendNull()
		}
	default:
		b.appendNull()
	}
}

// parseInt parses what strconv.ParseInt(s, 10, 64) accepts; it exists
// because ParseInt allocates its error, and a string status code that is not
// a number ("OK") would then allocate on every row.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		if n > (1<<63)/10 {
			return 0, false
		}
		if n = n*10 + uint64(ch-'0'); n > 1<<63 {
			return 0, false
		}
	}
	if neg {
		return -int64(n), true // -(1<<63) wraps to itself: MinInt64
	}
	if n == 1<<63 {
		return 0, false
	}
	return int64(n), true
}
