package arcflight

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testStream is an IPC stream of one record (ints, strings with a null, a
// list of strings) as the Flight receiver frames it, and the record.
func testStream(t testing.TB) ([]byte, arrow.RecordBatch) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "", "ü"}, []bool{true, false, true})
	lb := b.Field(2).(*array.ListBuilder)
	for _, vals := range [][]string{{"x"}, {}, {"y", "z"}} {
		lb.Append(true)
		lb.ValueBuilder().(*array.StringBuilder).AppendValues(vals, nil)
	}
	rec := b.NewRecordBatch()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
	return buf.Bytes(), rec
}

func TestDecodeRecordSharedReadsWhatDecodeRecordReads(t *testing.T) {
	stream, want := testStream(t)
	defer want.Release()
	copied, err := DecodeRecord(stream, memory.DefaultAllocator)
	require.NoError(t, err)
	defer copied.Release()
	shared, err := DecodeRecordShared(stream, memory.DefaultAllocator)
	require.NoError(t, err)
	defer shared.Release()
	assert.True(t, array.RecordEqual(want, copied))
	assert.True(t, array.RecordEqual(want, shared))
	// Shared means shared: the values are the stream's bytes.
	ints := shared.Column(0).(*array.Int64).Values()
	values := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 1), 2), 3)
	at := bytes.Index(stream, values)
	require.Positive(t, at)
	stream[at+16] = 9
	assert.Equal(t, int64(9), ints[2])
}

func TestDecodeRecordSharedRefusesMalformedStreams(t *testing.T) {
	stream, rec := testStream(t)
	rec.Release()
	schemaEnd := SchemaFrameLen(stream)
	recordEnd := len(stream) - 8
	twice := append(append([]byte{}, stream[:recordEnd]...), stream[schemaEnd:]...)
	longer := append([]byte{}, stream...)
	binary.LittleEndian.PutUint32(longer[schemaEnd+4:], uint32(len(stream))) // metadata past the end
	for _, tc := range []struct {
		name   string
		stream []byte
	}{
		{"empty", nil},
		{"schema only", stream[:schemaEnd]},
		{"schema and end of stream", append(append([]byte{}, stream[:schemaEnd]...), 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0)},
		{"body cut short", stream[:recordEnd-16]},
		{"no continuation marker", append(append([]byte{}, stream[:schemaEnd]...), make([]byte, 16)...)},
		{"metadata length past the end", longer},
		{"two records", twice},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := DecodeRecordShared(tc.stream, memory.DefaultAllocator)
			if rec != nil {
				rec.Release()
			}
			assert.Error(t, err)
		})
	}
}

// FuzzDecodeRecordShared: whatever record message a client sends, framed
// as the receiver frames it (the table's own schema frame, then the
// message if CheckMessage passes it), the shared decoder does not panic,
// and what it accepts the copying decoder reads the same.
func FuzzDecodeRecordShared(f *testing.F) {
	stream, rec := testStream(f)
	defer rec.Release()
	schemaFrame := SchemaFrame(rec.Schema())
	require.Equal(f, schemaFrame, stream[:SchemaFrameLen(stream)])
	header, body := splitRecordFrame(f, stream[len(schemaFrame):len(stream)-8])
	f.Add(header, body)
	f.Add(header, body[:len(body)/2])
	f.Fuzz(func(t *testing.T, header, body []byte) {
		if CheckMessage(header, body) != nil {
			return
		}
		payload := AppendEOS(AppendFrame(bytes.Clone(schemaFrame), header, body))
		dec, err := NewStreamDecoder(schemaFrame, memory.DefaultAllocator)
		require.NoError(t, err)
		defer dec.Release()
		streamed, serr := dec.Decode(bytes.Clone(payload[len(schemaFrame):]), nil)
		shared, err := DecodeRecordShared(bytes.Clone(payload), memory.DefaultAllocator)
		require.Equal(t, err == nil, serr == nil, "the stream decoder accepts what DecodeRecordShared accepts: %v, %v", err, serr)
		if err != nil {
			return
		}
		defer shared.Release()
		defer streamed.Release()
		require.True(t, array.RecordEqual(shared, streamed))
		copied, err := DecodeRecord(payload, memory.DefaultAllocator)
		require.NoError(t, err)
		defer copied.Release()
		require.Equal(t, copied.NumRows(), shared.NumRows())
		require.True(t, copied.Schema().Equal(shared.Schema()))
	})
}

