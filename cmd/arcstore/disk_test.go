package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage"
)

// TestMinFreeDiskFlag: -min-free-disk takes a size, defaults to the
// store's floor, and 0 keeps none.
func TestMinFreeDiskFlag(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want int64
	}{
		{nil, storage.DefaultMinFreeDisk},
		{[]string{"-min-free-disk", "2GiB"}, 2 << 30},
		{[]string{"-min-free-disk", "64MB"}, 64e6},
		{[]string{"-min-free-disk", "0"}, -1},
	} {
		c, err := parseFlags(tt.args)
		require.NoError(t, err)
		assert.Equal(t, tt.want, minFreeDisk(c.minFreeDisk), "%v", tt.args)
	}
	_, err := parseFlags([]string{"-min-free-disk", "lots"})
	assert.ErrorContains(t, err, "-min-free-disk")
}
