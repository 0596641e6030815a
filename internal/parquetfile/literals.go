package parquetfile

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"slices"

	"github.com/klauspost/compress/huff0"
)

// Pages of random identifiers (hex trace and span ids, UUIDs) get all of
// their zstd compression from zstd's literal coder, huff0: 16 distinct
// bytes take about 4 bits each. zstd's match search finds nothing in them
// and is most of its time there (BenchmarkPageZstdByColumn: 32-hex ids at
// 298 MB/s for a 2.06x ratio, huff0 alone 910 MB/s for 1.91x). Such a
// page is written as a zstd frame of huff0-coded literal blocks with no
// sequences: a frame every zstd decoder reads (RFC 8878), made without
// the search. Two tests keep it to such pages. The writer marks only
// columns of distinct values (dictColumn.distinct): ids that repeat, as a
// trace's spans share one, are matches zstd finds at any distance, which
// a sample would miss. The codec then takes a page only where a sample of
// its start shows zstd's matches paying less than literalsSlack: distinct
// text (messages, paths) repeats its words. Ids of one width are written
// DELTA_LENGTH_BYTE_ARRAY (idEncoding) and keep zstd: with no length
// before each id, its search skips through them at nearly huff0's speed
// and size, and the lengths packed at the page's start tip the sample its
// way. What takes these frames is distinct strings of varying width,
// written PLAIN.
const (
	// literalsMinPage is the smallest page tested for literals-only
	// coding: below it the test is not worth its fixed cost.
	literalsMinPage = 64 << 10
	// literalsMaxPage bounds the pages coded so: a single-segment frame's
	// window is its content, which decoders cap (libzstd at 128 MiB by
	// default); pages are 1 MiB (DataPageBytes).
	literalsMaxPage = 8 << 20
	// literalsSample is how much of a page's start both coders compress
	// to choose between them.
	literalsSample = 8 << 10
	// huffMaxRatio is the most huff0 can shrink anything (one bit per
	// byte): a sample zstd shrinks more than that needs no huff0 pass.
	huffMaxRatio = 8
	// literalsSlack is how much larger than zstd's output huff0's may be,
	// in percent, for a page to be coded as literals only.
	literalsSlack = 10
	// rawSlack is the least zstd must shrink a page's sample by, in
	// percent, for the page to be compressed at all: on random floats
	// zstd's fastest level searches a whole 1 MiB page for matches and
	// stores it raw in the end (BenchmarkPageZstdByColumn's
	// random-floats: a ratio of 1.0 in 4-50x the time of a copy).
	rawSlack = 3
)

// incompressible reports whether a sample that zstd coded in zstdSample
// bytes shrank by less than rawSlack percent.
func incompressible(zstdSample int) bool {
	return zstdSample*100 >= literalsSample*(100-rawSlack)
}

// zstd framing (RFC 8878, section 3.1.1).
const (
	zstdMagic           = 0xFD2FB528
	zstdSingleSegment   = 1 << 5
	zstdMaxBlock        = 128 << 10 // Block_Maximum_Size
	zstdBlockRaw        = 0
	zstdBlockRLE        = 1
	zstdBlockCompressed = 2
	zstdLiteralsHuffman = 2 // Compressed_Literals_Block
	// huff0's four streams need at least this many literals; zstd's own
	// encoder switches to them from here.
	literalsMinFourStreams = 1024
)

// literalsScratch is what choosing and writing a literals-only frame
// needs between pages.
type literalsScratch struct {
	huff   huff0.Scratch
	sample []byte // zstd's output for the sample
}

// literalsOnly reports whether src, a page, compresses to within
// literalsSlack of zstd's size with huff0 alone, judged on its first
// literalsSample bytes (one block): zstdSample is zstd's output for them.
func literalsOnly(src []byte, zstdSample int, s *literalsScratch) bool {
	sample := src[:min(len(src), literalsSample)]
	if zstdSample*huffMaxRatio < len(sample) {
		return false
	}
	n := len(sample) // stored raw
	switch out, ok := huffBlock(sample, &s.huff); {
	case ok:
		n = len(out)
	case out != nil: // one byte repeated
		n = 1
	}
	return n*100 <= zstdSample*(100+literalsSlack)
}

