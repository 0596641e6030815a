package storage

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/compact"
	"github.com/arc-otel/arc-otel/storage/storagetest"
)

// tinyMerge makes every record batch read its own sorted run, spills them in
// batches of a few rows and merges at most three at a time, so that a
// test of a few hundred rows goes through every path of the merge: spills,
// merge passes into longer runs, chunks that span several batches.
var tinyMerge = mergeLimits{RunBytes: 1, SpillBatchRows: 7, MergeChunkRows: 50, MaxFanIn: 3}

// sensorBatch is a measurement batch of n rows at random times in t0's
// hour, with nulls in every nullable column type.
func sensorBatch(t *testing.T, rng *rand.Rand, n int) (*Table, arrow.RecordBatch, []byte) {
	t.Helper()
	fields := []arrow.Field{{Name: "time", Type: utcMicros},
		{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "count", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}}
	b := array.NewRecordBuilder(memory.NewGoAllocator(), arrow.NewSchema(fields, nil))
	defer b.Release()
	hour := t0.Truncate(time.Hour)
	for i := range n {
		at := hour.Add(time.Duration(rng.Int64N(int64(time.Hour))))
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(at.UnixMicro()))
		appendOrNull(b.Field(1), i%5 == 0, func() { b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("host-%d", rng.IntN(4))) })
		appendOrNull(b.Field(2), i%4 == 1, func() { b.Field(2).(*array.Float64Builder).Append(rng.Float64()) })
		appendOrNull(b.Field(3), i%3 == 2, func() { b.Field(3).(*array.Int64Builder).Append(rng.Int64()) })
		appendOrNull(b.Field(4), i%6 == 3, func() { b.Field(4).(*array.BooleanBuilder).Append(i%2 == 0) })
	}
	rec := b.NewRecordBatch()
	tbl, err := MeasurementTable("sensor", rec.Schema())
	require.NoError(t, err)
	require.NoError(t, tbl.Check(rec))
	return tbl, rec, storagetest.IPC(t, rec)
}

func appendOrNull(b array.Builder, null bool, value func()) {
	if null {
		b.AppendNull()
	} else {
		value()
	}
}

// tableRows reads every row of a table's Parquet files as text (one
// string per row, every column) with its sort key.
type textRow struct {
	key  []string // the sort columns' values, comparable as text
	text string
}

func tableRows(t *testing.T, dir string, keys []string) []textRow {
	t.Helper()
	var out []textRow
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, parquetExt) {
			return err
		}
		return readBatches(path, memory.DefaultAllocator, func(rec arrow.RecordBatch) error {
			sch := rec.Schema()
			for i := range int(rec.NumRows()) {
				var row textRow
				var cols []string
				for c, f := range sch.Fields() {
					cols = append(cols, f.Name+"="+rec.Column(c).ValueStr(i))
				}
				slices.Sort(cols) // files of one table may order columns differently
				for _, k := range keys {
					col := rec.Column(sch.FieldIndices(k)[0])
					v := col.ValueStr(i)
					if ts, ok := col.(*array.Timestamp); ok && ts.IsValid(i) {
						v = fmt.Sprintf("%020d", ts.Value(i)) // text order is time order
					}
					row.key = append(row.key, v)
				}
				row.text = strings.Join(cols, "|")
				out = append(out, row)
			}
			return nil
		})
	}))
	return out
}

// sortedTexts is the rows' text in text order: a table's rows as a
// multiset, whatever the files' order.
func sortedTexts(rows []textRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.text
	}
	slices.Sort(out)
	return out
}

