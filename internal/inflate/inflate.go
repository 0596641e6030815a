package inflate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// Errors of a stream that does not decode. Each returned error wraps one.
var (
	// ErrCorrupt is a stream that breaks the DEFLATE or gzip format.
	ErrCorrupt = errors.New("corrupt stream")
	// ErrTruncated is a stream that ends before its last block or trailer.
	ErrTruncated = errors.New("unexpected end of stream")
	// ErrTooLarge is a stream that decodes to more than the limit given.
	ErrTooLarge = errors.New("decoded size over the limit")
)

// Limits of the format (RFC 1951).
const (
	maxCodeLen = 15  // longest Huffman code
	numLitLen  = 288 // literal/length alphabet of the fixed code
	maxLitLen  = 286 // literal/length codes a dynamic block may declare
	numDist    = 32  // distance alphabet of the fixed code
	maxDist    = 30  // distance codes a dynamic block may declare
	numCodeLen = 19  // code length alphabet
	endOfBlock = 256
	maxMatch   = 258
)

var (
	// lengthBase and lengthExtra give a length symbol's (257-285) base
	// length and the number of extra bits that follow it; distBase and
	// distExtra the same for distance symbols.
	lengthBase = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
		35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
		3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193,
		257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6,
		7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
	codeLenOrder = [numCodeLen]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
)

// A table entry decodes one Huffman code from the low bits of the bit
// buffer, with what the symbol means already looked up:
//
//	bits 0-5   bits to consume: the code's length, plus the extra bits
//	           that follow a length or distance code (0: no code starts
//	           with these bits, the zero entry)
//	bit  6     end of block
//	bits 8-11  the code's length alone, where a match's extra bits start
//	bit  12    literal (bits 16-23)
//	bit  13    two literals (bits 16-23, then 24-31): bits 0-5 are both
//	           codes' length
//	bit  14    base length or base distance (bits 16-31), or the symbol
//	           of a code length code
//	bits 16-31 value
//
// An entry with bits to consume and no flag is a symbol the format does
// not define (length codes 286-287, distance codes 30-31). A first-level
// entry for a code longer than the first level's bits instead points to a
// second level: subEntry | offset<<16 | its bits<<8.
//
// Bits to consume that include the extra bits let the fast loop drop a
// length or distance with one shift, and read its extra bits off the
// critical path (extraBits).
const (
	consumeMask  = 63
	endEntry     = 1 << 6
	literalEntry = 1 << 12
	pairEntry    = 1 << 13
	valueEntry   = 1 << 14
	subEntry     = 1 << 15
)

// First-level bits of each table. The literal/length table's 2^11 entries
// (8 KiB) hold every code the payloads' blocks use most, and two short
// literal codes in one entry where they fit: text and hex digits have
// codes of 4 to 6 bits, so most lookups yield two bytes.
const (
	litLenBits  = 11
	distBits    = 8
	codeLenBits = 7
)

// Most entries a table may need, as powers of two: the first level and
// a second level of the longest code's size for each symbol that may have
// a longer code (literal/length: 2^11 + 286<<4 = 6624; distance: 2^8 +
// 30<<7 = 4096). The fast loop masks its second-level index to these
// sizes, which its tables are allocated with, and needs no bounds check.
const (
	litLenEntries = 1 << 13
	distEntries   = 1 << 12
)

type table struct {
	bits    uint
	entries []uint32 // 2^bits first-level entries, then the second levels
}

// entriesFor is the capacity of a table of the given first-level bits.
func entriesFor(bits uint) int {
	switch bits {
	case litLenBits:
		return litLenEntries
	case distBits:
		return distEntries
	}
	return 1 << bits
}

// payload is what a symbol means: its entry's flags and value, and in
// bits 0-5 the number of extra bits that follow its code.
type payload func(sym int) uint32

func litLenPayload(sym int) uint32 {
	switch {
	case sym < endOfBlock:
		return literalEntry | uint32(sym)<<16
	case sym == endOfBlock:
		return endEntry
	case sym-endOfBlock-1 < len(lengthBase):
		s := sym - endOfBlock - 1
		return valueEntry | uint32(lengthExtra[s]) | uint32(lengthBase[s])<<16
	}
	return 0
}

