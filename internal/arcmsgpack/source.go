package arcmsgpack

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// sourceBuffer is the window source reads the body through.
const sourceBuffer = 16 << 10

// source reads the MessagePack subset the payloads use (nil, bool,
// integers, floats, strings, arrays and maps) from the body as it arrives,
// through a window of sourceBuffer bytes. It reads a column's strings
// straight into the column's bytes (Column.Data), so decoding a value
// allocates nothing; a string is charged to the budget before it is
// allocated, so a claimed length never costs more than the budget allows.
type source struct {
	r        io.Reader
	buf      []byte
	pos, end int   // buf[pos:end] is read but not yet decoded
	rerr     error // the reader's error once it returned one (io.EOF at the end)
	budget   *Budget
}

func newSource(r io.Reader, b *Budget) *source {
	return &source{r: r, buf: make([]byte, sourceBuffer), budget: b}
}

// newBytesSource reads a whole body held in memory: its window is the
// body itself, so nothing is copied but the values.
func newBytesSource(body []byte, b *Budget) *source {
	return &source{buf: body, end: len(body), rerr: io.EOF, budget: b}
}

// maxEmptyReads is how many reads of nothing in a row end the body, as
// bufio does (io.ErrNoProgress).
const maxEmptyReads = 100

// fill makes n <= len(buf) bytes available at pos; false if the body ends
// (or its reader fails) first.
func (s *source) fill(n int) bool {
	if s.end-s.pos >= n {
		return true
	}
	if s.rerr != nil {
		return false // the body has ended: nothing to move the window for
	}
	if s.pos > 0 {
		s.end = copy(s.buf, s.buf[s.pos:s.end])
		s.pos = 0
	}
	for empty := 0; s.end < n; {
		if s.rerr != nil {
			return false
		}
		m, err := s.r.Read(s.buf[s.end:])
		s.end += m
		if err != nil {
			s.rerr = err
		} else if m == 0 {
			if empty++; empty == maxEmptyReads {
				s.rerr = io.ErrNoProgress
			}
		}
	}
	return true
}