func TestCompactSortsAcrossSpilledRuns(t *testing.T) {
	for _, tt := range []struct {
		name  string
		table string
		keys  []string
		batch func(*testing.T, *rand.Rand) (*Table, arrow.RecordBatch, []byte)
	}{
		{"measurement with nulls", "sensor", []string{"time"}, func(t *testing.T, rng *rand.Rand) (*Table, arrow.RecordBatch, []byte) {
			return sensorBatch(t, rng, 40)
		}},
		{"measurement of one row per batch", "sensor", []string{"time"}, func(t *testing.T, rng *rand.Rand) (*Table, arrow.RecordBatch, []byte) {
			return sensorBatch(t, rng, 1)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, nil)
			setMergeLimits(s, tinyMerge)
			rng := rand.New(rand.NewPCG(1, 2))
			ctx := context.Background()
			for range 5 { // five files of two batches each
				for range 2 {
					tbl, rec, payload := tt.batch(t, rng)
					require.NoError(t, s.Append(ctx, NoDedup, "default", tbl, payload, rec))
					rec.Release()
				}
				require.NoError(t, s.Flush())
			}
			tableDir := filepath.Join(dir, "default", tt.table)
			before := tableRows(t, tableDir, tt.keys)

			st, err := s.Compact(ctx, 0)
			require.NoError(t, err)
			require.NoError(t, s.Close())
			assert.Equal(t, 5, st.FilesIn)
			assert.Equal(t, 1, st.FilesOut)
			after := tableRows(t, tableDir, tt.keys)
			assert.True(t, slices.IsSortedFunc(after, func(a, b textRow) int { return slices.Compare(a.key, b.key) }),
				"rows ordered by %v", tt.keys)
			assert.Equal(t, sortedTexts(before), sortedTexts(after), "the same rows, every column, none lost or doubled")
			tmp, err := os.ReadDir(filepath.Join(dir, systemDirName, tmpDirName))
			require.NoError(t, err)
			assert.Empty(t, tmp, "no sorted run left behind")
		})
	}
}

// TestCompactedFilesHaveStatisticsOnEveryColumn: flushed files leave the
// dictionary columns without min/max (parquetfile's dictStatistics); the
// compacted files carry them for pruning.
func TestCompactedFilesHaveStatisticsOnEveryColumn(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2 {
		tbl, rec, payload := sensorBatch(t, rng, 50)
		require.NoError(t, s.Append(context.Background(), NoDedup, "default", tbl, payload, rec))
		rec.Release()
		require.NoError(t, s.Flush())
	}
	_, err := s.Compact(context.Background(), 0)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	merged := parquetFilesUnder(t, filepath.Join(dir, "default", "sensor"))
	require.Len(t, merged, 1)
	pf, err := file.OpenParquetFile(merged[0], false)
	require.NoError(t, err)
	defer pf.Close()
	rg := pf.MetaData().RowGroup(0)
	for _, name := range []string{"time", "host", "value"} {
		idx := pf.MetaData().Schema.ColumnIndexByName(name)
		require.GreaterOrEqual(t, idx, 0, name)
		cc, err := rg.ColumnChunk(idx)
		require.NoError(t, err)
		ok, err := cc.StatsSet()
		require.NoError(t, err)
		assert.True(t, ok, "column %s has min/max statistics", name)
	}
}

// TestCompactMergesFilesOfAnOlderShapeRowByRow: measurement files whose
// columns the write API no longer produces (an int32 column; an earlier
// build's nanosecond times) are still merged, row by row, not left behind
// or refused, and their times come out in microseconds.
func TestCompactMergesFilesOfAnOlderShapeRowByRow(t *testing.T) {
	type oldRow struct {
		Time  int64  `parquet:"time,timestamp(nanosecond)"`
		Host  string `parquet:"host"`
		Cores int32  `parquet:"cores"`
	}
	type newRow struct {
		Time  int64  `parquet:"time,timestamp(microsecond)"`
		Host  string `parquet:"host"`
		Cores int32  `parquet:"cores"`
	}
	dir := t.TempDir()
	part := filepath.Join(dir, "default", "sensor", closedHour)
	require.NoError(t, os.MkdirAll(part, 0o755))
	for i, hosts := range [][]string{{"b", "a"}, {"c"}} {
		var rows []oldRow
		for _, h := range hosts {
			rows = append(rows, oldRow{Time: t0.UnixNano() + 789, Host: h, Cores: 4})
		}
		require.NoError(t, parquet.WriteFile(filepath.Join(part, fmt.Sprintf("old-%d%s", i, parquetExt)), rows))
	}
	s := openStore(t, dir, nil)
	st, err := s.Compact(context.Background(), 0)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.Equal(t, 2, st.FilesIn)
	assert.Equal(t, 1, st.FilesOut)
	entries, err := os.ReadDir(part)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assertMicros(t, filepath.Join(part, entries[0].Name()))
	rows, err := parquet.ReadFile[newRow](filepath.Join(part, entries[0].Name()))
	require.NoError(t, err)
	got := slices.SortedFunc(slices.Values(rows), func(a, b newRow) int { return cmp.Compare(a.Host, b.Host) })
	us := t0.UnixMicro()
	assert.Equal(t, []newRow{{us, "a", 4}, {us, "b", 4}, {us, "c", 4}}, got)
}

