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
// through the codec, and as flight.Writer builds the FlightData (body
// copied into DataBody) through proto.
type capturePayloads struct {
	t         *testing.T
	c         putCodec
	desc      *flight.FlightDescriptor
	got, want [][]byte
}

func (w *capturePayloads) Start() error { return nil }
func (w *capturePayloads) Close() error { return nil }

func (w *capturePayloads) WritePayload(p ipc.Payload) error {
	meta := p.Meta()
	defer meta.Release()
	var body bytes.Buffer
	require.NoError(w.t, p.SerializeBody(&body))
	want, err := proto.Marshal(&flight.FlightData{FlightDescriptor: w.desc, DataHeader: meta.Bytes(), DataBody: body.Bytes()})
	require.NoError(w.t, err)
	got, err := w.c.Marshal(&payloadMsg{desc: w.desc, header: meta.Bytes(), body: &p})
	require.NoError(w.t, err)
	w.got, w.want = append(w.got, got.Materialize()), append(w.want, want)
	got.Free()
	w.desc = nil
	return nil
}

// A payload's body is serialized straight into the message: the bytes
// must be proto.Marshal's of the FlightData flight.Writer sends, for the
// schema message with its descriptor and for records large and small.
func TestPayloadMsgMarshalsLikeFlightData(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}, {Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	w := &capturePayloads{t: t, c: putCodec{pool: &sendPool{}}, desc: &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"db", "traces"}}}
	iw := ipc.NewWriterWithPayloadWriter(w, ipc.WithSchema(sc))
	for _, rows := range []int{20_000, 3, 0} {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for i := range rows {
			b.Field(0).(*array.StringBuilder).Append(fmt.Sprint("value-", i))
			if i%3 == 0 {
				b.Field(1).AppendNull()
			} else {
				b.Field(1).(*array.Int64Builder).Append(int64(i))
			}
		}
		rec := b.NewRecordBatch()
		require.NoError(t, iw.Write(rec))
		rec.Release()
		b.Release()
	}
	require.NoError(t, iw.Close())
	require.Len(t, w.got, 4) // the schema, then three records
	for i := range w.got {
		assert.Equal(t, w.want[i], w.got[i], "message %d", i)
	}
}

// benchPayloads hands each record payload to send.
type benchPayloads struct {
	send func(p *ipc.Payload, meta []byte)
}

func (w *benchPayloads) Start() error { return nil }
func (w *benchPayloads) Close() error { return nil }
func (w *benchPayloads) WritePayload(p ipc.Payload) error {
	meta := p.Meta()
	defer meta.Release()
	w.send(&p, meta.Bytes())
	return nil
}

// BenchmarkSendMarshal measures what a DoPut send costs before gRPC
// writes it, per 1000-span batch: the body copied into DataBody and then
// marshalled (flight.Writer's way) against serialized straight into the
// message (payloadMsg).
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
		send func(p *ipc.Payload, meta []byte)
	}{
		{"copy", func(p *ipc.Payload, meta []byte) {
			body.Reset()
			_ = p.SerializeBody(&body)
			out, _ := c.Marshal(&flight.FlightData{DataHeader: meta, DataBody: body.Bytes()})
			out.Free()
		}},
		{"direct", func(p *ipc.Payload, meta []byte) {
			out, _ := c.Marshal(&payloadMsg{header: meta, body: p})
			out.Free()
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			w := ipc.NewWriterWithPayloadWriter(&benchPayloads{send: tt.send}, ipc.WithSchema(rec.Schema()))
			defer w.Close()
			b.ReportAllocs()
			for b.Loop() {
				if err := w.Write(rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
