package parquetfile

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestColumnOrderStopsAtAFailedClose: once a column's write to the file
// fails, no worker writes it again or any column after it, even one that
// finishes its column before the failed worker has reported the error:
// the file's output (a full disk) takes no more bytes.
func TestColumnOrderStopsAtAFailedClose(t *testing.T) {
	diskFull := errors.New("disk full")
	o := &columnOrder{done: make([]bool, 3), errs: make([]error, 3)}
	var written []int
	write := func(c int) error {
		written = append(written, c)
		if c == 0 {
			return diskFull
		}
		return nil
	}
	for range 3 {
		_, ok := o.take()
		require.True(t, ok)
	}
	require.ErrorIs(t, o.finish(0, write), diskFull)
	assert.NoError(t, o.finish(1, write), "a worker done with its column meanwhile")
	assert.NoError(t, o.finish(2, write))
	assert.Equal(t, []int{0}, written, "columns written to the file")
	assert.ErrorIs(t, o.err(), diskFull)
}
