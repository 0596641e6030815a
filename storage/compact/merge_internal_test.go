package compact

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openFiles are the paths this process holds open.
func openFiles(t *testing.T) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	var out []string
	for _, fd := range fds {
		if p, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// spillRun writes a sorted run file of n rows, as spill does.
func spillRun(t *testing.T, path string, n int) {
	t.Helper()
	s := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	for i := range n {
		b.Append(int64(i))
	}
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(s, []arrow.Array{col}, int64(n))
	defer rec.Release()
	tbl := array.NewTableFromRecords(s, []arrow.RecordBatch{rec})
	defer tbl.Release()
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, writeIPC(f, tbl, int64(n)))
	require.NoError(t, f.Close())
}

// A sorted run whose first batch cannot be read (a bad sector under
// _arcstore/tmp) fails the merge, and no run file is left open: an open
// one would keep its deleted file's space taken for as long as the
// sidecar runs, at every retry of the compaction.
func TestMergeRunsClosesARunItCannotRead(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.arrow"), filepath.Join(dir, "bad.arrow")
	spillRun(t, good, 100)
	spillRun(t, bad, 100)
	data, err := os.ReadFile(bad)
	require.NoError(t, err)
	// The first record batch's message follows the schema's: damage the
	// continuation marker it starts with.
	marker := []byte{0xff, 0xff, 0xff, 0xff}
	first := bytes.Index(data, marker)
	require.GreaterOrEqual(t, first, 0)
	second := first + 4 + bytes.Index(data[first+4:], marker)
	require.Greater(t, second, first)
	copy(data[second:], []byte{0x12, 0x34, 0x56, 0x78})
	require.NoError(t, os.WriteFile(bad, data, 0o644))

	m := &merger{mem: memory.DefaultAllocator, limits: DefaultMergeLimits}
	err = m.mergeRuns([]string{good, bad}, func(arrow.RecordBatch) error { return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "read sorted run")
	for _, p := range openFiles(t) {
		assert.False(t, strings.HasPrefix(p, dir), "%s is still open", p)
	}
}
