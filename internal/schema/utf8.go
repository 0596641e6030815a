package schema

import "unicode/utf8"

// ValidStrings reports whether every string of an Arrow-style string
// column, value i being data[offsets[i]:offsets[i+1]] (offsets
// non-decreasing and within data), is valid UTF-8. It checks the bytes in
// one pass, which is several times cheaper than a check per value on short
// strings: a valid UTF-8 sequence cut only where a character starts (never
// before a continuation byte) falls into valid pieces.
func ValidStrings(data []byte, offsets []int32) bool {
	if len(offsets) < 2 {
		return true
	}
	lo, hi := offsets[0], offsets[len(offsets)-1]
	if lo == hi {
		return true
	}
	if !utf8.Valid(data[lo:hi]) {
		return false
	}
	for _, o := range offsets[1 : len(offsets)-1] {
		if o < hi && data[o]&0xC0 == 0x80 {
			return false
		}
	}
	return true
}
