package arcflight

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
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
	r, err := ipc.NewReader(bytes.NewReader(payload), ipc.WithAllocator(mem))
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
	rec := r.RecordBatch()
	rec.Retain()
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
