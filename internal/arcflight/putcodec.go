package arcflight

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// PutMessage is one FlightData of a DoPut stream as the sidecar reads it
// (PutCodec): the received bytes are copied once, from gRPC's frames
// straight into the IPC stream the WAL stores, instead of three times
// (gRPC joining its frames, protobuf copying each bytes field, the
// receiver framing header and body again).
type PutMessage struct {
	Descriptor  *flight.FlightDescriptor
	Header      []byte // data_header: the IPC message's metadata
	Body        []byte // data_body
	AppMetadata []byte

	// buf is headroom bytes (room for a schema frame), then the message
	// as Stream returns it: frame prefix, Header, padding, Body,
	// end-of-stream marker. Header and Body are slices of it.
	buf      []byte
	headroom int
}

// Stream returns the IPC stream of schemaFrame followed by this message
// and the end-of-stream marker, as AppendEOS(AppendFrame(schemaFrame,
// Header, Body)) does. It writes into the message's own buffer when the
// schema frame fits the headroom the codec left (PutCodec.Headroom), so
// the result shares its memory with Header and Body; else it copies.
func (m *PutMessage) Stream(schemaFrame []byte) []byte {
	framed := m.buf[m.headroom:]
	if m.buf == nil {
		framed = AppendEOS(AppendFrame(nil, m.Header, m.Body))
	}
	if len(schemaFrame) > m.headroom {
		return append(append(make([]byte, 0, len(schemaFrame)+len(framed)), schemaFrame...), framed...)
	}
	start := m.headroom - len(schemaFrame)
	copy(m.buf[start:], schemaFrame)
	return m.buf[start:]
}

// Recycle gives the message's buffer back for later messages. It is the
// done function of StreamDecoder.Decode of the message's Stream: called
// once the record decoded from it is released, when nothing reads the
// buffer any more (the WAL has written it, the flush has written the
// record). Header, Body and the Stream must not be read after it.
func (m *PutMessage) Recycle() { putPool.put(m.buf) }

// PutCodec is the gRPC codec of the sidecar's server: it decodes a
// *PutMessage itself and leaves every other message to the registered
// proto codec. Headroom is the room left in front of each message for the
// schema frame Stream puts there: the largest schema frame the server
// accepts.
type PutCodec struct{ Headroom int }

// ServerOption makes a gRPC server use the codec.
func (c PutCodec) ServerOption() grpc.ServerOption { return grpc.ForceServerCodecV2(c) }

// Name is the proto codec's: the codec speaks the same wire format.
func (PutCodec) Name() string { return "proto" }

func (PutCodec) Marshal(v any) (mem.BufferSlice, error) {
	return encoding.GetCodecV2("proto").Marshal(v)
}

func (c PutCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*PutMessage)
	if !ok {
		return encoding.GetCodecV2("proto").Unmarshal(data, v)
	}
	if err := m.decode(data, c.Headroom); err != nil {
		return fmt.Errorf("malformed FlightData: %w", err)
	}
	return nil
}

// FlightData field numbers (Flight.proto).
const (
	fieldDescriptor  = 1
	fieldDataHeader  = 2
	fieldAppMetadata = 3
	fieldDataBody    = 1000
)

var errTruncated = errors.New("truncated")

