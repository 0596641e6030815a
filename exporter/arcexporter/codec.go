package arcexporter

import (
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
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