// codesBatch is a measurement batch of n rows: a status-like code of five
// values and a random id, both int64.
func codesBatch(t *testing.T, rng *rand.Rand, n int) (*Table, arrow.RecordBatch, []byte) {
	t.Helper()
	fields := []arrow.Field{{Name: "time", Type: utcMicros},
		{Name: "code", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}
	b := array.NewRecordBuilder(memory.NewGoAllocator(), arrow.NewSchema(fields, nil))
	defer b.Release()
	hour := t0.Truncate(time.Hour)
	for i := range n {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(hour.Add(time.Duration(rng.Int64N(int64(time.Hour)))).UnixMicro()))
		appendOrNull(b.Field(1), i%9 == 0, func() { b.Field(1).(*array.Int64Builder).Append([]int64{200, 201, 404, 500, 503}[rng.IntN(5)]) })
		b.Field(2).(*array.Int64Builder).Append(rng.Int64())
	}
	rec := b.NewRecordBatch()
	tbl, err := MeasurementTable("codes", rec.Schema())
	require.NoError(t, err)
	return tbl, rec, storagetest.IPC(t, rec)
}

// Compacted measurement files give an integer column a dictionary when a
// large enough sample of it shows few distinct values, and keep every row.
func TestCompactedFilesDictionaryEncodeLowCardinalityIntegers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rows     int // per flushed file
		codeDict bool
	}{
		{"large sample", minDictSampleRows + 100, true},
		{"sample too small to tell", minDictSampleRows / 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, nil)
			rng := rand.New(rand.NewPCG(5, 6))
			for range 2 {
				tbl, rec, payload := codesBatch(t, rng, tc.rows)
				require.NoError(t, s.Append(context.Background(), NoDedup, "default", tbl, payload, rec))
				rec.Release()
				require.NoError(t, s.Flush())
			}
			tableDir := filepath.Join(dir, "default", "codes")
			before := tableRows(t, tableDir, nil)
			_, err := s.Compact(context.Background(), 0)
			require.NoError(t, err)
			require.NoError(t, s.Close())
			after := tableRows(t, tableDir, nil)
			assert.Equal(t, sortedTexts(before), sortedTexts(after))

			files := parquetFilesUnder(t, tableDir)
			require.Len(t, files, 1)
			encs := columnEncodings(t, files[0])
			assert.Equal(t, tc.codeDict, slices.Contains(encs["code"], "RLE_DICTIONARY"), "code: %v", encs["code"])
			assert.NotContains(t, encs["id"], "RLE_DICTIONARY", "a column of distinct ids stays plain")
		})
	}
}

func parquetFilesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, parquetExt) {
			out = append(out, path)
		}
		return err
	}))
	return out
}

// columnEncodings returns the encodings of each top-level column's chunks.
func columnEncodings(t *testing.T, path string) map[string][]string {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	require.NoError(t, err)
	defer pf.Close()
	out := map[string][]string{}
	for rg := range pf.NumRowGroups() {
		meta := pf.MetaData().RowGroup(rg)
		for c := range meta.NumColumns() {
			cc, err := meta.ColumnChunk(c)
			require.NoError(t, err)
			name := cc.PathInSchema().String()
			for _, e := range cc.Encodings() {
				out[name] = append(out[name], e.String())
			}
		}
	}
	return out
}

