package arcflight

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
)

// ErrNotOneRecord reports an IPC payload that is not exactly one record batch.
var ErrNotOneRecord = errors.New("payload must hold exactly one record batch")

// AppendFrame appends one encapsulated IPC message (continuation marker,
// padded metadata length, metadata, padding, body) as the Arrow IPC stream
// format lays it out. Flight carries the metadata and body of each message
// separately; framing them again turns a DoPut message into bytes that a
// plain IPC reader decodes, which is what the WAL stores.
func AppendFrame(dst, header, body []byte) []byte {
	padded := (len(header) + 7) &^ 7
	dst = binary.LittleEndian.AppendUint32(dst, 0xFFFFFFFF)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(padded))
	dst = append(dst, header...)
	dst = append(dst, make([]byte, padded-len(header))...)
	return append(dst, body...)
}

// AppendEOS appends the end-of-stream marker.
func AppendEOS(dst []byte) []byte {
	return binary.LittleEndian.AppendUint64(dst, 0xFFFFFFFF)
}

// DecodeRecord decodes an IPC stream of one schema and one record batch. The
// record owns its memory (allocated from mem), not the payload's.
func DecodeRecord(payload []byte, mem memory.Allocator) (arrow.RecordBatch, error) {
	return decodeOne(func() (*ipc.Reader, error) {
		return ipc.NewReader(bytes.NewReader(payload), ipc.WithAllocator(mem))
	}, true)
}

// DecodeRecordShared is DecodeRecord without the copy: the record's
// buffers are slices of payload, which must not change while the record
// lives (the record keeps it from being collected). The Flight receiver
// decodes the payload it writes to the WAL this way, so a batch's bytes
// are held once, not twice, until it is flushed.
func DecodeRecordShared(payload []byte, mem memory.Allocator) (arrow.RecordBatch, error) {
	return decodeOne(func() (*ipc.Reader, error) {
		return ipc.NewReaderFromMessageReader(&memMessages{data: payload}, ipc.WithAllocator(mem))
	}, true)
}

// StreamDecoder decodes the record batches of one DoPut stream, all of
// one schema, as DecodeRecordShared does each: the IPC reader decodes a
// schema message every time it opens, which cost as much as decoding the
// batch, so one reader is kept for the stream and fed one batch message
// at a time.
type StreamDecoder struct {
	src *memMessages
	r   *ipc.Reader
	err error // the first batch refused
}

// NewStreamDecoder opens a decoder for batches of the schema that
// schemaFrame (a SchemaFrame) encodes.
func NewStreamDecoder(schemaFrame []byte, mem memory.Allocator) (*StreamDecoder, error) {
	d := &StreamDecoder{src: &memMessages{data: schemaFrame}}
	r, err := ipc.NewReaderFromMessageReader(d.src, ipc.WithAllocator(mem))
	if err != nil {
		return nil, fmt.Errorf("read arrow schema: %w", err)
	}
	d.r = r
	return d, nil
}

// Decode returns the record of one encapsulated record batch message
// (AppendFrame), which an end-of-stream marker may follow and nothing
// else. Its buffers are slices of framed, as with DecodeRecordShared. A
// decoder that returned an error returns it for every later batch.
//
// done, if not nil, is called once nothing decoded from framed is held any
// more: the record and every array or slice of it released, and the
// decoder done with the message (at the next Decode or Release). It may
// not be called if Decode returns an error.
func (d *StreamDecoder) Decode(framed []byte, done func()) (arrow.RecordBatch, error) {
	if d.err != nil {
		return nil, d.err
	}
	d.src.data, d.src.done = framed, done
	rec, err := decodeOne(func() (*ipc.Reader, error) {
		d.r.Retain() // decodeOne releases the reader it is given
		return d.r, nil
	}, false)
	d.src.done = nil // not another message's, had the reader not taken it
	if err == nil && len(d.src.data) != 0 && !isEOS(d.src.data) {
		rec.Release()
		rec, err = nil, ErrNotOneRecord
	}
	d.err = err
	return rec, err
}

// Schema is the schema of every record the decoder returns (the same
// *arrow.Schema each time).
func (d *StreamDecoder) Schema() *arrow.Schema { return d.r.Schema() }

