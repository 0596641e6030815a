package schema

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		{"time", false},
		{"TIME", false},
		{"Date", false},
		{"hOUR", false},
		{"hours", true},
		{"time_value", true},
	} {
		err := CheckColumnName(tt.name)
		if tt.ok {
			assert.NoError(t, err, "%q", tt.name)
		} else {
			assert.ErrorIs(t, err, ErrBadColumnName, "%q", tt.name)
		}
	}
}

func TestColumnNames(t *testing.T) {
	for _, tt := range []struct {
		name       string
		sent, want []string
	}{
		{"unchanged", []string{"host", "usage_idle", "région"}, []string{"host", "usage_idle", "région"}},
		{"reserved in any case", []string{"TIME", "Date", "hour", "time"}, []string{"TIME_value", "Date_value", "hour_value", "time_value_value"}},
		{"the second spelling", []string{"usage", "Usage", "USAGE"}, []string{"usage", "Usage_value", "USAGE_value_value"}},
		{"a suffixed name taken too", []string{"v_value", "v", "V"}, []string{"v_value", "v", "V_value_value"}},
		{"non-ASCII case", []string{"Ölstand", "ölstand"}, []string{"Ölstand", "ölstand_value"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c ColumnNames
			var got []string
			for _, n := range tt.sent {
				s, err := c.Store(n)
				require.NoError(t, err)
				got = append(got, s)
			}
			assert.Equal(t, tt.want, got)
		})
	}
	var c ColumnNames
	_, err := c.Store("a\x00")
	assert.ErrorIs(t, err, ErrBadColumnName)
	long := strings.Repeat("a", MaxColumnNameBytes)
	_, err = c.Store(long)
	require.NoError(t, err)
	_, err = c.Store(strings.ToUpper(long))
	assert.ErrorContains(t, err, "longer than 255 bytes")
	c.Forget(long)
	s, err := c.Store(strings.ToUpper(long))
	require.NoError(t, err)
	assert.Equal(t, strings.ToUpper(long), s, "a forgotten name is free again")
}