// idsBatch is a measurement batch of n rows: trace_id a random 32-hex id
// per row, shared_id one of n/4 such ids (as a trace's spans share one),
// token a random id of 16 or 32 hex digits, message distinct text of one
// template.
func idsBatch(t *testing.T, rng *rand.Rand, n int) (*Table, arrow.RecordBatch, []byte) {
	t.Helper()
	fields := []arrow.Field{{Name: "time", Type: utcMicros}, {Name: "trace_id", Type: arrow.BinaryTypes.String},
		{Name: "shared_id", Type: arrow.BinaryTypes.String}, {Name: "token", Type: arrow.BinaryTypes.String}, {Name: "message", Type: arrow.BinaryTypes.String}}
	b := array.NewRecordBuilder(memory.NewGoAllocator(), arrow.NewSchema(fields, nil))
	defer b.Release()
	hour := t0.Truncate(time.Hour)
	hexID := func() string { return fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64()) }
	shared := make([]string, n/4)
	for i := range shared {
		shared[i] = hexID()
	}
	for i := range n {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(hour.Add(time.Duration(rng.Int64N(int64(time.Hour)))).UnixMicro()))
		b.Field(1).(*array.StringBuilder).Append(hexID())
		b.Field(2).(*array.StringBuilder).Append(shared[rng.IntN(len(shared))])
		b.Field(3).(*array.StringBuilder).Append(hexID()[:16+16*rng.IntN(2)])
		b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("user %d signed in from 10.%d.%d.%d", i, rng.IntN(256), rng.IntN(256), rng.IntN(256)))
	}
	rec := b.NewRecordBatch()
	tbl, err := MeasurementTable("spans", rec.Schema())
	require.NoError(t, err)
	return tbl, rec, storagetest.IPC(t, rec)
}

// The flush writes ids of one width DELTA_LENGTH_BYTE_ARRAY, which zstd
// takes to 4 bits a digit, pages of other distinct random ids (PLAIN,
// each after its length) as literals-only zstd frames (a third of zstd's
// CPU for ~7 % more bytes), and ids that repeat or distinct text as zstd
// does; compaction reads them back and writes the kept file with full
// zstd.
func TestFlushedLiteralPagesCompactToZstd(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	rng := rand.New(rand.NewPCG(7, 8))
	for range 2 {
		tbl, rec, payload := idsBatch(t, rng, 30_000) // pages of ~1 MiB of ids
		require.NoError(t, s.Append(context.Background(), NoDedup, "default", tbl, payload, rec))
		rec.Release()
		require.NoError(t, s.Flush())
	}
	tableDir := filepath.Join(dir, "default", "spans")
	flushed := parquetFilesUnder(t, tableDir)
	require.Len(t, flushed, 2)
	// huff0 alone takes 32-hex ids (and their 4-byte lengths) to 1.91x,
	// zstd to 2.06x (BenchmarkPageZstdByColumn); without the lengths
	// both take them to 2.0x.
	for _, f := range flushed {
		assert.Contains(t, columnEncodings(t, f)["trace_id"], "DELTA_LENGTH_BYTE_ARRAY", "flushed: ids of one width")
		assert.InDelta(t, 2.0, compressionRatio(t, f, "trace_id"), 0.01, "flushed: 4 bits a digit")
		assert.Contains(t, columnEncodings(t, f)["token"], "PLAIN", "flushed: ids of two widths")
		assert.InDelta(t, 1.91, compressionRatio(t, f, "token"), 0.03, "flushed: literals only")
		assert.Greater(t, compressionRatio(t, f, "shared_id"), 2.5, "ids that repeat: zstd finds the copies")
		assert.Greater(t, compressionRatio(t, f, "message"), 2.5, "distinct text: zstd finds the template")
	}
	before := tableRows(t, tableDir, nil)
	_, err := s.Compact(context.Background(), 0)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.Equal(t, sortedTexts(before), sortedTexts(tableRows(t, tableDir, nil)))
	compacted := parquetFilesUnder(t, tableDir)
	require.Len(t, compacted, 1)
	assert.Greater(t, compressionRatio(t, compacted[0], "token"), 2.0, "compacted: zstd")
	assert.Contains(t, columnEncodings(t, compacted[0])["trace_id"], "DELTA_LENGTH_BYTE_ARRAY", "compacted: ids of one width")
}

