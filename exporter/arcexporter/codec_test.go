package arcexporter

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/otlparrow/otlparrowtest"
	"github.com/arc-otel/arc-otel/internal/schema"
)

// The DoPut codec's buffers are reused without clearing: every message must
// still marshal to exactly what the proto codec makes, also a smaller one
// after a larger one took the same buffer, and acks must read back.
func TestPutCodecMarshalsLikeProto(t *testing.T) {
	c := putCodec{pool: &sendPool{}}
	for _, tt := range []struct {
		name string
		msg  *flight.FlightData
	}{
		{"large body", &flight.FlightData{DataHeader: []byte("header"), DataBody: bytes.Repeat([]byte{0xAB}, 1<<20)}},
		{"smaller body after it", &flight.FlightData{DataHeader: []byte("h2"), DataBody: bytes.Repeat([]byte{0x01}, 300_000), AppMetadata: []byte("m")}},
		{"below the pooling threshold", &flight.FlightData{AppMetadata: []byte("ack")}},
		{"descriptor", &flight.FlightData{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"db", "traces"}}, DataBody: make([]byte, 70_000)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want, err := proto.Marshal(tt.msg)
			require.NoError(t, err)
			got, err := c.Marshal(tt.msg)
			require.NoError(t, err)
			assert.Equal(t, want, got.Materialize())
			got.Free() // back to the pool, as gRPC does after the write
		})
	}

	ack, err := proto.Marshal(&flight.PutResult{AppMetadata: []byte("seq")})
	require.NoError(t, err)
	var res flight.PutResult
	require.NoError(t, c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(ack)}, &res))
	assert.Equal(t, []byte("seq"), res.AppMetadata)

	_, err = c.Marshal("not a message")
	assert.Error(t, err)
}

// capturePayloads marshals each IPC payload both ways: as payloadMsg
// through the codec (lending the record's buffers), and as flight.Writer
// builds the FlightData (body copied into DataBody) through proto. It
// keeps the codec's messages unfreed, as gRPC holds them until written.
type capturePayloads struct {
	t        *testing.T
	c        putCodec
	desc     *flight.FlightDescriptor
	got      []mem.BufferSlice
	want     [][]byte
	lentBufs int
}

func (w *capturePayloads) Start() error { return nil }
func (w *capturePayloads) Close() error { return nil }

func (w *capturePayloads) WritePayload(p ipc.Payload) error { return w.WriteRecordPayload(p, nil) }

func (w *capturePayloads) WriteRecordPayload(p ipc.Payload, rec arrow.RecordBatch) error {
	meta := p.Meta()
	defer meta.Release()
	var body bytes.Buffer
	require.NoError(w.t, p.SerializeBody(&body))
	want, err := proto.Marshal(&flight.FlightData{FlightDescriptor: w.desc, DataHeader: meta.Bytes(), DataBody: body.Bytes()})
	require.NoError(w.t, err)
	got, err := w.c.Marshal(&payloadMsg{desc: w.desc, header: meta.Bytes(), body: &p, rec: rec})
	require.NoError(w.t, err)
	for _, b := range got {
		if _, copied := b.(mem.SliceBuffer); !copied {
			w.lentBufs++
		}
	}
	w.got, w.want = append(w.got, got), append(w.want, want)
	w.desc = nil
	return nil
}

// A payload's body goes into the message without a copy of its large
// buffers: the bytes must be proto.Marshal's of the FlightData
// flight.Writer sends, for the schema message with its descriptor and for
// records large and small, and the record's buffers must stay allocated
// until gRPC frees the messages, even after the record is released.
func TestPayloadMsgMarshalsLikeFlightData(t *testing.T) {
	alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
	sc := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}, {Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	w := &capturePayloads{t: t, c: putCodec{pool: &sendPool{}}, desc: &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"db", "traces"}}}
	bw, err := newBatchWriter(w, sc, alloc)
	require.NoError(t, err)
	for _, rows := range []int{20_000, 3, 0} {
		b := array.NewRecordBuilder(alloc, sc)
		for i := range rows {
			b.Field(0).(*array.StringBuilder).Append(fmt.Sprint("value-", i))
			if i%3 == 0 {
				b.Field(1).AppendNull()
			} else {
				b.Field(1).(*array.Int64Builder).Append(int64(i))
			}
		}
		rec := b.NewRecordBatch()
		require.NoError(t, bw.Write(rec))
		if rows > 0 {
			// A slice of it: the encoder rebases its offsets into buffers
			// of its own, which the message must keep too.
			part := rec.NewSlice(1, int64(rows))
			require.NoError(t, bw.Write(part))
			part.Release()
		}
		rec.Release()
		b.Release()
	}
	require.Len(t, w.got, 6) // the schema, then five records
	assert.Positive(t, w.lentBufs, "no buffer was lent")
	assert.Positive(t, alloc.CurrentAlloc(), "lent buffers were freed before gRPC let go of them")
	for i := range w.got {
		assert.Equal(t, w.want[i], w.got[i].Materialize(), "message %d", i)
		w.got[i].Free() // as gRPC does once the message is written
	}
	alloc.AssertSize(t, 0)
}

// benchPayloads hands each record payload to send, with its record when
// the writer says it (batchWriter does, ipc.Writer does not).
type benchPayloads struct {
	send func(p *ipc.Payload, meta []byte, rec arrow.RecordBatch)
}

func (w *benchPayloads) Start() error                     { return nil }
func (w *benchPayloads) Close() error                     { return nil }
func (w *benchPayloads) WritePayload(p ipc.Payload) error { return w.WriteRecordPayload(p, nil) }
func (w *benchPayloads) WriteRecordPayload(p ipc.Payload, rec arrow.RecordBatch) error {
	meta := p.Meta()
	defer meta.Release()
	w.send(&p, meta.Bytes(), rec)
	return nil
}

// BenchmarkSendMarshal measures what a DoPut send costs before gRPC
// writes it, per 1000-span batch: the body copied into DataBody and then
// marshalled (flight.Writer's way) against the message with the body's
// large buffers lent (payloadMsg, as the exporter sends).
func BenchmarkSendMarshal(b *testing.B) {
	var rec arrow.RecordBatch
	conv := otlparrow.NewTracesConverter(memory.DefaultAllocator, 1000)
	defer conv.Release()
	require.NoError(b, conv.Convert(otlparrowtest.RealisticTraces(1000), func(_ *schema.Table, r arrow.RecordBatch) error {
		rec = r
		return nil
	}))
	defer rec.Release()
	c := putCodec{pool: &sendPool{}}
	var body bytes.Buffer
	for _, tt := range []struct {
		name string
		send func(p *ipc.Payload, meta []byte, rec arrow.RecordBatch)
	}{
		{"copy", func(p *ipc.Payload, meta []byte, _ arrow.RecordBatch) {
			body.Reset()
			_ = p.SerializeBody(&body)
			out, _ := c.Marshal(&flight.FlightData{DataHeader: meta, DataBody: body.Bytes()})
			out.Free()
		}},
		{"lent", func(p *ipc.Payload, meta []byte, rec arrow.RecordBatch) {
			out, _ := c.Marshal(&payloadMsg{header: meta, body: p, rec: rec})
			out.Free()
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			w, err := newBatchWriter(&benchPayloads{send: tt.send}, rec.Schema(), memory.DefaultAllocator)
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				if err := w.Write(rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