func distPayload(sym int) uint32 {
	if sym < len(distBase) {
		return valueEntry | uint32(distExtra[sym]) | uint32(distBase[sym])<<16
	}
	return 0
}

func symbolPayload(sym int) uint32 { return valueEntry | uint32(sym)<<16 }

// build makes t decode the canonical code of the given code lengths (one
// per symbol, 0 for unused). As zlib and Go's compress/flate, it takes a
// complete code, an empty one, or a single code of one bit, and refuses
// the rest.
func (t *table) build(lengths []uint8, bits uint, meaning payload) error {
	var count [maxCodeLen + 1]int
	maxLen := 0
	for _, n := range lengths {
		count[n]++
		maxLen = max(maxLen, int(n))
	}
	size := 1 << bits
	t.bits = bits
	if cap(t.entries) < entriesFor(bits) {
		t.entries = make([]uint32, size, entriesFor(bits))
	}
	t.entries = t.entries[:size]
	clear(t.entries)
	if maxLen == 0 {
		return nil
	}
	// Canonical codes, with compress/flate's check of completeness: the
	// codes fill all 2^maxLen patterns.
	var next [maxCodeLen + 1]int
	code := 0
	for n := 1; n <= maxLen; n++ {
		code <<= 1
		next[n] = code
		code += count[n]
	}
	if code != 1<<maxLen && !(code == 1 && maxLen == 1) {
		return fmt.Errorf("%w: invalid Huffman code lengths", ErrCorrupt)
	}
	subBits := uint(0)
	if uint(maxLen) > bits {
		subBits = uint(maxLen) - bits
	}
	for sym, n := range lengths {
		if n == 0 {
			continue
		}
		rev := reverse(uint32(next[n]), uint(n))
		next[n]++
		p := meaning(sym)
		entry := p&^consumeMask | uint32(n)<<8 | (uint32(n) + p&consumeMask)
		if uint(n) <= bits {
			for i := rev; i < uint32(size); i += 1 << n {
				t.entries[i] = entry
			}
			continue
		}
		// Codes are prefix-free: a first-level pattern holds either a
		// short code or the second level of longer ones.
		prefix := rev & (uint32(size) - 1)
		if t.entries[prefix]&subEntry == 0 {
			t.entries[prefix] = subEntry | uint32(len(t.entries))<<16 | uint32(subBits)<<8
			t.entries = extend(t.entries, 1<<subBits)
		}
		off := t.entries[prefix] >> 16
		for i := rev >> bits; i < 1<<subBits; i += 1 << (uint(n) - bits) {
			t.entries[off+i] = entry
		}
	}
	return nil
}

// pairLiterals turns each first-level literal entry whose bits also hold
// the whole code of a second literal into an entry of both. It goes from
// the last entry down, as an entry's second code is read at a lower index
// (its own bits shifted past the first code), which must still hold one
// literal.
func (t *table) pairLiterals() {
	first := t.entries[:1<<t.bits]
	for i := len(first) - 1; i >= 0; i-- {
		e := first[i]
		n := uint(e & consumeMask)
		if e&literalEntry == 0 || n >= t.bits {
			continue
		}
		e2 := first[i>>n]
		n2 := uint(e2 & consumeMask)
		if e2&(literalEntry|pairEntry) != literalEntry || n+n2 > t.bits {
			continue
		}
		first[i] = literalEntry | pairEntry | e&0xff0000 | e2&0xff0000<<8 | uint32(n+n2)
	}
}

// lookup returns the entry the low bits of b start with.
func (t *table) lookup(b uint64) uint32 {
	e := t.entries[b&(1<<t.bits-1)]
	if e&subEntry != 0 {
		e = t.second(e, b)
	}
	return e
}

// second returns the entry of b in the second level first points to.
func (t *table) second(first uint32, b uint64) uint32 {
	return t.entries[first>>16+uint32(b>>t.bits)&(1<<(first>>8&0xf)-1)]
}

// extraBits is the value of the extra bits of the length or distance
// entry e decoded from b (the bit buffer before e's bits were dropped).
func extraBits(e uint32, b uint64) int {
	return int(b & (1<<(e&consumeMask) - 1) >> (e >> 8 & 0xf))
}