// Release releases the reader, the last record and message it holds.
func (d *StreamDecoder) Release() {
	d.r.Release()
	d.src.release()
}

func isEOS(b []byte) bool {
	return len(b) == 8 && binary.LittleEndian.Uint64(b) == 0xFFFFFFFF
}

// decodeOne reads the one record of the reader open returns; last says
// that the stream must end after it.
func decodeOne(open func() (*ipc.Reader, error), last bool) (rec arrow.RecordBatch, err error) {
	// The IPC reader panics on some malformed messages; a bad batch must be
	// an error for its stream, not a crash of the sidecar.
	defer func() {
		if p := recover(); p != nil {
			if rec != nil {
				rec.Release()
			}
			rec, err = nil, fmt.Errorf("malformed arrow ipc: %v", p)
		}
	}()
	r, err := open()
	if err != nil {
		return nil, fmt.Errorf("read arrow schema: %w", err)
	}
	defer r.Release()
	if !r.Next() {
		if err := r.Err(); err != nil {
			return nil, fmt.Errorf("read arrow record batch: %w", err)
		}
		return nil, ErrNotOneRecord
	}
	rec = r.RecordBatch()
	rec.Retain()
	if !last {
		return rec, nil
	}
	if r.Next() {
		rec.Release()
		return nil, ErrNotOneRecord
	}
	if err := r.Err(); err != nil {
		rec.Release()
		return nil, fmt.Errorf("read arrow record batch: %w", err)
	}
	return rec, nil
}

// memMessages reads the encapsulated messages of an IPC stream held in
// memory, each message's metadata and body a slice of it (ipc's own
// message reader copies every body into a new buffer).
type memMessages struct {
	data []byte
	// done is called when the body of the next message is released by all
	// its holders (ipc's arrays take a reference to the body they slice);
	// the reader keeps last until the message after it.
	done func()
	last *ipc.Message
}

var errFrame = errors.New("malformed IPC message frame")

func (m *memMessages) Message() (*ipc.Message, error) {
	meta, body, err := m.next()
	if err != nil {
		return nil, err
	}
	m.release()
	if m.done == nil {
		return ipc.NewMessage(memory.NewBufferBytes(meta), memory.NewBufferBytes(body)), nil
	}
	b := memory.NewBufferWithAllocator(body, doneFree(m.done))
	m.done = nil
	m.last = ipc.NewMessage(memory.NewBufferBytes(meta), b)
	b.Release() // the message's reference is the only one
	return m.last, nil
}

// release drops the reference the reader left with the last message.
func (m *memMessages) release() {
	if m.last != nil {
		m.last.Release()
		m.last = nil
	}
}

// doneFree is the allocator of a body buffer that memMessages did not
// allocate: Free, when the last reference to it is released, calls the
// function. Nothing allocates with it.
type doneFree func()

func (f doneFree) Allocate(int) []byte { panic("arcflight: allocate from a message body") }
func (f doneFree) Reallocate(int, []byte) []byte {
	panic("arcflight: reallocate a message body")
}
func (f doneFree) Free([]byte) { f() }

// next returns the metadata and body of the next message; io.EOF at the
// end-of-stream marker.
func (m *memMessages) next() (meta, body []byte, err error) {
	if len(m.data) < 8 || binary.LittleEndian.Uint32(m.data) != 0xFFFFFFFF {
		return nil, nil, errFrame
	}
	n := int64(binary.LittleEndian.Uint32(m.data[4:]))
	if n == 0 { // end of stream
		return nil, nil, io.EOF
	}
	if n > int64(len(m.data)-8) {
		return nil, nil, errFrame
	}
	meta = m.data[8 : 8+n]
	bodyLen, err := messageBodyLength(meta)
	if err != nil {
		return nil, nil, err
	}
	rest := m.data[8+n:]
	if bodyLen < 0 || bodyLen > int64(len(rest)) {
		return nil, nil, fmt.Errorf("%w: a body of %d bytes in %d", errFrame, bodyLen, len(rest))
	}
	m.data = rest[bodyLen:]
	return meta, rest[:bodyLen], nil
}

