package arcexporter

import (
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// putCodec marshals the messages of a DoPut stream into buffers of its own
// pool. gRPC's proto codec takes them from gRPC's default pool, which
// clears every buffer it hands out, and a record batch message (about a
// megabyte per 1000 spans) is larger than that pool's largest tier, so each
// send paid a memclr as long as the copy: about 3 % of the collector's CPU.
// A marshalled message overwrites every byte of the buffer it returns, so
// nothing stale is sent. gRPC returns the buffer to the pool once the
// message is written.
type putCodec struct{ pool *sendPool }

// putCallOption makes a DoPut stream use putCodec.
var putCallOption = grpc.ForceCodecV2(putCodec{pool: &sendPool{}})

func (putCodec) Name() string { return "proto" }

func (c putCodec) Marshal(v any) (mem.BufferSlice, error) {
	if p, ok := v.(*payloadMsg); ok {
		return c.marshalPayload(p)
	}
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("marshal %T: not a protobuf message", v)
	}
	size := proto.Size(m)
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(make([]byte, 0, size), m)
		return mem.BufferSlice{mem.SliceBuffer(b)}, err
	}
	buf := c.pool.Get(size)
	b, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend((*buf)[:0], m)
	if err != nil {
		c.pool.Put(buf)
		return nil, fmt.Errorf("marshal %T: %w", v, err)
	}
	*buf = b
	return mem.BufferSlice{mem.NewBuffer(buf, c.pool)}, nil
}

// Unmarshal reads the stream's acknowledgements as the registered proto
// codec does.
func (putCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return encoding.GetCodecV2("proto").Unmarshal(data, v)
}

// sendPool is a mem.BufferPool that does not clear what it hands out.
type sendPool struct{ p sync.Pool }

func (s *sendPool) Get(length int) *[]byte {
	if b, ok := s.p.Get().(*[]byte); ok && cap(*b) >= length {
		*b = (*b)[:length]
		return b
	}
	b := make([]byte, length)
	return &b
}

func (s *sendPool) Put(b *[]byte) { s.p.Put(b) }

// payloadMsg is a FlightData message of an IPC payload whose body the codec
// serializes straight into the marshalled message: flight.Writer first
// copies the body into a buffer of its own for DataBody, and the codec
// then copies it again (the first copy was 2.6 % of the collector's CPU).
type payloadMsg struct {
	desc   *flight.FlightDescriptor // only on a stream's first message
	header []byte
	body   *ipc.Payload
}

// FlightData field numbers (Flight.proto).
const (
	fieldDescriptor protowire.Number = 1
	fieldHeader     protowire.Number = 2
	fieldBody       protowire.Number = 1000
)

// marshalPayload encodes p as proto.Marshal encodes the FlightData with
// the same descriptor, header and body: fields in number order, empty
// ones left out.
func (c putCodec) marshalPayload(p *payloadMsg) (mem.BufferSlice, error) {
	var body countWriter
	if err := p.body.SerializeBody(&body); err != nil {
		return nil, fmt.Errorf("size payload body: %w", err)
	}
	descLen := 0
	if p.desc != nil {
		descLen = proto.Size(p.desc)
	}
	size := bytesFieldSize(fieldHeader, len(p.header)) + bytesFieldSize(fieldBody, int(body))
	if p.desc != nil {
		size += protowire.SizeTag(fieldDescriptor) + protowire.SizeBytes(descLen)
	}
	var buf *[]byte
	var b []byte
	if mem.IsBelowBufferPoolingThreshold(size) {
		b = make([]byte, 0, size)
	} else {
		buf = c.pool.Get(size)
		b = (*buf)[:0]
	}
	var err error
	if p.desc != nil {
		b = protowire.AppendTag(b, fieldDescriptor, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(descLen))
		b, err = proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, p.desc)
	}
	if err == nil && len(p.header) > 0 {
		b = protowire.AppendTag(b, fieldHeader, protowire.BytesType)
		b = protowire.AppendBytes(b, p.header)
	}
	if err == nil && body > 0 {
		b = protowire.AppendTag(b, fieldBody, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(body))
		w := appendWriter{b}
		err = p.body.SerializeBody(&w)
		b = w.b
	}
	if err == nil && len(b) != size {
		err = fmt.Errorf("payload message of %d bytes, sized %d", len(b), size)
	}
	if err != nil {
		if buf != nil {
			c.pool.Put(buf)
		}
		return nil, fmt.Errorf("marshal payload: %w", err)
	}
	if buf == nil {
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	*buf = b
	return mem.BufferSlice{mem.NewBuffer(buf, c.pool)}, nil
}

// bytesFieldSize is the size of a bytes field of n bytes, 0 when empty.
func bytesFieldSize(num protowire.Number, n int) int {
	if n == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}

// countWriter counts what is written to it.
type countWriter int

func (w *countWriter) Write(p []byte) (int, error) {
	*w += countWriter(len(p))
	return len(p), nil
}

// appendWriter appends what is written to it to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// payloadWriter sends each IPC payload of a DoPut stream as a payloadMsg.
type payloadWriter struct {
	stream flight.FlightService_DoPutClient
	desc   *flight.FlightDescriptor // sent with the first payload
}

func (w *payloadWriter) Start() error { return nil }
func (w *payloadWriter) Close() error { return nil }

func (w *payloadWriter) WritePayload(p ipc.Payload) error {
	meta := p.Meta()
	defer meta.Release()
	m := &payloadMsg{desc: w.desc, header: meta.Bytes(), body: &p}
	w.desc = nil
	return w.stream.SendMsg(m)
}
