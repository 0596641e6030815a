package schema

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckColumnName(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"usage_idle", true},
		{"used percent", true},
		{"région.µs", true},
		{strings.Repeat("a", MaxColumnNameBytes), true},
		{"", false},
		{strings.Repeat("a", MaxColumnNameBytes+1), false},
		{"a\x00b", false},
		{"line\nbreak", false},
		{"tab\t", false},
		{"del\x7f", false},
		{"c1\u0085", false},
		{"bad\xffutf8", false},
		{"date", false},
		{"hour", false},
	} {
		err := CheckColumnName(tt.name)
		if tt.ok {
			assert.NoError(t, err, "%q", tt.name)
		} else {
			assert.ErrorIs(t, err, ErrBadColumnName, "%q", tt.name)
		}
	}
}
