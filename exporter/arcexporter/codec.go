package arcexporter

import (
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// putCodec marshals the messages of a DoPut stream: record batches as
// payloadMsg (below), other messages into buffers of its own pool. gRPC's
// proto codec takes them from gRPC's default pool, which clears every
// buffer it hands out, and a record batch message (about a megabyte per
// 1000 spans) is larger than that pool's largest tier, so each send paid a
// memclr as long as the copy: about 3 % of the collector's CPU. A
// marshalled message overwrites every byte of the buffer it returns, so
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
// marshals itself: flight.Writer first copies the body into a buffer of its
// own for DataBody, and the codec then copies it again (the first copy was
// 2.6 % of the collector's CPU). The body's large buffers are not copied at
// all when rec is set: the message lends them to gRPC, which writes them
// into its connection buffer from where they are (a second copy of every
// byte of the batch was 2.4 % of the collector's CPU under the traces load).
type payloadMsg struct {
	desc   *flight.FlightDescriptor // only on a stream's first message
	header []byte
	body   *ipc.Payload
	// rec holds the body's buffers: the record the payload was encoded
	// from, retained for every buffer lent until gRPC frees it. Buffers
	// the encoder made itself must be Go memory (see batchWriter.Write).
	rec arrow.RecordBatch
}

// FlightData field numbers (Flight.proto).
const (
	fieldDescriptor protowire.Number = 1
	fieldHeader     protowire.Number = 2
	fieldBody       protowire.Number = 1000
)

// lendMin is the smallest body buffer lent to gRPC rather than copied:
// smaller ones (validity bitmaps, padding, short columns) cost less to
// copy than to hand over one by one. gRPC frees only buffers above its
// pooling threshold through their pool; marshalPayload checks that too.
const lendMin = 2 << 10

// marshalPayload encodes p as proto.Marshal encodes the FlightData with
// the same descriptor, header and body: fields in number order, empty
// ones left out. The message is the descriptor, header and field tags,
// and the body's small buffers, copied, between its large ones, lent.
func (c putCodec) marshalPayload(p *payloadMsg) (mem.BufferSlice, error) {
	body := bodyPieces{pieces: make([][]byte, 0, 128)}
	if err := p.body.SerializeBody(&body); err != nil {
		return nil, fmt.Errorf("serialize payload body: %w", err)
	}
	lend := func(b []byte) bool {
		return p.rec != nil && len(b) >= lendMin && !mem.IsBelowBufferPoolingThreshold(len(b))
	}
	descLen := 0
	if p.desc != nil {
		descLen = proto.Size(p.desc)
	}
	prefix := bytesFieldSize(fieldHeader, len(p.header))
	if body.n > 0 {
		prefix += protowire.SizeTag(fieldBody) + protowire.SizeVarint(uint64(body.n))
	}
	if p.desc != nil {
		prefix += protowire.SizeTag(fieldDescriptor) + protowire.SizeBytes(descLen)
	}
	copied, lends := prefix, 0
	for _, b := range body.pieces {
		if lend(b) {
			lends++
		} else {
			copied += len(b)
		}
	}
	// own holds every byte that is copied; it never grows, so the runs
	// cut from it stay valid.
	own, err := appendPrefix(make([]byte, 0, copied), p, descLen, body.n)
	if err != nil {
		return nil, fmt.Errorf("marshal payload: %w", err)
	}
	if len(own) != prefix {
		return nil, fmt.Errorf("marshal payload: prefix of %d bytes, sized %d", len(own), prefix)
	}
	out := make(mem.BufferSlice, 0, 2*lends+1)
	var lent *lentBuffers
	if lends > 0 {
		lent = &lentBuffers{rec: p.rec, bufs: make([][]byte, 0, lends)}
	}
	run := 0 // start of the copied bytes not yet in out
	for _, b := range body.pieces {
		if !lend(b) {
			own = append(own, b...)
			continue
		}
		if run < len(own) {
			out = append(out, mem.SliceBuffer(own[run:len(own):len(own)]))
			run = len(own)
		}
		out = append(out, lent.lend(b))
	}
	if run < len(own) || len(out) == 0 {
		out = append(out, mem.SliceBuffer(own[run:]))
	}
	return out, nil
}

// appendPrefix appends what precedes the body's bytes in the message:
// the descriptor, the header, the body's tag and length.
func appendPrefix(b []byte, p *payloadMsg, descLen, bodyLen int) ([]byte, error) {
	if p.desc != nil {
		b = protowire.AppendTag(b, fieldDescriptor, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(descLen))
		var err error
		if b, err = (proto.MarshalOptions{UseCachedSize: true}).MarshalAppend(b, p.desc); err != nil {
			return nil, fmt.Errorf("descriptor: %w", err)
		}
	}
	if len(p.header) > 0 {
		b = protowire.AppendTag(b, fieldHeader, protowire.BytesType)
		b = protowire.AppendBytes(b, p.header)
	}
	if bodyLen > 0 {
		b = protowire.AppendTag(b, fieldBody, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(bodyLen))
	}
	return b, nil
}

// bodyPieces keeps the slices an IPC body is written as, without copying
// them, and counts their bytes.
type bodyPieces struct {
	pieces [][]byte
	n      int
}

func (w *bodyPieces) Write(p []byte) (int, error) {
	w.pieces = append(w.pieces, p)
	w.n += len(p)
	return len(p), nil
}

// lentBuffers are the body buffers of one message lent to gRPC, each as a
// mem.Buffer whose pool this is: gRPC puts each back once it no longer
// needs it, and each put releases the record that holds them once.
type lentBuffers struct {
	rec  arrow.RecordBatch
	bufs [][]byte // never grows past its capacity: mem.Buffers point into it
}

// Get completes mem.BufferPool; gRPC only puts lent buffers back.
func (l *lentBuffers) Get(length int) *[]byte {
	b := make([]byte, length)
	return &b
}

func (l *lentBuffers) Put(*[]byte) { l.rec.Release() }

// lend returns b as a buffer gRPC frees through l, holding the record for
// it.
func (l *lentBuffers) lend(b []byte) mem.Buffer {
	l.bufs = append(l.bufs, b[:len(b):len(b)])
	l.rec.Retain()
	return mem.NewBuffer(&l.bufs[len(l.bufs)-1], l)
}

// bytesFieldSize is the size of a bytes field of n bytes, 0 when empty.
func bytesFieldSize(num protowire.Number, n int) int {
	if n == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}

// payloadWriter sends each IPC payload of a DoPut stream as a payloadMsg.
type payloadWriter struct {
	stream flight.FlightService_DoPutClient
	desc   *flight.FlightDescriptor // sent with the first payload
}

func (w *payloadWriter) Start() error { return nil }
func (w *payloadWriter) Close() error { return nil }

func (w *payloadWriter) WritePayload(p ipc.Payload) error { return w.WriteRecordPayload(p, nil) }

// WriteRecordPayload sends p, the payload of rec, lending gRPC the large
// buffers of its body (see payloadMsg).
func (w *payloadWriter) WriteRecordPayload(p ipc.Payload, rec arrow.RecordBatch) error {
	meta := p.Meta()
	defer meta.Release()
	m := &payloadMsg{desc: w.desc, header: meta.Bytes(), body: &p, rec: rec}
	w.desc = nil
	return w.stream.SendMsg(m)
}