// extend returns s with n more zero entries.
func extend(s []uint32, n int) []uint32 {
	if len(s)+n > cap(s) {
		return append(s, make([]uint32, n)...)
	}
	s = s[:len(s)+n]
	clear(s[len(s)-n:])
	return s
}

// reverse returns the n low bits of v in reverse order: DEFLATE sends
// Huffman codes most significant bit first into a stream read from the
// least significant bit.
func reverse(v uint32, n uint) uint32 {
	return uint32(bits.Reverse16(uint16(v))) >> (16 - n)
}

// decompressor holds the state of one gzip stream's decoding.
type decompressor struct {
	in    []byte
	pos   int // next byte of in to load; past len(in) counts zeros loaded after its end
	bits  uint64
	nbits uint

	out   []byte // whole capacity; out[:n] is decoded
	n     int
	start int // where the member's output begins (a match may not reach before it)
	limit int
	claim int // the size the last trailer claims, when within limit

	litLen, dist, codeLen table
}

// refill loads bytes until at least 56 bits are buffered. Beyond the end
// of the input it loads zeros, which overrun() then reports if a code
// used them.
func (d *decompressor) refill() {
	if d.pos+8 <= len(d.in) {
		d.bits |= binary.LittleEndian.Uint64(d.in[d.pos:]) << d.nbits
		d.pos += int(63-d.nbits) >> 3
		d.nbits |= 56
		return
	}
	for d.nbits <= 56 {
		if d.pos < len(d.in) {
			d.bits |= uint64(d.in[d.pos]) << d.nbits
		}
		d.pos++
		d.nbits += 8
	}
}

// overrun tells whether the bits consumed so far go past the input.
func (d *decompressor) overrun() bool {
	return d.pos-int(d.nbits>>3) > len(d.in)
}

func (d *decompressor) take(n uint) uint64 {
	v := d.bits & (1<<n - 1)
	d.bits >>= n
	d.nbits -= n
	return v
}

// alignToByte drops the bits up to the next byte boundary and gives back
// the whole bytes loaded ahead, so d.pos is where the stream goes on.
func (d *decompressor) alignToByte() {
	d.pos -= int(d.nbits >> 3)
	d.bits, d.nbits = 0, 0
}

// room makes room for need more output bytes within the limit, growing
// the output (with room for the fast loop, the limit allowing): to the
// claimed size when it holds them, else twice as large.
func (d *decompressor) room(need int) error {
	if d.n+need > d.limit {
		return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, d.limit)
	}
	if d.n+need <= len(d.out) {
		return nil
	}
	size := max(min(max(2*len(d.out), 4096), d.limit+Margin), d.n+need)
	if d.claim >= d.n+need && d.claim+Margin > len(d.out) {
		size = d.claim + Margin
	}
	out := make([]byte, size)
	copy(out, d.out[:d.n])
	d.out = out
	return nil
}

// inflate decodes one DEFLATE stream from d.in[d.pos:] to d.out[d.n:].
func (d *decompressor) inflate() error {
	d.start = d.n
	for {
		d.refill()
		final := d.take(1)
		var err error
		switch d.take(2) {
		case 0:
			err = d.stored()
		case 1:
			err = d.block(fixedLitLen, fixedDist)
		case 2:
			if err = d.dynamic(); err == nil {
				err = d.block(&d.litLen, &d.dist)
			}
		default:
			err = fmt.Errorf("%w: invalid block type", ErrCorrupt)
		}
		if err != nil {
			return err
		}
		if d.overrun() {
			return fmt.Errorf("%w: inside a block", ErrTruncated)
		}
		if final == 1 {
			d.alignToByte()
			return nil
		}
	}
}