// Rows counts the rows of the record batches of an IPC stream held in
// memory from their headers, checked as CheckMessage checks them, without
// decoding a batch: a stream that may be damaged (a WAL record a repair
// drops) is read, never trusted with an allocation.
func Rows(stream []byte) (rows int64, err error) {
	m := &memMessages{data: stream}
	for {
		meta, body, err := m.next()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return 0, err
		}
		if CheckMessage(meta, body) != nil {
			if isSchema(meta) {
				continue
			}
			return 0, fmt.Errorf("%w: neither a schema nor a valid record batch", errFrame)
		}
		rows += batchRows(meta)
	}
}

// isSchema reports whether a Message flatbuffer is a schema message.
func isSchema(meta []byte) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	msg := flatbuffers.Table{Bytes: meta, Pos: flatbuffers.GetUOffsetT(meta)}
	o := flatbuffers.UOffsetT(msg.Offset(slotHeaderType))
	return o != 0 && msg.GetByte(o+msg.Pos) == headerSchema
}

// batchRows reads the row count of a record batch message CheckMessage
// passed.
func batchRows(meta []byte) int64 {
	msg := flatbuffers.Table{Bytes: meta, Pos: flatbuffers.GetUOffsetT(meta)}
	var batch flatbuffers.Table
	msg.Union(&batch, flatbuffers.UOffsetT(msg.Offset(slotHeader)))
	if o := flatbuffers.UOffsetT(batch.Offset(slotLength)); o != 0 {
		return batch.GetInt64(o + batch.Pos)
	}
	return 0
}

// messageBodyLength reads a Message flatbuffer's bodyLength.
func messageBodyLength(meta []byte) (n int64, err error) {
	defer func() {
		if recover() != nil {
			n, err = 0, fmt.Errorf("%w: metadata is not a valid flatbuffer", errFrame)
		}
	}()
	if len(meta) < 8 {
		return 0, errFrame
	}
	msg := flatbuffers.Table{Bytes: meta, Pos: flatbuffers.GetUOffsetT(meta)}
	if o := flatbuffers.UOffsetT(msg.Offset(slotBodyLength)); o != 0 {
		return msg.GetInt64(o + msg.Pos), nil
	}
	return 0, nil
}

func (m *memMessages) Retain()  {}
func (m *memMessages) Release() {}

// SchemaFrame returns the encapsulated IPC schema message of s as arrow-go
// writes it. The sidecar builds every stream it decodes from this frame
// rather than from the client's schema message: decoding a hostile schema
// message can make the IPC reader allocate without bound (a field count is
// trusted before it is checked), while comparing bytes cannot.
func SchemaFrame(s *arrow.Schema) []byte {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(s))
	if err := w.Close(); err != nil {
		panic(fmt.Sprintf("arcflight: encode schema: %v", err))
	}
	return buf.Bytes()[:buf.Len()-8] // drop the end-of-stream marker
}

// SameSchemaHeader reports whether a Flight message header is the schema
// message of frame (a SchemaFrame), up to padding.
func SameSchemaHeader(frame, header []byte) bool {
	if len(frame) < 8 {
		return false
	}
	want := frame[8 : 8+int(binary.LittleEndian.Uint32(frame[4:8]))]
	if len(header) > len(want) || !bytes.Equal(want[:len(header)], header) {
		return false
	}
	for _, b := range want[len(header):] {
		if b != 0 {
			return false
		}
	}
	return true
}

// Errors CheckMessage returns.
var (
	ErrBodyLength  = errors.New("message body length does not match its header")
	ErrNotBatch    = errors.New("message is not a record batch")
	ErrCompression = errors.New("IPC body compression is not accepted (use gRPC compression)")
)

// flatbuffer layout of the IPC Message table (Message.fbs): vtable slots of
// header_type, header and bodyLength; and of the RecordBatch table's
// compression field. MessageHeader 3 is RecordBatch.
const (
	slotHeaderType  = 6
	slotHeader      = 8
	slotBodyLength  = 10
	slotCompression = 10
	slotLength      = 4
	slotNodes       = 6
	slotBuffers     = 8
	slotVariadic    = 12
	slotCustomMeta  = 12
	headerSchema    = 1
	headerRecord    = 3
	fieldNodeSize   = 16
)

