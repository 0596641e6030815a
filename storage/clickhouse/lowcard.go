package clickhouse

import (
	"math"

	"github.com/ClickHouse/ch-go/proto"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// LowCardinality on the wire (the only form clients send): a key
// serialization version in the state prefix, then per block a flags word, a
// dictionary of the block's distinct values ("additional keys") and one
// index per row into it, as narrow as the dictionary allows.
//
// For LowCardinality(Nullable(String)) the dictionary is still plain String,
// and index 0 means NULL (the server reads it so), so values start at 1.
const (
	lcKeySerializationVersion = 1
	lcHasAdditionalKeys       = 1 << 9
	lcNeedUpdateDictionary    = 1 << 10
)

// lowCardStrings is LowCardinality(String) or LowCardinality(Nullable(String)).
type lowCardStrings struct {
	nullable bool
	values   []string
	nulls    []bool // only when nullable

	dict  proto.ColStr
	index map[string]int
	keys  []int
}

func (c *lowCardStrings) Type() proto.ColumnType {
	if c.nullable {
		return "LowCardinality(Nullable(String))"
	}
	return "LowCardinality(String)"
}

func (c *lowCardStrings) Rows() int { return len(c.values) }

func (c *lowCardStrings) EncodeState(b *proto.Buffer) { b.PutInt64(lcKeySerializationVersion) }

func (c *lowCardStrings) reset() {
	c.values, c.nulls, c.keys = c.values[:0], c.nulls[:0], c.keys[:0]
}

// appendArrow keeps the strings themselves: they point into the Arrow
// buffers, which outlive the insert.
func (c *lowCardStrings) appendArrow(a arrow.Array) {
	v := a.(*array.String)
	for i := range v.Len() {
		c.values = append(c.values, v.Value(i))
		if c.nullable {
			c.nulls = append(c.nulls, v.IsNull(i))
		}
	}
}

// Prepare builds the block's dictionary and the row indexes.
func (c *lowCardStrings) Prepare() error {
	c.dict.Reset()
	if c.index == nil {
		c.index = map[string]int{}
	}
	clear(c.index)
	c.keys = c.keys[:0]
	if c.nullable {
		c.dict.Append("") // index 0: NULL
	}
	for i, s := range c.values {
		if c.nullable && c.nulls[i] {
			c.keys = append(c.keys, 0)
			continue
		}
		k, ok := c.index[s]
		if !ok {
			k = c.dict.Rows()
			c.dict.Append(s)
			c.index[s] = k
		}
		c.keys = append(c.keys, k)
	}
	return nil
}

func (c *lowCardStrings) EncodeColumn(b *proto.Buffer) {
	if len(c.values) == 0 {
		return
	}
	width := keyWidth(c.dict.Rows())
	b.PutInt64(int64(lcHasAdditionalKeys | lcNeedUpdateDictionary | width))
	b.PutInt64(int64(c.dict.Rows()))
	c.dict.EncodeColumn(b)
	b.PutInt64(int64(len(c.keys)))
	for _, k := range c.keys {
		switch width {
		case 0:
			b.PutUInt8(uint8(k))
		case 1:
			b.PutUInt16(uint16(k))
		case 2:
			b.PutUInt32(uint32(k))
		default:
			b.PutUInt64(uint64(k))
		}
	}
}

func (c *lowCardStrings) WriteColumn(w *proto.Writer) { w.ChainBuffer(c.EncodeColumn) }

// keyWidth is the index type for a dictionary of n values: 0 UInt8, 1
// UInt16, 2 UInt32, 3 UInt64.
func keyWidth(n int) int64 {
	switch {
	case n <= math.MaxUint8+1:
		return 0
	case n <= math.MaxUint16+1:
		return 1
	case n <= math.MaxUint32+1:
		return 2
	}
	return 3
}
