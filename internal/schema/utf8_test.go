package schema

import (
	"fmt"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestValidStrings(t *testing.T) {
	for _, tc := range []struct {
		name string
		vals []string
	}{
		{"none", nil},
		{"empty strings", []string{"", "", ""}},
		{"ascii", []string{"a", "bc", "", "def"}},
		{"multibyte", []string{"ü", "日本", "", "🙂x"}},
		{"invalid byte", []string{"a", "b\xffc"}},
		{"a character cut in two", []string{"\xc3", "\xbc"}},
		{"a character cut in three", []string{"\xe6", "\x97", "\xa5"}},
		{"cut around an empty value", []string{"\xc3", "", "\xbc"}},
		{"truncated at the end", []string{"ok", "\xe6\x97"}},
		{"surrogate", []string{"\xed\xa0\x80"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var data []byte
			offsets := []int32{0}
			want := true
			for _, v := range tc.vals {
				data = append(data, v...)
				offsets = append(offsets, int32(len(data)))
				want = want && utf8.ValidString(v)
			}
			assert.Equal(t, want, ValidStrings(data, offsets))
			// A slice of the column (offsets not starting at 0) answers
			// the same for its values.
			for from := range tc.vals {
				sub := want
				if from > 0 {
					sub = true
					for _, v := range tc.vals[from:] {
						sub = sub && utf8.ValidString(v)
					}
				}
				assert.Equal(t, sub, ValidStrings(data, offsets[from:]), fmt.Sprint("from ", from))
			}
		})
	}
}