// compressionRatio is a column's uncompressed bytes over its compressed
// bytes in a file.
func compressionRatio(t *testing.T, path, column string) float64 {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	require.NoError(t, err)
	defer pf.Close()
	var raw, packed int64
	for rg := range pf.NumRowGroups() {
		meta := pf.MetaData().RowGroup(rg)
		for c := range meta.NumColumns() {
			cc, err := meta.ColumnChunk(c)
			require.NoError(t, err)
			if cc.PathInSchema().String() == column {
				raw += cc.TotalUncompressedSize()
				packed += cc.TotalCompressedSize()
			}
		}
	}
	require.Positive(t, packed, "column %s in %s", column, path)
	return float64(raw) / float64(packed)
}

// TestCompactFailsCleanlyOnADamagedSortedRun: a sorted run damaged in
// _arcstore/tmp between its spill and its merge (a flipped bit) fails the
// partition's compaction with an error naming the run, where arrow-go's
// reader would have panicked or run out of memory and taken the sidecar
// down; the runs are gone, the partition's files untouched, the store
// still takes writes, and the next compaction merges the partition.
func TestCompactFailsCleanlyOnADamagedSortedRun(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	rng := rand.New(rand.NewPCG(5, 6))
	ctx := context.Background()
	for range 4 {
		tbl, rec, payload := sensorBatch(t, rng, 30)
		require.NoError(t, s.Append(ctx, NoDedup, "default", tbl, payload, rec))
		rec.Release()
		require.NoError(t, s.Flush())
	}
	tableDir := filepath.Join(dir, "default", "sensor")
	tmp := filepath.Join(dir, systemDirName, tmpDirName)
	sources := map[string][]byte{}
	for _, p := range parquetFilesUnder(t, tableDir) {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		sources[p] = b
	}
	require.Len(t, sources, 4)
	before := tableRows(t, tableDir, []string{"time"})

	var damaged []string
	cfg := compactConfig(s)
	cfg.Limits = tinyMerge
	cfg.Hook = func(step string) error {
		if step != "spilled" {
			return nil
		}
		runs, err := filepath.Glob(filepath.Join(tmp, "merge-*"))
		if err != nil || len(runs) == 0 {
			return fmt.Errorf("no sorted runs in %s: %v", tmp, err)
		}
		data, err := os.ReadFile(runs[0])
		if err != nil {
			return err
		}
		data[len(data)-10] ^= 0x01 // the footer's length, before "ARROW1"
		damaged = append(damaged, filepath.Base(runs[0]))
		return os.WriteFile(runs[0], data, 0o644)
	}
	s.compactor = compact.New(cfg)
	_, err := s.Compact(ctx, 0)
	require.Error(t, err)
	require.Len(t, damaged, 1)
	assert.ErrorContains(t, err, "check sorted run")
	assert.ErrorContains(t, err, damaged[0], "the error names the damaged run")
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "sorted runs left in tmp")
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	for _, fd := range fds {
		if p, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil {
			assert.False(t, strings.HasPrefix(p, tmp), "%s is still open", p)
		}
	}
	after := parquetFilesUnder(t, tableDir)
	require.Len(t, after, len(sources), "the partition keeps its files")
	for _, p := range after {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, sources[p], b, "%s changed", p)
	}

	tbl, rec, payload := sensorBatch(t, rng, 5)
	require.NoError(t, s.Append(ctx, NoDedup, "default", tbl, payload, rec), "the store still takes writes")
	rec.Release()
	setMergeLimits(s, tinyMerge)
	st, err := s.Compact(ctx, 0)
	require.NoError(t, err, "the next compaction merges the partition")
	assert.Equal(t, 4, st.FilesIn)
	assert.Equal(t, 1, st.FilesOut)
	assert.Equal(t, sortedTexts(before), sortedTexts(tableRows(t, tableDir, []string{"time"})))
	require.NoError(t, s.Close())
}