// err is why the body ended early: the reader's error, or
// io.ErrUnexpectedEOF.
func (s *source) err() error {
	if s.rerr == nil || errors.Is(s.rerr, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return s.rerr
}

// PeekCode returns the next value's type code without reading it; io.EOF
// at the body's clean end.
func (s *source) PeekCode() (byte, error) {
	if !s.fill(1) {
		if s.end == s.pos && errors.Is(s.rerr, io.EOF) {
			return 0, io.EOF
		}
		return 0, s.err()
	}
	return s.buf[s.pos], nil
}

// next reads n bytes (n <= len(buf)); they are valid until the next read.
func (s *source) next(n int) ([]byte, error) {
	if !s.fill(n) {
		return nil, s.err()
	}
	p := s.buf[s.pos : s.pos+n]
	s.pos += n
	return p, nil
}

func (s *source) code() (byte, error) {
	p, err := s.next(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}

var errType = errors.New("unexpected msgpack type")

// length reads a length of width bytes (1, 2 or 4), big-endian.
func (s *source) length(width int) (int, error) {
	p, err := s.next(width)
	if err != nil {
		return 0, err
	}
	switch width {
	case 1:
		return int(p[0]), nil
	case 2:
		return int(binary.BigEndian.Uint16(p)), nil
	}
	return int(binary.BigEndian.Uint32(p)), nil
}

// DecodeMapLen reads a map's header: its number of entries.
func (s *source) DecodeMapLen() (int, error) {
	c, err := s.code()
	switch {
	case err != nil:
		return 0, err
	case msgpcode.IsFixedMap(c):
		return int(c & msgpcode.FixedMapMask), nil
	case c == msgpcode.Map16:
		return s.length(2)
	case c == msgpcode.Map32:
		return s.length(4)
	}
	return 0, errType
}

// DecodeArrayLen reads an array's header: its number of elements.
func (s *source) DecodeArrayLen() (int, error) {
	c, err := s.code()
	switch {
	case err != nil:
		return 0, err
	case msgpcode.IsFixedArray(c):
		return int(c & msgpcode.FixedArrayMask), nil
	case c == msgpcode.Array16:
		return s.length(2)
	case c == msgpcode.Array32:
		return s.length(4)
	}
	return 0, errType
}

// skipNil reads a nil.
func (s *source) skipNil() { s.pos++ }

// DecodeBool reads a boolean.
func (s *source) DecodeBool() (bool, error) {
	c, err := s.code()
	switch {
	case err != nil:
		return false, err
	case c == msgpcode.True:
		return true, nil
	case c == msgpcode.False:
		return false, nil
	}
	return false, errType
}

// DecodeUint64 reads an integer as unsigned, for the uint 64 type.
func (s *source) DecodeUint64() (uint64, error) {
	c, err := s.PeekCode()
	if err != nil {
		return 0, err
	}
	if c == msgpcode.Uint64 {
		p, err := s.next(9)
		if err != nil {
			return 0, err
		}
		return binary.BigEndian.Uint64(p[1:]), nil
	}
	v, err := s.DecodeInt64()
	return uint64(v), err
}

// DecodeInt64 reads any integer type (a uint 64 past MaxInt64 wraps:
// callers read that type with DecodeUint64).
func (s *source) DecodeInt64() (int64, error) {
	if !s.fill(9) && !s.fill(1) {
		return 0, s.err()
	}
	c := s.buf[s.pos]
	if msgpcode.IsFixedNum(c) {
		s.pos++
		return int64(int8(c)), nil
	}
	var width int
	switch c {
	case msgpcode.Uint8, msgpcode.Int8:
		width = 1
	case msgpcode.Uint16, msgpcode.Int16:
		width = 2
	case msgpcode.Uint32, msgpcode.Int32:
		width = 4
	case msgpcode.Uint64, msgpcode.Int64:
		width = 8
	default:
		return 0, errType
	}
	p, err := s.next(1 + width)
	if err != nil {
		return 0, err
	}
	p = p[1:]
	switch c {
	case msgpcode.Uint8:
		return int64(p[0]), nil
	case msgpcode.Int8:
		return int64(int8(p[0])), nil
	case msgpcode.Uint16:
		return int64(binary.BigEndian.Uint16(p)), nil
	case msgpcode.Int16:
		return int64(int16(binary.BigEndian.Uint16(p))), nil
	case msgpcode.Uint32:
		return int64(binary.BigEndian.Uint32(p)), nil
	case msgpcode.Int32:
		return int64(int32(binary.BigEndian.Uint32(p))), nil
	}
	return int64(binary.BigEndian.Uint64(p)), nil
}

// DecodeFloat64 reads a float 32 or float 64.
func (s *source) DecodeFloat64() (float64, error) {
	c, err := s.PeekCode()
	if err != nil {
		return 0, err
	}
	switch c {
	case msgpcode.Float:
		p, err := s.next(5)
		if err != nil {
			return 0, err
		}
		return float64(math.Float32frombits(binary.BigEndian.Uint32(p[1:]))), nil
	case msgpcode.Double:
		p, err := s.next(9)
		if err != nil {
			return 0, err
		}
		return math.Float64frombits(binary.BigEndian.Uint64(p[1:])), nil
	}
	return 0, errType
}

// strLen reads a string's header: the length of its bytes.
func (s *source) strLen() (int, error) {
	c, err := s.code()
	switch {
	case err != nil:
		return 0, err
	case msgpcode.IsFixedString(c):
		return int(c & msgpcode.FixedStrMask), nil
	case c == msgpcode.Str8:
		return s.length(1)
	case c == msgpcode.Str16:
		return s.length(2)
	case c == msgpcode.Str32:
		return s.length(4)
	}
	return 0, errType
}

// readInto fills p from the body.
func (s *source) readInto(p []byte) error {
	n := copy(p, s.buf[s.pos:s.end])
	s.pos += n
	p = p[n:]
	for len(p) > 0 {
		if len(p) < len(s.buf) {
			if !s.fill(len(p)) {
				return s.err()
			}
			s.pos += copy(p, s.buf[s.pos:s.end])
			return nil
		}
		// Large: straight from the reader.
		if s.rerr != nil {
			return s.err()
		}
		m, err := io.ReadAtLeast(s.r, p, len(p))
		p = p[m:]
		if err != nil {
			s.rerr = err
			return s.err()
		}
	}
	return nil
}

// str decodes a string, its bytes charged to the budget before they are
// allocated.
func (s *source) str() (string, error) {
	n, err := s.strLen()
	if err != nil {
		return "", err
	}
	if err := s.budget.take(int64(n)); err != nil {
		return "", err
	}
	if n <= len(s.buf) {
		p, err := s.next(n)
		if err != nil {
			return "", err
		}
		return string(p), nil
	}
	p := make([]byte, n)
	if err := s.readInto(p); err != nil {
		return "", err
	}
	return unsafe.String(unsafe.SliceData(p), n), nil
}

// strInto decodes a string into a string column: its bytes go straight
// to the column's Data.
func (s *source) strInto(col *Column) error {
	n, err := s.strLen()
	if err != nil {
		return err
	}
	start, err := col.reserveString(n)
	if err != nil {
		return err
	}
	return s.readInto(col.Data[start : start+n])
}

// shortStrInto is strInto's fast path, for a string (fixstr or str 8)
// whose header and bytes are all in the window: most values of a string
// column. It reports false, having read nothing, for anything else.
func (s *source) shortStrInto(col *Column) (bool, error) {
	p := s.buf[s.pos:s.end]
	if len(p) < 2 {
		return false, nil
	}
	var head, n int
	switch c := p[0]; {
	case msgpcode.IsFixedString(c):
		head, n = 1, int(c&msgpcode.FixedStrMask)
	case c == msgpcode.Str8:
		head, n = 2, int(p[1])
	default:
		return false, nil
	}
	if len(p) < head+n {
		return false, nil
	}
	start, err := col.reserveString(n)
	if err != nil {
		return true, err
	}
	copy(col.Data[start:], p[head:head+n])
	s.pos += head + n
	return true, nil
}

// stringBytes is the size of the strings among the next n values when they
// are all strings and nils and a body held whole holds them (a streamed
// body's window seldom does): what a string column's Data takes. It reads
// nothing.
func (s *source) stringBytes(n int) (int, bool) {
	if s.r != nil {
		return 0, false
	}
	p := s.buf[s.pos:s.end]
	total := 0
	for range n {
		if len(p) == 0 {
			return 0, false
		}
		var head, size int
		switch c := p[0]; {
		case c == msgpcode.Nil:
			head = 1
		case msgpcode.IsFixedString(c):
			head, size = 1, int(c&msgpcode.FixedStrMask)
		case c == msgpcode.Str8 && len(p) >= 2:
			head, size = 2, int(p[1])
		case c == msgpcode.Str16 && len(p) >= 3:
			head, size = 3, int(binary.BigEndian.Uint16(p[1:]))
		case c == msgpcode.Str32 && len(p) >= 5:
			head, size = 5, int(binary.BigEndian.Uint32(p[1:]))
		default:
			return 0, false
		}
		if len(p)-head < size {
			return 0, false
		}
		total += size
		p = p[head+size:]
	}
	return total, total > 0
}

// run reads the values that follow into a column without nulls, up to
// max of them, for as long as each is of the column's kind, held whole in
// the window and has room in the column's slices: a column's values but
// its first, its growth and anything unusual, which go through add. It
// returns how many it read. Per value it does only what add would: the
// same checks, in a loop that does not ask for the kind again.
func (s *source) run(col *Column, max int) int {
	if col.Null != nil {
		return 0
	}
	switch col.Kind {
	case KindString:
		return s.strRun(col, max)
	case KindInt:
		return s.intRun(col, max)
	case KindFloat:
		return s.floatRun(col, max)
	}
	return 0
}

// strRun is run for a string column: fixstr and str 8 values, checked as
// UTF-8 with the column's other strings (checkUTF8).
func (s *source) strRun(col *Column, max int) int {
	if cap(col.Data) > math.MaxInt32 {
		return 0 // reserveString refuses what passes it
	}
	p := s.buf[s.pos:s.end]
	data, offsets := col.Data, col.Offsets
	at, k := 0, 0
	for ; k < max && at < len(p); k++ {
		var head, n int
		switch c := p[at]; {
		case msgpcode.IsFixedString(c):
			head, n = 1, int(c&msgpcode.FixedStrMask)
		case c == msgpcode.Str8 && at+1 < len(p):
			head, n = 2, int(p[at+1])
		default:
			n = -1
		}
		if n < 0 || len(p)-at-head < n || cap(data)-len(data) < n || len(offsets) == cap(offsets) {
			break
		}
		data = append(data, p[at+head:at+head+n]...)
		offsets = append(offsets, int32(len(data)))
		at += head + n
	}
	col.Data, col.Offsets = data, offsets
	col.rows += k
	s.pos += at
	return k
}

// intRun is run for an integer column: every integer type but a uint 64
// past MaxInt64 (add refuses it).
func (s *source) intRun(col *Column, max int) int {
	p := s.buf[s.pos:s.end]
	vals := col.Ints
	at, k := 0, 0
	for ; k < max && at < len(p) && len(vals) < cap(vals); k++ {
		c := p[at]
		if msgpcode.IsFixedNum(c) {
			vals = append(vals, int64(int8(c)))
			at++
			continue
		}
		var v int64
		var width int
		q := p[at+1:]
		switch {
		case c == msgpcode.Uint8 && len(q) >= 1:
			v, width = int64(q[0]), 1
		case c == msgpcode.Int8 && len(q) >= 1:
			v, width = int64(int8(q[0])), 1
		case c == msgpcode.Uint16 && len(q) >= 2:
			v, width = int64(binary.BigEndian.Uint16(q)), 2
		case c == msgpcode.Int16 && len(q) >= 2:
			v, width = int64(int16(binary.BigEndian.Uint16(q))), 2
		case c == msgpcode.Uint32 && len(q) >= 4:
			v, width = int64(binary.BigEndian.Uint32(q)), 4
		case c == msgpcode.Int32 && len(q) >= 4:
			v, width = int64(int32(binary.BigEndian.Uint32(q))), 4
		case c == msgpcode.Int64 && len(q) >= 8,
			c == msgpcode.Uint64 && len(q) >= 8 && binary.BigEndian.Uint64(q) <= math.MaxInt64:
			v, width = int64(binary.BigEndian.Uint64(q)), 8
		default:
			width = -1
		}
		if width < 0 {
			break
		}
		vals = append(vals, v)
		at += 1 + width
	}
	col.Ints = vals
	col.rows += k
	s.pos += at
	return k
}

// floatRun is run for a float column: float 64 and float 32 values but
// NaN and infinities (add refuses them). Integers among them go through
// add, which converts them.
func (s *source) floatRun(col *Column, max int) int {
	p := s.buf[s.pos:s.end]
	vals := col.Floats
	at, k := 0, 0
	for ; k < max && at < len(p) && len(vals) < cap(vals); k++ {
		var v float64
		var width int
		switch c := p[at]; {
		case c == msgpcode.Double && len(p)-at >= 9:
			v, width = math.Float64frombits(binary.BigEndian.Uint64(p[at+1:])), 8
		case c == msgpcode.Float && len(p)-at >= 5:
			v, width = float64(math.Float32frombits(binary.BigEndian.Uint32(p[at+1:]))), 4
		default:
			width = -1
		}
		if width < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			break
		}
		vals = append(vals, v)
		at += 1 + width
	}
	col.Floats = vals
	col.rows += k
	s.pos += at
	return k
}