// splitRecordFrame returns the metadata and body of one encapsulated
// message.
func splitRecordFrame(t testing.TB, frame []byte) (header, body []byte) {
	t.Helper()
	n := int(binary.LittleEndian.Uint32(frame[4:]))
	bodyLen, err := messageBodyLength(frame[8 : 8+n])
	require.NoError(t, err)
	require.Equal(t, len(frame), 8+n+int(bodyLen))
	return frame[8 : 8+n], frame[8+n:]
}

// TestStreamDecoderReadsBatchAfterBatch: one decoder reads the batches of
// a stream one after the other, each what DecodeRecordShared reads from
// the whole stream, and shares each batch's bytes.
func TestStreamDecoderReadsBatchAfterBatch(t *testing.T) {
	stream, want := testStream(t)
	defer want.Release()
	schemaFrame := stream[:SchemaFrameLen(stream)]
	dec, err := NewStreamDecoder(schemaFrame, memory.DefaultAllocator)
	require.NoError(t, err)
	defer dec.Release()
	for i := range 3 {
		framed := bytes.Clone(stream[len(schemaFrame):])
		if i == 1 {
			framed = framed[:len(framed)-8] // no end-of-stream marker
		}
		rec, err := dec.Decode(framed, nil)
		require.NoError(t, err, "batch %d", i)
		assert.True(t, array.RecordEqual(want, rec), "batch %d", i)
		values := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 1), 2), 3)
		at := bytes.Index(framed, values)
		require.Positive(t, at)
		framed[at+16] = 9
		assert.Equal(t, int64(9), rec.Column(0).(*array.Int64).Value(2), "batch %d shares its bytes", i)
		rec.Release()
	}
}

// TestStreamDecoderRefusesMalformedBatches: what DecodeRecordShared
// refuses after a good schema, the stream decoder refuses, and it keeps
// refusing (the receiver ends the stream at the first error).
func TestStreamDecoderRefusesMalformedBatches(t *testing.T) {
	stream, rec := testStream(t)
	rec.Release()
	schemaEnd := SchemaFrameLen(stream)
	framed := stream[schemaEnd:]
	recordEnd := len(framed) - 8
	for _, tc := range []struct {
		name   string
		framed []byte
	}{
		{"empty", nil},
		{"end of stream only", framed[recordEnd:]},
		{"body cut short", framed[:recordEnd-16]},
		{"no continuation marker", make([]byte, 16)},
		{"two records", append(append([]byte{}, framed[:recordEnd]...), framed...)},
		{"a schema message", stream[:schemaEnd]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec, err := NewStreamDecoder(stream[:schemaEnd], memory.DefaultAllocator)
			require.NoError(t, err)
			defer dec.Release()
			rec, err := dec.Decode(bytes.Clone(tc.framed), nil)
			if rec != nil {
				rec.Release()
			}
			assert.Error(t, err)
			whole := append(append([]byte{}, stream[:schemaEnd]...), tc.framed...)
			if rec, err := DecodeRecordShared(whole, memory.DefaultAllocator); err == nil {
				rec.Release()
				t.Fatalf("DecodeRecordShared reads what the stream decoder refuses")
			}
			rec, err = dec.Decode(bytes.Clone(framed), nil)
			if rec != nil {
				rec.Release()
			}
			assert.Error(t, err, "no batch after a refused one")
		})
	}
}

// TestRowsCountsFromHeaders: Rows reads a stream's row count without
// decoding it, and any damage is an error, never a panic or an
// allocation the stream declares.
func TestRowsCountsFromHeaders(t *testing.T) {
	stream, rec := testStream(t)
	defer rec.Release()
	n, err := Rows(stream)
	require.NoError(t, err)
	assert.Equal(t, rec.NumRows(), n)
	assert.Positive(t, n)

	_, err = Rows(stream[:len(stream)-9])
	assert.Error(t, err, "cut short")
	for i := range stream {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			damaged := bytes.Clone(stream)
			damaged[i] ^= x
			assert.NotPanics(t, func() { _, _ = Rows(damaged) }, "byte %d ^ %#x", i, x)
		}
	}
}