// huffBlock codes one block's literals with four huff0 streams and their
// own table. It returns ok == false and a non-nil out of one byte when the
// block is one byte repeated, and ok == false and nil when it is better
// stored raw.
func huffBlock(block []byte, s *huff0.Scratch) (out []byte, ok bool) {
	if len(block) < literalsMinFourStreams {
		return nil, false
	}
	// Each frame stands alone: no block may reuse a table of another
	// frame, so none reuses one at all.
	s.Reuse = huff0.ReusePolicyNone
	out, _, err := huff0.Compress4X(block, s)
	switch {
	case err == nil:
		if literalsHeaderSize(len(out), len(block))+len(out)+1 >= len(block) {
			return nil, false
		}
		return out, true
	case errors.Is(err, huff0.ErrUseRLE):
		return block[:1], false
	}
	return nil, false // huff0.ErrIncompressible, or too large for huff0
}

// appendLiteralsFrame appends src, less than 4 GiB (its size goes in four
// bytes; pages are at most literalsMaxPage), as one single-segment zstd
// frame of literal-only blocks (huff0-coded, RLE or raw, whichever is
// smallest per block).
func appendLiteralsFrame(dst, src []byte, s *huff0.Scratch) []byte {
	return appendFrame(dst, src, func(dst, block []byte, last bool) []byte {
		out, ok := huffBlock(block, s)
		switch {
		case ok:
			dst = appendBlockHeader(dst, last, zstdBlockCompressed, literalsHeaderSize(len(out), len(block))+len(out)+1)
			dst = appendLiteralsHeader(dst, len(out), len(block))
			dst = append(dst, out...)
			return append(dst, 0) // Number_of_Sequences: none
		case out != nil:
			dst = appendBlockHeader(dst, last, zstdBlockRLE, len(block))
			return append(dst, out[0])
		}
		return appendRawBlock(dst, block, last)
	})
}

// appendRawFrame appends src, less than 4 GiB, as one single-segment zstd
// frame of raw blocks: the page, framed.
func appendRawFrame(dst, src []byte) []byte {
	return appendFrame(dst, src, appendRawBlock)
}

func appendRawBlock(dst, block []byte, last bool) []byte {
	dst = appendBlockHeader(dst, last, zstdBlockRaw, len(block))
	return append(dst, block...)
}

// appendFrame appends a single-segment zstd frame header for src and its
// blocks of at most zstdMaxBlock bytes, each appended by block.
func appendFrame(dst, src []byte, block func(dst, block []byte, last bool) []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, zstdMagic)
	n := len(src)
	switch {
	case n < 256:
		dst = append(dst, zstdSingleSegment, byte(n))
	case n < 256+1<<16:
		dst = append(dst, zstdSingleSegment|1<<6)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(n-256))
	default:
		dst = append(dst, zstdSingleSegment|2<<6)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	}
	if n == 0 {
		return appendBlockHeader(dst, true, zstdBlockRaw, 0)
	}
	dst = slices.Grow(dst, n+n/zstdMaxBlock*3+3)
	for at := 0; at < n; at += zstdMaxBlock {
		b := src[at:min(at+zstdMaxBlock, n)]
		dst = block(dst, b, at+len(b) == n)
	}
	return dst
}

// appendBlockHeader appends a Block_Header: Last_Block, Block_Type and
// Block_Size in 3 bytes, little-endian.
func appendBlockHeader(dst []byte, last bool, typ, size int) []byte {
	h := uint32(typ)<<1 | uint32(size)<<3
	if last {
		h |= 1
	}
	return append(dst, byte(h), byte(h>>8), byte(h>>16))
}

// literalsSizeBits is the width of the Regenerated_Size and
// Compressed_Size fields of four-stream literals: 10, 14 or 18 bits,
// whichever holds both.
func literalsSizeBits(compressed, regenerated int) int {
	switch b := bits.Len(uint(max(compressed, regenerated))); {
	case b <= 10:
		return 10
	case b <= 14:
		return 14
	default:
		return 18
	}
}

// literalsHeaderSize is the size of a Literals_Section_Header of four
// streams: 3, 4 or 5 bytes.
func literalsHeaderSize(compressed, regenerated int) int {
	return (4 + 2*literalsSizeBits(compressed, regenerated) + 7) / 8
}

// appendLiteralsHeader appends the Literals_Section_Header of
// huff0-coded literals in four streams, with the tree description in the
// literals (Size_Format 01, 10 or 11 for 10-, 14- or 18-bit sizes).
func appendLiteralsHeader(dst []byte, compressed, regenerated int) []byte {
	b := literalsSizeBits(compressed, regenerated)
	format := uint64((b-10)/4 + 1)
	h := zstdLiteralsHuffman | format<<2 | uint64(regenerated)<<4 | uint64(compressed)<<(4+b)
	for range literalsHeaderSize(compressed, regenerated) {
		dst = append(dst, byte(h))
		h >>= 8
	}
	return dst
}
