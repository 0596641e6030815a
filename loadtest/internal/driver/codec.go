package driver

import (
	"fmt"

	"google.golang.org/grpc/mem"
)

// rawCodec sends request bytes as they are and hands back the response
// bytes, so pre-marshalled requests skip protobuf marshalling. It keeps the
// "proto" name: the server sees an ordinary OTLP call.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("raw codec: cannot send %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	p, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("raw codec: cannot receive into %T", v)
	}
	*p = data.Materialize()
	return nil
}