// stored copies a block sent as is.
func (d *decompressor) stored() error {
	d.alignToByte()
	if d.pos+4 > len(d.in) {
		return fmt.Errorf("%w: stored block header", ErrTruncated)
	}
	n := int(binary.LittleEndian.Uint16(d.in[d.pos:]))
	if uint16(n) != ^binary.LittleEndian.Uint16(d.in[d.pos+2:]) {
		return fmt.Errorf("%w: stored block length does not match its complement", ErrCorrupt)
	}
	d.pos += 4
	if d.pos+n > len(d.in) {
		return fmt.Errorf("%w: stored block", ErrTruncated)
	}
	if err := d.room(n); err != nil {
		return err
	}
	d.n += copy(d.out[d.n:], d.in[d.pos:d.pos+n])
	d.pos += n
	return nil
}

// The codes of blocks that use the fixed code, built once.
var fixedLitLen, fixedDist = fixedTables()

func fixedTables() (*table, *table) {
	var ll [numLitLen]uint8
	for i := range ll {
		switch {
		case i < 144:
			ll[i] = 8
		case i < 256:
			ll[i] = 9
		case i < 280:
			ll[i] = 7
		default:
			ll[i] = 8
		}
	}
	var dist [numDist]uint8
	for i := range dist {
		dist[i] = 5
	}
	var lt, dt table
	if lt.build(ll[:], litLenBits, litLenPayload) != nil || dt.build(dist[:], distBits, distPayload) != nil {
		panic("inflate: the fixed code does not build")
	}
	lt.pairLiterals()
	return &lt, &dt
}

// dynamic reads the code lengths of a block with its own codes.
func (d *decompressor) dynamic() error {
	d.refill()
	nlit := int(d.take(5)) + 257
	ndist := int(d.take(5)) + 1
	nclen := int(d.take(4)) + 4
	if nlit > maxLitLen || ndist > maxDist {
		return fmt.Errorf("%w: too many codes in a block header", ErrCorrupt)
	}
	var clen [numCodeLen]uint8
	for i := range nclen {
		if d.nbits < 3 {
			d.refill()
		}
		clen[codeLenOrder[i]] = uint8(d.take(3))
	}
	if err := d.codeLen.build(clen[:], codeLenBits, symbolPayload); err != nil {
		return err
	}
	var lengths [maxLitLen + maxDist]uint8
	for i := 0; i < nlit+ndist; {
		d.refill()
		e := d.codeLen.lookup(d.bits)
		if e&consumeMask == 0 {
			return errInvalidCode
		}
		d.take(uint(e & consumeMask))
		sym := int(e >> 16)
		if sym < 16 {
			lengths[i] = uint8(sym)
			i++
			continue
		}
		var rep int
		var val uint8
		switch sym {
		case 16:
			if i == 0 {
				return fmt.Errorf("%w: repeated code length with none before it", ErrCorrupt)
			}
			rep, val = 3+int(d.take(2)), lengths[i-1]
		case 17:
			rep = 3 + int(d.take(3))
		default:
			rep = 11 + int(d.take(7))
		}
		if i+rep > nlit+ndist {
			return fmt.Errorf("%w: code lengths run past their count", ErrCorrupt)
		}
		for range rep {
			lengths[i] = val
			i++
		}
	}
	if d.overrun() {
		return fmt.Errorf("%w: block header", ErrTruncated)
	}
	if err := d.litLen.build(lengths[:nlit], litLenBits, litLenPayload); err != nil {
		return err
	}
	d.litLen.pairLiterals()
	return d.dist.build(lengths[nlit:nlit+ndist], distBits, distPayload)
}

// slack is the room the fast loop keeps past the output it writes: a
// match is copied 16 bytes at a time, the first 32 at once whatever its
// length (most are shorter), and may write up to 29 bytes past its end;
// literals are written eight bytes at a time (later output overwrites
// the bytes past the end).
const slack = 32

// block decodes the symbols of a Huffman-coded block up to its end.
//
// Its loop is the decoder's hot path, written for the compiler: the bit
// buffer and the output position live in locals, each turn loads up to
// eight input bytes at once (at least 56 bits buffered, enough for a
// length and distance with their extra bits: 48), and up to three
// literal entries are decoded per load. Near the end of the input or of
// the output it takes one symbol at a time through d.
func (d *decompressor) block(lt, dt *table) error {
	for {
		if d.pos+8 > len(d.in) || d.n > d.fastEnd() {
			end, err := d.slowSymbol(lt, dt)
			if end || err != nil {
				return err
			}
			continue
		}
		end, err := d.fast(lt, dt)
		if end || err != nil {
			return err
		}
	}
}

