package wal

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// SegmentMagic opens every segment written since format version 2. Read
// as a version 1 record's length it is over MaxRecordSize, so a segment
// of either version is told apart by its first bytes.
var SegmentMagic = [8]byte{'A', 'R', 'C', 'W', 'A', 'L', 0, 2}

// SegmentHeaderSize is the size of a version 2 segment's header:
// SegmentMagic, then a random nonce drawn for each life of the file.
const SegmentHeaderSize = 16

// newHeader is the header of a new life of a segment file.
func newHeader() (h [SegmentHeaderSize]byte, err error) {
	copy(h[:], SegmentMagic[:])
	if _, err := rand.Read(h[len(SegmentMagic):]); err != nil {
		return h, fmt.Errorf("draw wal segment nonce: %w", err)
	}
	return h, nil
}

// headerSeed is the checksum a version 2 segment's records start from: the
// segment's sequence number and its header's nonce. A recycled segment
// file still holds records of its previous life behind the new ones; bound
// to another number and nonce, they fail their checksum and read as the
// end of the segment. The nonce also makes a frame that a client smuggled
// into a payload worthless in any later life of the file: it cannot be
// guessed.
func headerSeed(seq uint64, header []byte) uint32 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seq)
	return crc32.Update(crc32.Update(0, castagnoli, b[:]), castagnoli, header[len(SegmentMagic):SegmentHeaderSize])
}

// endMarker ends the records of a version 2 segment whose file holds more
// behind them (a recycled file): a frame whose length no record has, bound
// to the segment like its records.
func endMarker(seed uint32) (m [HeaderSize]byte) {
	binary.LittleEndian.PutUint32(m[0:4], ^uint32(0))
	binary.LittleEndian.PutUint32(m[4:8], ^seed)
	return m
}

// errTornHeader is a version 2 header cut short: the segment's first
// commit never finished.
var errTornHeader = fmt.Errorf("%w: segment header cut short", ErrCorrupt)

// segmentFormat returns where the records of a segment's data start, the
// checksum seed they take and the marker that ends them: after the header,
// bound to seq and the nonce (version 2); or at 0, unbound and with no
// marker (version 1, before recycling).
func segmentFormat(data []byte, seq uint64) (start int, seed uint32, end []byte, err error) {
	if !bytes.HasPrefix(data, SegmentMagic[:]) {
		return 0, 0, nil, nil
	}
	if len(data) < SegmentHeaderSize {
		return 0, 0, nil, errTornHeader
	}
	seed = headerSeed(seq, data)
	m := endMarker(seed)
	return SegmentHeaderSize, seed, m[:], nil
}

// Frame returns a whole record (frame header and payload parts) as a
// version 1 segment holds it; tests build old segments with it.
func Frame(parts ...[]byte) []byte { return frame(0, parts) }

// FrameIn returns a whole record as version 2 segment seq, whose data
// starts with segment (its header), holds it; tests append records to
// segments with it.
func FrameIn(seq uint64, segment []byte, parts ...[]byte) []byte {
	return frame(headerSeed(seq, segment), parts)
}

func frame(seed uint32, parts [][]byte) []byte {
	n, crc := 0, seed
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

// ReadRecord returns the payload of the version 1 record at the start of b
// and the record's size. Errors wrap ErrCorrupt.
func ReadRecord(b []byte) (payload []byte, n int, err error) { return readRecord(b, 0) }

func readRecord(b []byte, seed uint32) (payload []byte, n int, err error) {
	if len(b) < HeaderSize {
		return nil, 0, fmt.Errorf("%w: %d header bytes", ErrCorrupt, len(b))
	}
	size := int(binary.LittleEndian.Uint32(b[0:4]))
	if size > MaxRecordSize || len(b)-HeaderSize < size {
		return nil, 0, fmt.Errorf("%w: length %d exceeds the %d bytes left", ErrCorrupt, size, len(b)-HeaderSize)
	}
	payload = b[HeaderSize : HeaderSize+size]
	if crc32.Update(seed, castagnoli, payload) != binary.LittleEndian.Uint32(b[4:8]) {
		return nil, 0, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	return payload, HeaderSize + size, nil
}
