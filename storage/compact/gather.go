package compact

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// gather returns the rows idx of a column split in parts (indices into
// the parts one after the other), in that order, as one array. It takes
// the column types of a measurement: strings, 64-bit numbers and times,
// booleans. It copies value by value; arrow's take kernel cost about 80 ns
// per string on compaction's records (an append through a generic builder
// per value, and a chunk lookup per index).
func gather(parts []arrow.Array, idx []int64, mem memory.Allocator) (arrow.Array, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("gather rows: no arrays")
	}
	switch parts[0].(type) {
	case *array.String, *array.Int64, *array.Float64, *array.Timestamp, *array.Boolean:
		return gatherFlat(parts, idx, mem)
	}
	return nil, fmt.Errorf("gather rows: column type %s is not one of a measurement", parts[0].DataType())
}

// gatherFlat copies the rows idx of a flat column. The parts are
// concatenated first: one sequential copy, after which every row is one
// lookup in one array (the rows come in sort order, from all over the
// parts).
func gatherFlat(parts []arrow.Array, idx []int64, mem memory.Allocator) (arrow.Array, error) {
	whole := parts[0]
	if len(parts) > 1 {
		var err error
		if whole, err = array.Concatenate(parts, mem); err != nil {
			return nil, fmt.Errorf("gather rows: %w", err)
		}
		defer whole.Release()
	}
	n := len(idx)
	var valid []byte
	nulls := 0
	if whole.NullN() > 0 {
		valid = make([]byte, bitutil.BytesForBits(int64(n)))
		for out, i := range idx {
			if whole.IsValid(int(i)) {
				bitutil.SetBit(valid, out)
			} else {
				nulls++
			}
		}
	}
	var buffers []*memory.Buffer
	switch a := whole.(type) {
	case *array.String:
		offsets := make([]int32, n+1)
		data := make([]byte, 0, a.ValueLen(0)*n+64)
		for out, i := range idx {
			data = append(data, a.Value(int(i))...)
			offsets[out+1] = int32(len(data))
		}
		buffers = []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offsets)), memory.NewBufferBytes(data)}
	case *array.Boolean:
		bits := make([]byte, bitutil.BytesForBits(int64(n)))
		for out, i := range idx {
			if a.Value(int(i)) {
				bitutil.SetBit(bits, out)
			}
		}
		buffers = []*memory.Buffer{nil, memory.NewBufferBytes(bits)}
	default: // 64-bit values
		src, vals := int64Values(whole), make([]int64, n)
		for out, i := range idx {
			vals[out] = src[i]
		}
		buffers = []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(vals))}
	}
	if nulls > 0 {
		buffers[0] = memory.NewBufferBytes(valid)
	}
	data := array.NewData(whole.DataType(), n, buffers, nil, nulls, 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// int64Values views a 64-bit numeric or time array's values as int64.
func int64Values(a arrow.Array) []int64 {
	switch a := a.(type) {
	case *array.Int64:
		return a.Int64Values()
	case *array.Float64:
		return arrow.Int64Traits.CastFromBytes(arrow.Float64Traits.CastToBytes(a.Float64Values()))
	case *array.Timestamp:
		return arrow.Int64Traits.CastFromBytes(arrow.TimestampTraits.CastToBytes(a.TimestampValues()))
	}
	panic(fmt.Sprintf("gather: %s is not a 64-bit type", a.DataType()))
}
