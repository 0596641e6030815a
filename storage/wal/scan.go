package wal

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"sync"
)

// nextFrame returns the offset of the first frame after the bad one at off
// that is valid under seed, or of the end marker, whichever comes first;
// -1 if there is none. Only a segment bound to a seed (version 2) is
// searched: unbound, a frame a client put in a payload would pass.
//
// A bad frame with something valid behind it was written, and so were the
// frames behind it: it is damage, not a torn tail (process crashes leave
// a file's written bytes a prefix of what was written; a recycled file's
// older bytes are bound to another seed). The frame's own length is tried
// first, then every offset from the shortest possible frame on. A frame
// found by that search counts only if a valid frame, the end marker or the
// end of data follows it: each offset tried is a 2^-32 chance that random
// bytes pass the checksum, and tens of MiB of a recycled file's old bytes
// are tens of millions of offsets.
func nextFrame(data []byte, off int, seed uint32, end []byte) int {
	if end == nil || len(data)-off < 2*HeaderSize {
		return -1
	}
	valid := func(q int) (int, bool) {
		if bytes.HasPrefix(data[q:], end) {
			return q, true
		}
		_, n, err := readRecord(data[q:], seed)
		return q + n, err == nil
	}
	if size := int(binary.LittleEndian.Uint32(data[off:])); size <= len(data)-off-2*HeaderSize {
		if _, ok := valid(off + HeaderSize + size); ok {
			return off + HeaderSize + size
		}
	}
	c := newCRCIndex(data, off+2*HeaderSize)
	for q := off + HeaderSize; q+HeaderSize <= len(data); q++ {
		size := int(binary.LittleEndian.Uint32(data[q:]))
		if size > len(data)-q-HeaderSize || size > MaxRecordSize {
			// The end marker's length is one no record has.
			if bytes.HasPrefix(data[q:], end) {
				return q
			}
			continue
		}
		p := q + HeaderSize
		if c.checksum(seed, p, p+size) != binary.LittleEndian.Uint32(data[q+4:]) {
			continue
		}
		e := p + size
		if e == len(data) {
			return q
		}
		if _, ok := valid(e); ok {
			return q
		}
	}
	return -1
}

// crcIndex answers the checksum of any stretch of data in constant time,
// so that searching every offset for a frame costs what the data's size
// does, not its size times the lengths the offsets happen to declare.
// CRC-32C is linear: the checksum of b seeded with s is s shifted over
// len(b) zero bytes, XORed with b's checksum from zero, and b's is the
// difference of two prefix checksums, the first shifted likewise.
type crcIndex struct {
	data   []byte
	from   int
	prefix []uint32 // prefix[i]: checksum of data[from:from+i*crcStride]
}

// crcStride is how many bytes apart the index keeps prefix checksums: a
// sixteenth of the data's size in memory, at most this many bytes
// checksummed per look-up.
const crcStride = 64

func newCRCIndex(data []byte, from int) *crcIndex {
	from = min(from, len(data))
	c := &crcIndex{data: data, from: from, prefix: make([]uint32, 0, (len(data)-from)/crcStride+1)}
	var crc uint32
	c.prefix = append(c.prefix, crc)
	for i := from; i+crcStride <= len(data); i += crcStride {
		crc = crc32.Update(crc, castagnoli, data[i:i+crcStride])
		c.prefix = append(c.prefix, crc)
	}
	return c
}

// at is the checksum of data[from:i].
func (c *crcIndex) at(i int) uint32 {
	k := (i - c.from) / crcStride
	start := c.from + k*crcStride
	return crc32.Update(c.prefix[k], castagnoli, c.data[start:i])
}

// checksum is crc32.Update(seed, castagnoli, data[p:e]); p must not be
// before the index's start.
func (c *crcIndex) checksum(seed uint32, p, e int) uint32 {
	if e-p <= 4*crcStride {
		return crc32.Update(seed, castagnoli, c.data[p:e])
	}
	return shiftCRC(seed^c.at(p), e-p) ^ c.at(e)
}

// shiftCRC returns crc shifted over n zero bytes: crc·x^(8n) modulo the
// polynomial.
func shiftCRC(crc uint32, n int) uint32 {
	shiftOnce.Do(initShifts)
	for i := 0; n != 0; i, n = i+1, n>>8 {
		if b := n & 0xff; b != 0 {
			crc = mulMod(shifts[i][b], crc)
		}
	}
	return crc
}

// shifts[i][b] is x^(8·b·256^i) modulo the polynomial: a shift over n
// bytes takes one product per non-zero byte of n.
var (
	shifts    [8][256]uint32
	shiftOnce sync.Once
)

func initShifts() {
	// Bit-reflected, as hash/crc32 computes: bit 31 is x^0, bit 30 x^1.
	one := uint32(1) << 31
	byteShift := one >> 8 // x^8
	for i := range shifts {
		shifts[i][0] = one
		for b := 1; b < 256; b++ {
			shifts[i][b] = mulMod(shifts[i][b-1], byteShift)
		}
		// x^(8·256^(i+1)) is the next row's one-byte shift.
		byteShift = mulMod(shifts[i][255], byteShift)
	}
}

// mulMod returns a·b modulo CRC-32C's polynomial, bit-reflected (bit 31
// is x^0). It takes a four bits at a time, highest powers first (Horner):
// the product so far times x^4, plus a's next four bits times b, read from
// a table of the sixteen such products.
func mulMod(a, b uint32) uint32 {
	var t [16]uint32
	// A nibble of a, as the word holds it, has x^0 of its four powers in
	// its highest bit.
	t[8] = b
	t[4] = mulX(t[8])
	t[2] = mulX(t[4])
	t[1] = mulX(t[2])
	for v := 3; v < 16; v++ {
		if v&(v-1) != 0 {
			t[v] = t[v&8] ^ t[v&4] ^ t[v&2] ^ t[v&1]
		}
	}
	var p uint32
	for s := 0; s < 32; s += 4 {
		p = p>>4 ^ mulX4[p&15] ^ t[a>>s&15]
	}
	return p
}

// mulX returns b·x modulo the polynomial.
func mulX(b uint32) uint32 { return b>>1 ^ crc32.Castagnoli&-(b&1) }

// mulX4[v] is v·x^4 modulo the polynomial for v < 16; a word's higher
// bits shift down four without reduction.
var mulX4 = func() (t [16]uint32) {
	for v := range t {
		t[v] = mulX(mulX(mulX(mulX(uint32(v)))))
	}
	return t
}()
