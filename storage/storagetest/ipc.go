package storagetest

import (
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"
	"github.com/stretchr/testify/require"
)

// BatchLayout returns where each FieldNode{length, null_count} and each
// Buffer{offset, length} struct starts in the flatbuffer metadata of an
// Arrow IPC record batch message (Message.fbs): the numbers a damaged or
// hostile message can declare wrongly.
func BatchLayout(t testing.TB, meta []byte) (nodes, buffers []int) {
	t.Helper()
	msg := flatbuffers.Table{Bytes: meta, Pos: flatbuffers.GetUOffsetT(meta)}
	const headerRecordBatch = 3
	o := flatbuffers.UOffsetT(msg.Offset(6)) // header_type
	require.NotZero(t, o)
	require.EqualValues(t, headerRecordBatch, msg.GetByte(o+msg.Pos), "not a record batch message")
	var batch flatbuffers.Table
	o = flatbuffers.UOffsetT(msg.Offset(8)) // header
	require.NotZero(t, o)
	msg.Union(&batch, o)
	vector := func(slot flatbuffers.VOffsetT) []int {
		var at []int
		if o := flatbuffers.UOffsetT(batch.Offset(slot)); o != 0 {
			vec := int(batch.Vector(o))
			for e := range batch.VectorLen(o) {
				at = append(at, vec+16*e) // both structs are 16 bytes
			}
		}
		return at
	}
	return vector(6), vector(8) // nodes, buffers
}
