package arcflight

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// split cuts b into buffers at the given offsets, as gRPC hands a message
// over in the frames it arrived in.
func split(b []byte, at ...int) mem.BufferSlice {
	var out mem.BufferSlice
	prev := 0
	for _, a := range at {
		out = append(out, mem.SliceBuffer(b[prev:a]))
		prev = a
	}
	return append(out, mem.SliceBuffer(b[prev:]))
}

// putCases are FlightData messages the codec must read as protobuf does.
func putCases(t *testing.T) map[string][]byte {
	t.Helper()
	marshal := func(fd *flight.FlightData) []byte {
		b, err := proto.Marshal(fd)
		require.NoError(t, err)
		return b
	}
	header := bytes.Repeat([]byte{1, 2, 3}, 45) // not a multiple of 8: padded
	body := bytes.Repeat([]byte("body"), 300)
	full := marshal(&flight.FlightData{FlightDescriptor: Descriptor("db", "logs"), DataHeader: header, DataBody: body, AppMetadata: []byte("meta")})
	withUnknown := protowire.AppendTag(nil, 7, protowire.VarintType)
	withUnknown = protowire.AppendVarint(withUnknown, 300)
	withUnknown = protowire.AppendTag(withUnknown, 8, protowire.Fixed32Type)
	withUnknown = protowire.AppendFixed32(withUnknown, 5)
	withUnknown = protowire.AppendTag(withUnknown, 9, protowire.Fixed64Type)
	withUnknown = protowire.AppendFixed64(withUnknown, 6)
	withUnknown = protowire.AppendTag(withUnknown, 10, protowire.BytesType)
	withUnknown = protowire.AppendBytes(withUnknown, []byte("unknown"))
	withUnknown = append(withUnknown, full...)
	// A bytes field given twice keeps the last value; a descriptor given
	// twice is merged.
	twice := append(marshal(&flight.FlightData{DataHeader: []byte("old"), DataBody: []byte("old body"), FlightDescriptor: &flight.FlightDescriptor{Cmd: []byte("c")}}), full...)
	return map[string][]byte{
		"empty":          nil,
		"schema message": marshal(&flight.FlightData{FlightDescriptor: Descriptor("db", "logs"), DataHeader: header}),
		"batch":          marshal(&flight.FlightData{DataHeader: header, DataBody: body}),
		"every field":    full,
		"unknown fields": withUnknown,
		"fields twice":   twice,
	}
}

// TestPutCodecReadsWhatProtobufReads decodes each message, cut into
// frames at every boundary a small step apart, and compares it with
// protobuf's own decoding; the stream it makes with a schema frame is the
// one AppendFrame and AppendEOS make, whether the frame fits the headroom
// or not.
func TestPutCodecReadsWhatProtobufReads(t *testing.T) {
	schemaFrame := bytes.Repeat([]byte{9}, 40)
	for name, wire := range putCases(t) {
		t.Run(name, func(t *testing.T) {
			var want flight.FlightData
			require.NoError(t, proto.Unmarshal(wire, &want))
			for _, headroom := range []int{0, len(schemaFrame), 100} {
				for cut := 0; cut <= len(wire); cut += 7 {
					var got PutMessage
					data := split(wire, cut/2, cut)
					require.NoError(t, PutCodec{Headroom: headroom}.Unmarshal(data, &got), "cut at %d", cut)
					assert.True(t, proto.Equal(want.FlightDescriptor, got.Descriptor), "descriptor, cut at %d", cut)
					assert.Equal(t, string(want.DataHeader), string(got.Header), "cut at %d", cut)
					assert.Equal(t, string(want.DataBody), string(got.Body), "cut at %d", cut)
					assert.Equal(t, string(want.AppMetadata), string(got.AppMetadata), "cut at %d", cut)
					wantStream := AppendEOS(AppendFrame(bytes.Clone(schemaFrame), want.DataHeader, want.DataBody))
					assert.Equal(t, wantStream, got.Stream(schemaFrame), "headroom %d, cut at %d", headroom, cut)
				}
			}
		})
	}
}

// TestPutCodecRejectsMalformed: every cut of a message that protobuf
// refuses is refused, with what is wrong; a known field of the wrong wire
// type is named.
func TestPutCodecRejectsMalformed(t *testing.T) {
	wire := putCases(t)["every field"]
	for n := range len(wire) {
		var want flight.FlightData
		if proto.Unmarshal(wire[:n], &want) == nil {
			continue
		}
		var got PutMessage
		err := PutCodec{}.Unmarshal(split(wire[:n], n/2), &got)
		require.Error(t, err, "%d of %d bytes", n, len(wire))
		assert.Contains(t, err.Error(), "malformed FlightData")
	}
	for _, field := range []protowire.Number{fieldDescriptor, fieldDataHeader, fieldAppMetadata, fieldDataBody} {
		t.Run(fmt.Sprint(field), func(t *testing.T) {
			b := protowire.AppendVarint(protowire.AppendTag(nil, field, protowire.VarintType), 1)
			err := PutCodec{}.Unmarshal(split(b), &PutMessage{})
			assert.ErrorContains(t, err, fmt.Sprintf("field %d has wire type 0, want bytes", field))
		})
	}
	err := PutCodec{}.Unmarshal(split(protowire.AppendTag(nil, 5, protowire.StartGroupType)), &PutMessage{})
	assert.ErrorContains(t, err, "field 5: wire type 3 is not accepted")
}

// TestPutCodecLeavesOtherMessagesToProtobuf: the server's other messages
// (acks it sends, any other RPC) go through the proto codec unchanged.
func TestPutCodecLeavesOtherMessagesToProtobuf(t *testing.T) {
	ack := &flight.PutResult{AppMetadata: AckMetadata(7)}
	data, err := PutCodec{}.Marshal(ack)
	require.NoError(t, err)
	var got flight.PutResult
	require.NoError(t, PutCodec{}.Unmarshal(data, &got))
	assert.True(t, proto.Equal(ack, &got))
}
