package inflate

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"
)

// decompressors keeps decoders' tables (tens of KB) between streams.
var decompressors = sync.Pool{New: func() any { return new(decompressor) }}

func (d *decompressor) reset(in, out []byte, limit int) {
	d.in, d.pos, d.bits, d.nbits = in, 0, 0, 0
	d.out, d.n, d.start, d.limit = out, 0, 0, limit
	d.claim = 0
	if c := ClaimedSize(in); c <= limit {
		d.claim = c
	}
}

// release returns d to the pool without the caller's memory.
func (d *decompressor) release() {
	d.in, d.out = nil, nil
	decompressors.Put(d)
}

// ErrChecksum is a gzip member whose trailer does not match what it
// decoded to.
var ErrChecksum = fmt.Errorf("%w: gzip checksum or size does not match", ErrCorrupt)

// gzip header (RFC 1952).
const (
	gzipID1     = 0x1f
	gzipID2     = 0x8b
	gzipDeflate = 8
	flagHdrCRC  = 1 << 1
	flagExtra   = 1 << 2
	flagName    = 1 << 3
	flagComment = 1 << 4
	// maxHeaderString is the longest file name or comment compress/gzip
	// reads (with its terminating zero), kept so both accept the same
	// streams.
	maxHeaderString = 512
	// trustedRatio bounds the output allocated on a trailer's word alone.
	trustedRatio = 32
)

// Gunzip decodes the gzip stream src (one member or several, as
// concatenated by gzip tools) into buf's memory when it is large enough
// and returns the decoded bytes. It refuses with ErrTooLarge a stream that
// decodes to more than limit bytes, before holding more than that.
//
// It reads the stream whole, where compress/gzip and klauspost's gzip read
// a byte at a time through an io.Reader; on the Arc API's bodies it
// decodes about twice as fast (BenchmarkGunzip).
func Gunzip(buf, src []byte, limit int) ([]byte, error) {
	if len(src) == 0 {
		return nil, fmt.Errorf("%w: empty gzip stream", ErrTruncated)
	}
	d := decompressors.Get().(*decompressor)
	defer d.release()
	d.reset(src, buf[:cap(buf)], limit)
	if size := OutputSize(src, limit); size > len(d.out) {
		d.out = make([]byte, size)
	}
	for {
		if err := d.header(); err != nil {
			return nil, err
		}
		start := d.n
		if err := d.inflate(); err != nil {
			return nil, err
		}
		if d.pos+8 > len(d.in) {
			return nil, fmt.Errorf("%w: gzip trailer", ErrTruncated)
		}
		sum, size := binary.LittleEndian.Uint32(d.in[d.pos:]), binary.LittleEndian.Uint32(d.in[d.pos+4:])
		d.pos += 8
		if sum != crc32.ChecksumIEEE(d.out[start:d.n]) || size != uint32(d.n-start) {
			return nil, ErrChecksum
		}
		if d.pos == len(d.in) {
			return d.out[:d.n], nil
		}
	}
}

// OutputSize is the buffer Gunzip decodes src into without allocating,
// when src is one gzip member decoding to at most limit bytes.
//
// A member's trailer ends with its size (modulo 2^32): the last one's sizes
// the output of the usual single-member body at once. A stream can claim
// any size there, so the claim is trusted only up to a ratio real bodies
// do not reach; a stream that decodes past it has shown it is that
// compressible, and its output grows to the claim (within the limit) at
// once, not by doubling: the buffers a doubling leaves behind would add up
// to the output again.
func OutputSize(src []byte, limit int) int {
	claim := ClaimedSize(src)
	if claim < 0 {
		return 0
	}
	return min(claim, limit, trustedRatio*len(src)) + Margin
}

// Margin is the room Gunzip keeps past the output it decodes (for its
// fast loop): a buffer it grows holds at most limit+Margin bytes.
const Margin = maxMatch + slack

// ClaimedSize is the decompressed size src's trailer claims (for its last
// member, modulo 2^32), or -1 when src is too short to be a gzip member.
func ClaimedSize(src []byte) int {
	if len(src) < 18 {
		return -1
	}
	return int(binary.LittleEndian.Uint32(src[len(src)-4:]))
}

// header reads a gzip member's header, as compress/gzip does: the magic
// bytes and method checked, the optional fields skipped, the header's CRC
// checked when it has one.
func (d *decompressor) header() error {
	in := d.in[d.pos:]
	if len(in) < 10 {
		return fmt.Errorf("%w: gzip header", ErrTruncated)
	}
	if in[0] != gzipID1 || in[1] != gzipID2 || in[2] != gzipDeflate {
		return fmt.Errorf("%w: not a gzip header", ErrCorrupt)
	}
	flags := in[3]
	n := 10
	if flags&flagExtra != 0 {
		if len(in) < n+2 {
			return fmt.Errorf("%w: gzip header", ErrTruncated)
		}
		n += 2 + int(binary.LittleEndian.Uint16(in[n:]))
	}
	for _, f := range []byte{flagName, flagComment} {
		if flags&f == 0 || n > len(in) {
			continue
		}
		end := bytes.IndexByte(in[n:min(len(in), n+maxHeaderString)], 0)
		if end < 0 {
			if len(in) < n+maxHeaderString {
				return fmt.Errorf("%w: gzip header", ErrTruncated)
			}
			return fmt.Errorf("%w: gzip header string too long", ErrCorrupt)
		}
		n += end + 1
	}
	if flags&flagHdrCRC != 0 {
		if len(in) < n+2 {
			return fmt.Errorf("%w: gzip header", ErrTruncated)
		}
		if binary.LittleEndian.Uint16(in[n:]) != uint16(crc32.ChecksumIEEE(in[:n])) {
			return fmt.Errorf("%w: gzip header checksum", ErrCorrupt)
		}
		n += 2
	}
	if n > len(in) {
		return fmt.Errorf("%w: gzip header", ErrTruncated)
	}
	d.pos += n
	return nil
}
