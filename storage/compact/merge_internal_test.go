package compact

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/layout"
	"github.com/arc-otel/arc-otel/storage/storagetest"
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

// runOf is the sorted run of the file at path as it is now.
func runOf(t *testing.T, path string) sortedRun {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return sortedRun{path: path, size: int64(len(data)), sum: crc32.Checksum(data, castagnoli)}
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
	// Checksums of the files as they are: a read that fails past the check.
	err = m.mergeRuns([]sortedRun{runOf(t, good), runOf(t, bad)}, func(arrow.RecordBatch) error { return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "read sorted run")
	for _, p := range openFiles(t) {
		assert.False(t, strings.HasPrefix(p, dir), "%s is still open", p)
	}
}

// spillTestRun spills three batches of rows (times, hosts with nulls,
// values) as one sorted run through the merge's own spill, in batches of
// 20 rows, and returns the merger and the run file.
func spillTestRun(t *testing.T) (*merger, string) {
	t.Helper()
	s := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	dir := t.TempDir()
	m := &merger{
		c:      &Compactor{cfg: Config{FS: layout.OSFS{}}, tmpDir: dir},
		limits: MergeLimits{RunBytes: 1 << 20, SpillBatchRows: 20, MergeChunkRows: 50, MaxFanIn: 4},
		mem:    memory.DefaultAllocator, schema: s, keys: []string{"host", "time"},
	}
	var run []arrow.RecordBatch
	for r := range 3 {
		b := array.NewRecordBuilder(memory.DefaultAllocator, s)
		for i := range 20 {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i*3+r)))
			if i%7 == 0 {
				b.Field(1).AppendNull()
			} else {
				b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("host-%d", (i+r)%4))
			}
			b.Field(2).(*array.Int64Builder).Append(int64(i*3 + r))
		}
		run = append(run, b.NewRecordBatch())
		b.Release()
	}
	require.NoError(t, m.spill(run))
	for _, r := range run {
		r.Release()
	}
	files, err := filepath.Glob(filepath.Join(dir, "merge-*.arrows"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	return m, files[0]
}

// runLayout locates the parts of an Arrow IPC file that a damaged byte
// can make arrow-go's reader trust: the schema message, the first record
// batch's metadata (its Buffer structs) and body, and the footer.
type runLayout struct {
	schemaMeta      [2]int // metadata of the schema message, from..to
	batchNodes      []int  // offset in the file of each FieldNode{length, null_count} of the first batch
	batchBuffers    []int  // and of each Buffer{offset, length}
	batchBodyLength int    // of the first batch's Message.bodyLength
	batchBody       int
	footer          [2]int
}

func parseRun(t *testing.T, data []byte) runLayout {
	t.Helper()
	var l runLayout
	pos := 8 // "ARROW1\0\0"
	for i := 0; i < 2; i++ {
		require.Equal(t, uint32(0xFFFFFFFF), binary.LittleEndian.Uint32(data[pos:]))
		n := int(binary.LittleEndian.Uint32(data[pos+4:]))
		metaAt := pos + 8
		meta := data[metaAt : metaAt+n]
		msg := flatbuffers.Table{Bytes: meta, Pos: flatbuffers.GetUOffsetT(meta)}
		var bodyLen int64
		if o := flatbuffers.UOffsetT(msg.Offset(10)); o != 0 { // bodyLength
			bodyLen = msg.GetInt64(o + msg.Pos)
			if i == 1 {
				l.batchBodyLength = metaAt + int(o+msg.Pos)
			}
		}
		if i == 0 {
			l.schemaMeta = [2]int{metaAt, metaAt + n}
		} else {
			nodes, buffers := storagetest.BatchLayout(t, meta)
			for _, at := range nodes {
				l.batchNodes = append(l.batchNodes, metaAt+at)
			}
			for _, at := range buffers {
				l.batchBuffers = append(l.batchBuffers, metaAt+at)
			}
			l.batchBody = metaAt + n
		}
		pos = metaAt + n + int(bodyLen)
	}
	size := int(binary.LittleEndian.Uint32(data[len(data)-10:]))
	l.footer = [2]int{len(data) - 10 - size, len(data) - 10}
	return l
}

// A damaged sorted run (a flipped byte in _arcstore/tmp, a file cut
// short) fails the merge with an error that names it. arrow-go's IPC
// reader trusts what the file's metadata declares: some of these made it
// panic, or ask for terabytes (a fatal error no recover catches), which
// took the whole sidecar down at every compaction of the partition.
func TestMergeRunsRefusesADamagedRun(t *testing.T) {
	flip := func(at int, x byte) func([]byte) []byte {
		return func(b []byte) []byte { b[at] ^= x; return b }
	}
	_, sample := spillTestRun(t)
	data, err := os.ReadFile(sample)
	require.NoError(t, err)
	l := parseRun(t, data)
	require.NotEmpty(t, l.batchBuffers)
	// The host column's offsets buffer: validity, offsets, data of the
	// time column (two buffers) come first.
	strOffsets := l.batchBuffers[3]
	strOffsetsAt := int(binary.LittleEndian.Uint64(data[strOffsets:]))
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"schema message: a byte of its metadata", flip((l.schemaMeta[0]+l.schemaMeta[1])/2, 0x01)},
		{"record batch metadata: a buffer's offset", flip(strOffsets, 0x08)},
		{"record batch metadata: a buffer's length", flip(strOffsets+8, 0x01)},
		{"record batch metadata: a column's row count", flip(l.batchNodes[1], 0x02)},
		{"record batch metadata: a column's null count", flip(l.batchNodes[1]+8, 0x04)},
		{"record batch metadata: the body length", flip(l.batchBodyLength, 0x08)},
		{"record batch body: a buffer's uncompressed length", flip(l.batchBody+strOffsetsAt+5, 0x80)},
		{"record batch body: compressed data", flip(l.batchBody+strOffsetsAt+12, 0x01)},
		{"footer: a byte of the schema", flip((l.footer[0]+l.footer[1])/2, 0x01)},
		{"footer: its length", flip(len(data)-10, 0x01)},
		{"cut short by a byte", func(b []byte) []byte { return b[:len(b)-1] }},
		{"cut before the footer", func(b []byte) []byte { return b[:l.footer[0]] }},
		{"a byte too many", func(b []byte) []byte { return append(b, 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, path := spillTestRun(t)
			defer m.close()
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, tc.damage(data), 0o644))
			err = m.mergeRuns(m.spills, func(arrow.RecordBatch) error { return nil })
			require.Error(t, err)
			assert.ErrorContains(t, err, filepath.Base(path), "the error names the run")
			for _, p := range openFiles(t) {
				assert.NotEqual(t, path, p, "the run is still open")
			}
		})
	}
}

// TestMergeRunsRefusesEveryFlippedBit: whichever bit of a run file flips,
// the merge fails, never panics; the undamaged file merges to its rows.
func TestMergeRunsRefusesEveryFlippedBit(t *testing.T) {
	m, path := spillTestRun(t)
	defer m.close()
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	rows := 0
	require.NoError(t, m.mergeRuns(m.spills, func(rec arrow.RecordBatch) error { rows += int(rec.NumRows()); return nil }))
	require.Equal(t, 60, rows)
	for i := range good {
		damaged := bytes.Clone(good)
		damaged[i] ^= 1 << (i % 8)
		require.NoError(t, os.WriteFile(path, damaged, 0o644))
		err := m.mergeRuns(m.spills, func(arrow.RecordBatch) error { return nil })
		require.Error(t, err, "byte %d ^ %#x", i, 1<<(i%8))
	}
}
