package arcexporter

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
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
