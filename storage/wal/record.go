package wal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Frame returns a whole record (frame header and payload parts), as Write
// puts it on disk.
func Frame(parts ...[]byte) []byte {
	n, crc := 0, uint32(0)
	for _, p := range parts {
		n += len(p)
		crc = crc32.Update(crc, castagnoli, p)
	}
	out := make([]byte, HeaderSize, HeaderSize+n)
	binary.LittleEndian.PutUint32(out[0:4], uint32(n))
	binary.LittleEndian.PutUint32(out[4:8], crc)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// ReadRecord returns the payload of the record at the start of b and the
// record's size. Errors wrap ErrCorrupt.
func ReadRecord(b []byte) (payload []byte, n int, err error) {
	if len(b) < HeaderSize {
		return nil, 0, fmt.Errorf("%w: %d header bytes", ErrCorrupt, len(b))
	}
	size := int(binary.LittleEndian.Uint32(b[0:4]))
	if size > MaxRecordSize || len(b)-HeaderSize < size {
		return nil, 0, fmt.Errorf("%w: length %d exceeds the %d bytes left", ErrCorrupt, size, len(b)-HeaderSize)
	}
	payload = b[HeaderSize : HeaderSize+size]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(b[4:8]) {
		return nil, 0, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	return payload, HeaderSize + size, nil
}
