package otlparrow

import (
	"bytes"
	"cmp"
	"slices"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// A record's own attributes are used once, so they are rendered straight
// into their map columns instead of into a rendered arena first and copied
// from there (the copy was a tenth of a span's conversion). Only when two
// keys turn out equal (pdata keeps duplicates the wire carried, and UTF-8
// repair can make keys equal) is the row taken back and rendered the
// arena's way, which drops them.

// rowEntry is what the promoted columns need of one entry of the row being
// appended; its key and text are entry i of the text map's children.
type rowEntry struct {
	typ pcommon.ValueType
	num int64 // the value of an int
}

// attrRow is the attribute row being appended to an attrCols.
type attrRow struct {
	cols    attrCols
	first   int // index of the row's first entry in cols.text
	entries []rowEntry
	hashes  []keyHash
	// The last row appended the direct way, whose keys were found valid
	// UTF-8 and unique: records of one kind repeat their key set, and a
	// row with the same keys needs neither check again.
	last             *mapCol
	lastFirst, lastN int
	// same: the row's keys are those of the last row, in the same column
	// and order. The entries the promoted columns take then sit where they
	// sat in the last row: promoted holds them (-1 for none) while
	// promotedOK, so rows of one key set look them up once.
	same       bool
	promoted   [2]int
	promotedOK bool
}

// appendAttrs appends m as one row of cols and leaves c.row describing it,
// or, when m has invalid UTF-8 or duplicate keys, appends it the arena's way
// and returns false (c.rec then describes it).
//
// Keys and values are copied unchecked and the row's bytes checked in one
// pass per child afterwards: a validation call per string cost more than
// the validation (most strings are short and ASCII). Invalid UTF-8 is rare
// and takes the arena's path, which replaces it.
//
// The four children (keys and texts, keys and type tags) are appended
// through locals stored back once per row, so an entry costs an append per
// slice with no reload of the column through its pointer and no validity
// check: map children hold no nulls. Ints are rendered straight into the
// text child.
func (c *converter) appendAttrs(m pcommon.Map, cols attrCols) bool {
	r := &c.row
	keys, items := &cols.text.keys, &cols.text.items
	tkeys, tags := &cols.types.keys, &cols.types.items
	r.cols, r.first = cols, keys.rows()
	typesFirst := tkeys.rows()
	kData, kOffs, iData, iOffs := keys.data, keys.offsets, items.data, items.offsets
	tkData, tkOffs, tData, tOffs := tkeys.data, tkeys.offsets, tags.data, tags.offsets
	entries := r.entries[:0]
	for k, v := range m.All() {
		e := rowEntry{typ: v.Type()}
		kData = append(kData, k...)
		kOffs = append(kOffs, int32(len(kData)))
		switch e.typ {
		case pcommon.ValueTypeStr:
			iData = append(iData, v.Str()...)
		case pcommon.ValueTypeInt:
			e.num = v.Int()
			iData = strconv.AppendInt(iData, e.num, 10)
			tData = append(tData, schema.TypeInt...)
		default:
			// Numbers, base64 and JSON: valid UTF-8.
			iData = schema.AppendText(iData, v)
			tData, _ = schema.AppendTypeTag(tData, v)
		}
		iOffs = append(iOffs, int32(len(iData)))
		if e.typ != pcommon.ValueTypeStr {
			tkData = append(tkData, k...)
			tkOffs = append(tkOffs, int32(len(tkData)))
			tOffs = append(tOffs, int32(len(tData)))
		}
		entries = append(entries, e)
	}
	keys.data, keys.offsets, items.data, items.offsets = kData, kOffs, iData, iOffs
	tkeys.data, tkeys.offsets, tags.data, tags.offsets = tkData, tkOffs, tData, tOffs
	r.entries = entries
	r.same = r.sameKeysAsLast()
	if !r.same {
		r.promotedOK = false
	}
	keysOK := r.same || (keys.validFrom(r.first) && !r.hasDuplicateKeys())
	if !keysOK || !items.validFrom(r.first) {
		r.last, r.promotedOK = nil, false
		keys.truncate(r.first)
		items.truncate(r.first)
		tkeys.truncate(typesFirst)
		tags.truncate(typesFirst)
		c.rec.reset(m)
		c.rec.appendTo(cols)
		return false
	}
	r.last, r.lastFirst, r.lastN = cols.text, r.first, len(entries)
	cols.text.end()
	cols.types.end()
	return true
}

// sameKeysAsLast reports whether the row's keys are those of the row
// before it in the same column, in the same order.
func (r *attrRow) sameKeysAsLast() bool {
	n := len(r.entries)
	// A cut or a discard empties the column: first is then 0, and only an
	// empty row can follow an empty one.
	if r.last != r.cols.text || r.lastN != n || r.lastFirst+n != r.first {
		return false
	}
	offs := r.cols.text.keys.offsets
	prev, cur := offs[r.lastFirst:r.first+1], offs[r.first:r.first+n+1]
	for i := range n {
		if prev[i+1]-prev[i] != cur[i+1]-cur[i] {
			return false
		}
	}
	data := r.cols.text.keys.data
	return string(data[prev[0]:prev[n]]) == string(data[cur[0]:cur[n]])
}

func (r *attrRow) key(i int) []byte  { return r.cols.text.keys.value(r.first + i) }
func (r *attrRow) text(i int) []byte { return r.cols.text.items.value(r.first + i) }

// hasDuplicateKeys reports whether two keys of the row are equal: pairwise
// for small rows (lengths first: most keys differ in length), through sorted
// hashes for large ones.
func (r *attrRow) hasDuplicateKeys() bool {
	n := len(r.entries)
	if n <= smallSet {
		offs, data := r.cols.text.keys.offsets[r.first:r.first+n+1], r.cols.text.keys.data
		for j := 1; j < n; j++ {
			kj := data[offs[j]:offs[j+1]]
			for i := range j {
				if int(offs[i+1]-offs[i]) == len(kj) && string(data[offs[i]:offs[i+1]]) == string(kj) {
					return true
				}
			}
		}
		return false
	}
	r.hashes = r.hashes[:0]
	for i := range n {
		r.hashes = append(r.hashes, keyHash{fnv1a(r.key(i)), i})
	}
	slices.SortFunc(r.hashes, func(a, b keyHash) int { return cmp.Compare(a.hash, b.hash) })
	for i := 1; i < n; i++ {
		for j := i - 1; j >= 0 && r.hashes[j].hash == r.hashes[i].hash; j-- {
			if bytes.Equal(r.key(r.hashes[i].i), r.key(r.hashes[j].i)) {
				return true
			}
		}
	}
	return false
}

// find returns the index of the entry of the first of keys present, as
// semconv.go promises, or -1.
func (r *attrRow) find(keys []string) int {
	offs, data := r.cols.text.keys.offsets[r.first:r.first+len(r.entries)+1], r.cols.text.keys.data
	for _, k := range keys {
		for i := range r.entries {
			if int(offs[i+1]-offs[i]) == len(k) && string(data[offs[i]:offs[i+1]]) == k {
				return i
			}
		}
	}
	return -1
}

// findPromoted returns the entries of the first of textKeys and of
// intKeys present (-1 for none), from the last row when the keys are its.
func (r *attrRow) findPromoted(textKeys, intKeys []string) (text, num int) {
	if !r.promotedOK {
		r.promoted = [2]int{r.find(textKeys), r.find(intKeys)}
		r.promotedOK = true
	}
	return r.promoted[0], r.promoted[1]
}

// appendText appends the text of entry i, or null when i < 0.
func (r *attrRow) appendText(c *strCol, i int) {
	if i >= 0 {
		c.append(r.text(i))
	} else {
		c.appendNull()
	}
}

// appendPromotedInt is rendered.appendPromotedInt for entry i of the row.
func (r *attrRow) appendPromotedInt(c *numCol[int64], i int) {
	switch {
	case i < 0:
		c.appendNull()
	case r.entries[i].typ == pcommon.ValueTypeInt:
		c.append(r.entries[i].num)
	case r.entries[i].typ == pcommon.ValueTypeStr:
		if n, ok := parseInt(r.text(i)); ok {
			c.append(n)
		} else {
			c.appendNull()
		}
	default:
		c.appendNull()
	}
}