// fastEnd is the last output position from which the fast loop may
// decode a symbol: a whole match, and the slack, fit in the output and
// within the limit.
func (d *decompressor) fastEnd() int {
	return min(len(d.out)-maxMatch-slack, d.limit-maxMatch) - fastLiterals
}

// fastLiterals is the most output of one turn of the fast loop's
// literals, which may be followed by a match.
const fastLiterals = 6

// fast decodes symbols while at least 8 input bytes and a whole match's
// output are left; it returns when they are not, or at the block's end.
func (d *decompressor) fast(lt, dt *table) (end bool, err error) {
	// Whole tables as arrays: indexing them with a masked value needs
	// no bounds check, and the masks are constants.
	in, pos := d.in, d.pos
	bits, nbits := d.bits, d.nbits
	out, n := d.out, d.n
	llFirst := (*[litLenEntries]uint32)(lt.entries[:litLenEntries])
	dFirst := (*[distEntries]uint32)(dt.entries[:distEntries])
	// The state goes back to d where the loop ends well; no defer, whose
	// closure over the locals would keep them out of registers.
	last, start := d.fastEnd(), d.start
	for pos <= len(in)-8 && n <= last {
		bits |= binary.LittleEndian.Uint64(in[pos:]) << (nbits & 63)
		pos += int(63-nbits&63) >> 3
		nbits |= 56

		e := llFirst[bits&(1<<litLenBits-1)]
		if e&subEntry != 0 {
			e = llFirst[(e>>16+uint32(bits>>litLenBits)&(1<<(e>>8&0xf)-1))&(litLenEntries-1)]
		}
		if e&literalEntry != 0 {
			// Up to three entries of literals per load (each takes at
			// most 15 of the 56 bits), gathered in a word written at
			// once: one or two bytes each, six at most.
			var lits uint64
			var shift uint
			for k := 0; ; k++ {
				bits >>= e & consumeMask
				nbits -= uint(e & consumeMask)
				lits |= uint64(e>>16) << (shift & 63)
				shift += 8 + uint(e>>10&8)
				if k == 2 {
					break
				}
				e = llFirst[bits&(1<<litLenBits-1)]
				if e&literalEntry == 0 {
					if e&subEntry == 0 {
						break
					}
					e = llFirst[(e>>16+uint32(bits>>litLenBits)&(1<<(e>>8&0xf)-1))&(litLenEntries-1)]
					if e&literalEntry == 0 {
						break
					}
				}
			}
			binary.LittleEndian.PutUint64(out[n:], lits)
			n += int(shift >> 3)
			if e&literalEntry != 0 {
				continue
			}
			// The literals ended on another symbol, whose entry is
			// looked up: load the bits its length and distance may
			// take (at most two entries were consumed), and decode it
			// here. n is at most last+6: fastEnd keeps room for that.
			if pos > len(in)-8 {
				break
			}
			bits |= binary.LittleEndian.Uint64(in[pos:]) << (nbits & 63)
			pos += int(63-nbits&63) >> 3
			nbits |= 56
		}
		if e&valueEntry == 0 {
			if e&endEntry != 0 {
				bits >>= e & consumeMask
				nbits -= uint(e & consumeMask)
				d.pos, d.bits, d.nbits, d.n = pos, bits, nbits, n
				return true, nil
			}
			return false, invalidLitLen(e)
		}
		saved := bits
		bits >>= e & consumeMask
		nbits -= uint(e & consumeMask)
		length := int(e>>16) + extraBits(e, saved)

		e = dFirst[bits&(1<<distBits-1)]
		if e&subEntry != 0 {
			e = dFirst[(e>>16+uint32(bits>>distBits)&(1<<(e>>8&0xf)-1))&(distEntries-1)]
		}
		if e&valueEntry == 0 {
			return false, invalidDist(e)
		}
		saved = bits
		bits >>= e & consumeMask
		nbits -= uint(e & consumeMask)
		back := int(e>>16) + extraBits(e, saved)
		if back > n-start {
			return false, fmt.Errorf("%w: distance %d reaches before the start", ErrCorrupt, back)
		}
		if back >= 16 && length <= 32 {
			// Most matches: two 16-byte copies, the second reading
			// what the first wrote when back < 32.
			src, dst := (*[32]byte)(out[n-back:]), (*[32]byte)(out[n:])
			*(*[16]byte)(dst[:]) = *(*[16]byte)(src[:])
			*(*[16]byte)(dst[16:]) = *(*[16]byte)(src[16:])
		} else {
			copyMatch(out, n, back, length)
		}
		n += length
	}
	d.pos, d.bits, d.nbits, d.n = pos, bits, nbits, n
	return false, nil
}