// decode reads a FlightData in two passes over gRPC's frames: the first
// finds where each field's bytes are, the second copies them to where
// they go. A bytes field given twice keeps its last value, as protobuf
// does; a descriptor given twice is merged.
func (m *PutMessage) decode(data mem.BufferSlice, headroom int) error {
	*m = PutMessage{headroom: headroom}
	r := reader{data: data, n: data.Len()}
	type span struct{ at, n int }
	var header, body, meta span
	var descs []span
	for r.more() {
		num, typ, err := r.tag()
		if err != nil {
			return err
		}
		if typ != protowire.BytesType {
			if num == fieldDescriptor || num == fieldDataHeader || num == fieldAppMetadata || num == fieldDataBody {
				return fmt.Errorf("field %d has wire type %d, want bytes", num, typ)
			}
			if err := r.skip(typ); err != nil {
				return fmt.Errorf("field %d: %w", num, err)
			}
			continue
		}
		n, err := r.varint()
		if err != nil {
			return fmt.Errorf("field %d length: %w", num, err)
		}
		if n > uint64(r.left()) {
			return fmt.Errorf("field %d: %d bytes declared, %d left", num, n, r.left())
		}
		s := span{r.off, int(n)}
		switch num {
		case fieldDescriptor:
			descs = append(descs, s)
		case fieldDataHeader:
			header = s
		case fieldAppMetadata:
			meta = s
		case fieldDataBody:
			body = s
		}
		r.off += int(n)
	}
	padded := (header.n + 7) &^ 7
	// Every byte of the buffer that Stream returns is written below (or
	// by Stream), so a recycled buffer is not cleared.
	m.buf = putPool.get(headroom + 8 + padded + body.n + 8)
	framed := m.buf[headroom:]
	binary.LittleEndian.PutUint32(framed, 0xFFFFFFFF)
	binary.LittleEndian.PutUint32(framed[4:], uint32(padded))
	m.Header = framed[8 : 8+header.n]
	r.copy(m.Header, header.at)
	clear(framed[8+header.n : 8+padded])
	m.Body = framed[8+padded : 8+padded+body.n]
	r.copy(m.Body, body.at)
	binary.LittleEndian.PutUint64(framed[8+padded+body.n:], 0xFFFFFFFF)
	if meta.n > 0 {
		m.AppMetadata = make([]byte, meta.n)
		r.copy(m.AppMetadata, meta.at)
	}
	for _, s := range descs {
		b := make([]byte, s.n)
		r.copy(b, s.at)
		if m.Descriptor == nil {
			m.Descriptor = &flight.FlightDescriptor{}
		}
		if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(b, m.Descriptor); err != nil {
			return fmt.Errorf("field %d (flight_descriptor): %w", fieldDescriptor, err)
		}
	}
	return nil
}

// reader reads protobuf wire data spread over gRPC's buffers, by offset
// into their concatenation.
type reader struct {
	data mem.BufferSlice
	n    int // data.Len()
	off  int
	// the buffer that holds off: its index and where it starts
	i, start int
}

func (r *reader) more() bool { return r.off < r.n }
func (r *reader) left() int  { return r.n - r.off }

// byteAt returns the byte at offset off, which must not be before the
// buffer the reader is in.
func (r *reader) byteAt(off int) (byte, bool) {
	for r.i < len(r.data) {
		b := r.data[r.i].ReadOnlyData()
		if off < r.start+len(b) {
			return b[off-r.start], true
		}
		r.start += len(b)
		r.i++
	}
	return 0, false
}

func (r *reader) varint() (uint64, error) {
	var v uint64
	for shift := 0; shift < 64; shift += 7 {
		b, ok := r.byteAt(r.off)
		if !ok {
			return 0, errTruncated
		}
		r.off++
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, errors.New("varint overflows 64 bits")
}

func (r *reader) tag() (protowire.Number, protowire.Type, error) {
	v, err := r.varint()
	if err != nil {
		return 0, 0, fmt.Errorf("field tag: %w", err)
	}
	num, typ := protowire.DecodeTag(v)
	if num < protowire.MinValidNumber {
		return 0, 0, fmt.Errorf("field number %d", num)
	}
	return num, typ, nil
}

// skip moves past a field of a type the decoder does not keep.
func (r *reader) skip(typ protowire.Type) error {
	n := 0
	switch typ {
	case protowire.VarintType:
		_, err := r.varint()
		return err
	case protowire.Fixed32Type:
		n = 4
	case protowire.Fixed64Type:
		n = 8
	default:
		return fmt.Errorf("wire type %d is not accepted", typ)
	}
	if n > r.left() {
		return errTruncated
	}
	r.off += n
	return nil
}

// copy fills dst from offset off, which may be before the reader's
// position (its buffers are walked again from the first).
func (r *reader) copy(dst []byte, off int) {
	start := 0
	for _, buf := range r.data {
		b := buf.ReadOnlyData()
		if len(dst) == 0 {
			return
		}
		if off < start+len(b) {
			n := copy(dst, b[max(off-start, 0):])
			dst = dst[n:]
			off += n
		}
		start += len(b)
	}
}