// CheckMessage checks a record batch message before the IPC reader sees it,
// because the reader trusts what the header declares: it allocates the
// declared body length, and the declared uncompressed size of compressed
// buffers (a decompression bomb). The body must be exactly as long as
// declared and uncompressed: the exporter never compresses IPC bodies.
func CheckMessage(header, body []byte) (err error) {
	defer func() {
		if recover() != nil {
			err = fmt.Errorf("%w: header is not a valid flatbuffer", ErrNotBatch)
		}
	}()
	if len(header) < 8 {
		return fmt.Errorf("%w: header of %d bytes", ErrNotBatch, len(header))
	}
	msg := flatbuffers.Table{Bytes: header, Pos: flatbuffers.GetUOffsetT(header)}
	if o := flatbuffers.UOffsetT(msg.Offset(slotHeaderType)); o == 0 || msg.GetByte(o+msg.Pos) != headerRecord {
		return ErrNotBatch
	}
	var declared int64
	if o := flatbuffers.UOffsetT(msg.Offset(slotBodyLength)); o != 0 {
		declared = msg.GetInt64(o + msg.Pos)
	}
	if declared != int64(len(body)) {
		return fmt.Errorf("%w: header says %d bytes, got %d", ErrBodyLength, declared, len(body))
	}
	o := flatbuffers.UOffsetT(msg.Offset(slotHeader))
	if o == 0 {
		return ErrNotBatch
	}
	var batch flatbuffers.Table
	msg.Union(&batch, o)
	// The reader sizes slices by vector lengths before reading them: a
	// vector cannot be longer than the header that holds it.
	for _, v := range []struct {
		t          *flatbuffers.Table
		slot, size int
	}{{&msg, slotCustomMeta, 4}, {&batch, slotNodes, fieldNodeSize}, {&batch, slotBuffers, 16}, {&batch, slotVariadic, 8}} {
		if vo := flatbuffers.UOffsetT(v.t.Offset(flatbuffers.VOffsetT(v.slot))); vo != 0 && v.t.VectorLen(vo)*v.size > len(header) {
			return fmt.Errorf("%w: a vector of %d elements in a %d-byte header", ErrNotBatch, v.t.VectorLen(vo), len(header))
		}
	}
	if batch.Offset(slotCompression) != 0 {
		return ErrCompression
	}
	return checkLengths(&batch, int64(len(body)))
}

// ErrLength reports row counts that the body cannot hold.
var ErrLength = errors.New("declared row count exceeds what the body can hold")

// checkLengths bounds the batch's and every field node's row count by the
// body's size in bits (a boolean row takes one bit): larger counts can only
// make the reader allocate for rows that are not there.
func checkLengths(batch *flatbuffers.Table, bodyLen int64) error {
	limit := bodyLen*8 + 8
	if o := flatbuffers.UOffsetT(batch.Offset(slotLength)); o != 0 {
		if n := batch.GetInt64(o + batch.Pos); n < 0 || n > limit {
			return fmt.Errorf("%w: batch of %d rows in %d bytes", ErrLength, n, bodyLen)
		}
	}
	o := flatbuffers.UOffsetT(batch.Offset(slotNodes))
	if o == 0 {
		return nil
	}
	vec := batch.Vector(o)
	for i := range batch.VectorLen(o) {
		pos := vec + flatbuffers.UOffsetT(i*fieldNodeSize)
		n := flatbuffers.GetInt64(batch.Bytes[pos:])
		nulls := flatbuffers.GetInt64(batch.Bytes[pos+8:])
		if n < 0 || n > limit || nulls < 0 || nulls > n {
			return fmt.Errorf("%w: field node %d declares %d rows, %d nulls", ErrLength, i, n, nulls)
		}
	}
	return nil
}

// SchemaFrameLen returns the length of the schema message that opens an IPC
// stream (continuation marker, length, metadata; a schema has no body), or
// 0 if the stream is too short to hold one.
func SchemaFrameLen(stream []byte) int {
	if len(stream) < 8 {
		return 0
	}
	n := 8 + int(binary.LittleEndian.Uint32(stream[4:8]))
	if n > len(stream) {
		return 0
	}
	return n
}