var (
	errInvalidCode     = fmt.Errorf("%w: invalid Huffman code", ErrCorrupt)
	errInvalidLength   = fmt.Errorf("%w: invalid length code", ErrCorrupt)
	errInvalidDistance = fmt.Errorf("%w: invalid distance code", ErrCorrupt)
)

// invalidLitLen is the error of a literal/length entry that is neither a
// literal, a length nor the end of the block.
func invalidLitLen(e uint32) error {
	if e&consumeMask == 0 {
		return errInvalidCode
	}
	return errInvalidLength
}

// invalidDist is the error of a distance entry without a distance.
func invalidDist(e uint32) error {
	if e&consumeMask == 0 {
		return errInvalidCode
	}
	return errInvalidDistance
}

// copyMatch writes length bytes at out[n:] from back bytes before, which
// may overlap what it writes (a run when back < length). out has slack
// bytes past n+length.
func copyMatch(out []byte, n, back, length int) {
	from := n - back
	switch {
	case back >= 16:
		// Each 16-byte read ends at or before the bytes being written.
		*(*[16]byte)(out[n:]) = *(*[16]byte)(out[from:])
		*(*[16]byte)(out[n+16:]) = *(*[16]byte)(out[from+16:])
		for i := 32; i < length; i += 16 {
			*(*[16]byte)(out[n+i:]) = *(*[16]byte)(out[from+i:])
		}
	case back >= 8:
		for i := 0; i < length; i += 8 {
			binary.LittleEndian.PutUint64(out[n+i:], binary.LittleEndian.Uint64(out[from+i:]))
		}
	case back == 1:
		run := uint64(out[from]) * 0x0101010101010101
		for i := 0; i < length; i += 8 {
			binary.LittleEndian.PutUint64(out[n+i:], run)
		}
	default:
		for i := range length {
			out[n+i] = out[from+i]
		}
	}
}

// slowSymbol decodes one symbol where the fast loop may not: near the
// end of the input (zeros loaded past it are caught by overrun) or of the
// output (which grows within the limit).
func (d *decompressor) slowSymbol(lt, dt *table) (end bool, err error) {
	d.refill()
	if d.overrun() {
		return false, fmt.Errorf("%w: inside a block", ErrTruncated)
	}
	e := lt.lookup(d.bits)
	switch {
	case e&literalEntry != 0:
		d.take(uint(e & consumeMask))
		if err := d.room(1 + int(e>>13&1)); err != nil {
			return false, err
		}
		d.out[d.n] = byte(e >> 16)
		d.n++
		if e&pairEntry != 0 {
			d.out[d.n] = byte(e >> 24)
			d.n++
		}
		return false, nil
	case e&endEntry != 0:
		d.take(uint(e & consumeMask))
		return true, nil
	case e&valueEntry == 0:
		return false, invalidLitLen(e)
	}
	saved := d.bits
	d.take(uint(e & consumeMask))
	length := int(e>>16) + extraBits(e, saved)
	e = dt.lookup(d.bits)
	if e&valueEntry == 0 {
		return false, invalidDist(e)
	}
	saved = d.bits
	d.take(uint(e & consumeMask))
	back := int(e>>16) + extraBits(e, saved)
	if back > d.n-d.start {
		return false, fmt.Errorf("%w: distance %d reaches before the start", ErrCorrupt, back)
	}
	if err := d.room(length); err != nil {
		return false, err
	}
	for i := range length {
		d.out[d.n+i] = d.out[d.n-back+i]
	}
	d.n += length
	return false, nil
}
