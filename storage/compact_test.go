package storage

import (
	"cmp"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/parquetfile"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/compact"
	"github.com/arc-otel/arc-otel/storage/layout"
	"github.com/arc-otel/arc-otel/storage/tableschema"
)

// partitionFiles lists the Parquet files of a logs partition.
func partitionFiles(t *testing.T, dir, partition string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "default", "logs", partition))
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), parquetExt) {
			out = append(out, e.Name())
		}
	}
	return out
}

// threeFlushes leaves three files in t0's partition (closed: t0 is in the
// past) and two in an hour that has not ended, and returns that hour's
// partition. The open hour is one ahead of the clock, so that it is still
// open however long the test runs into the next hour.
func threeFlushes(t *testing.T, s *Store) (open string) {
	t.Helper()
	later := time.Now().UTC().Add(time.Hour)
	for _, p := range []string{"a", "b", "c"} {
		appendBatch(t, s, p, t0, t0.Add(-time.Minute))
		if p != "c" {
			appendBatch(t, s, "now-"+p, later)
		}
		require.NoError(t, s.Flush())
	}
	return "date=" + later.Format(time.DateOnly) + "/hour=" + strconv.Itoa(later.Hour())
}

const closedHour = "date=2026-11-22/hour=9"

func TestCompactMergesClosedPartitions(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour, CompactSort: true})
	require.NoError(t, err)
	open := threeFlushes(t, s)
	before := messages(t, dir)
	require.Len(t, partitionFiles(t, dir, closedHour), 3)

	st, err := s.Compact(context.Background(), 0)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Partitions)
	assert.Equal(t, 3, st.FilesIn)
	assert.Equal(t, 1, st.FilesOut)
	assert.Equal(t, int64(6), st.Rows)

	merged := partitionFiles(t, dir, closedHour)
	require.Len(t, merged, 1)
	assert.Equal(t, before, messages(t, dir), "same rows, none lost or doubled")
	rows, err := parquet.ReadFile[schema.LogRecord](filepath.Join(dir, "default", "logs", closedHour, merged[0]))
	require.NoError(t, err)
	assert.True(t, slices.IsSortedFunc(rows, func(a, b schema.LogRecord) int {
		return cmp.Or(cmp.Compare(a.ServiceName, b.ServiceName), cmp.Compare(a.Time, b.Time))
	}), "rows sorted by the table's sort columns (service, time)")
	assert.Len(t, partitionFiles(t, dir, open), 2, "an hour that has not ended is not compacted")
	require.NoError(t, s.Close())

	entries, err := os.ReadDir(filepath.Join(dir, systemDirName, compactDirName))
	require.NoError(t, err)
	assert.Empty(t, entries, "no staging dir left")
}

var errCrash = errors.New("crash")

// setCompactHook makes compaction call hook after each step (merged,
// staged, intent, exchanged, removed; spilled: a merge's sorted runs are
// written); an error stops it there.
func setCompactHook(s *Store, hook func(step string) error) {
	cfg := compactConfig(s)
	cfg.Hook = hook
	s.compactor = compact.New(cfg)
}

// setMergeLimits sizes the merges of the store's compactions.
func setMergeLimits(s *Store, l mergeLimits) {
	cfg := compactConfig(s)
	cfg.Limits = l
	s.compactor = compact.New(cfg)
}

type mergeLimits = compact.MergeLimits

// Compaction's names and readers, for the tests' checks.
const (
	compactDirName    = layout.CompactDirName
	compactIntentName = compact.IntentName
)

var (
	readSchema  = compact.ReadSchema
	readBatches = compact.ReadBatches
)

// minDictSampleRows is the sample compaction chooses dictionaries by.
const minDictSampleRows = tableschema.MinDictSampleRows

// compactKnownFiles is how many files compaction has read the footer of
// and left alone.
func compactKnownFiles(s *Store) int { return s.compactor.Known() }

// TestCompactCrashAtEveryStep crashes a compaction after each of its steps
// and checks what a restart leaves: the old files or the new one, never
// both, never neither, and the same rows.
func TestCompactCrashAtEveryStep(t *testing.T) {
	for _, tt := range []struct {
		step    string
		swapped bool
	}{
		{"merged", false},
		{"staged", false},
		{"intent", false},
		{"exchanged", true},
		{"removed", true},
	} {
		for _, moved := range []bool{false, true} {
			name := "after " + tt.step
			if moved {
				// Opened under another path: restored or mounted elsewhere.
				name += " in a moved data dir"
			}
			t.Run(name, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "a")
				s := openStore(t, dir, nil)
				threeFlushes(t, s)
				want := messages(t, dir)
				old := partitionFiles(t, dir, closedHour)

				setCompactHook(s, func(step string) error {
					if step == tt.step {
						return errCrash
					}
					return nil
				})
				_, err := s.Compact(context.Background(), 0)
				require.ErrorIs(t, err, errCrash)
				// Before any restart the partition is already one or the other.
				assertOneSide(t, dir, old, tt.swapped)
				crash(s)
				if moved {
					to := filepath.Join(filepath.Dir(dir), "b")
					require.NoError(t, os.Rename(dir, to))
					dir = to
				}

				s = openStore(t, dir, nil)
				assertOneSide(t, dir, old, tt.swapped)
				assert.Equal(t, want, messages(t, dir))
				entries, err := os.ReadDir(filepath.Join(dir, systemDirName, compactDirName))
				if err == nil {
					assert.Empty(t, entries, "recovery clears staging dirs")
				}
				_, err = os.Stat(filepath.Join(dir, systemDirName, compactIntentName))
				assert.True(t, os.IsNotExist(err), "recovery removes the intent")

				// And compaction still works afterwards.
				_, err = s.Compact(context.Background(), 0)
				require.NoError(t, err)
				assert.Len(t, partitionFiles(t, dir, closedHour), 1)
				assert.Equal(t, want, messages(t, dir))
				require.NoError(t, s.Close())
			})
		}
	}
}

func assertOneSide(t *testing.T, dir string, old []string, swapped bool) {
	t.Helper()
	got := partitionFiles(t, dir, closedHour)
	if !swapped {
		assert.ElementsMatch(t, old, got, "the old files, all of them")
		return
	}
	require.Len(t, got, 1, "only the merged file")
	assert.Contains(t, got[0], "-compacted-")
}

func TestCompactKeepsSchemasApart(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		for _, wide := range []bool{false, true} {
			tbl, rec, ipc := cpuBatchAt(t, 5, wide, t0)
			require.NoError(t, s.Append(ctx, NoDedup, "default", tbl, ipc, rec))
			rec.Release()
		}
		require.NoError(t, s.Flush())
	}
	cpuDir := filepath.Join(dir, "default", "cpu")
	require.Equal(t, map[string]int64{"host,time,value": 10, "core,host,time,value": 10}, parquetFiles(t, cpuDir))
	st, err := s.Compact(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, 4, st.FilesIn)
	assert.Equal(t, 2, st.FilesOut, "one file per schema")
	assert.Equal(t, map[string]int64{"host,time,value": 10, "core,host,time,value": 10}, parquetFiles(t, cpuDir))
	require.NoError(t, s.Close())
}

func TestSecondStoreOnADirectoryIsRefused(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	_, err := Open(Options{DataDir: dir, Logger: quiet})
	require.ErrorIs(t, err, ErrLocked)
	require.NoError(t, s.Close())
	s = openStore(t, dir, nil)
	require.NoError(t, s.Close())
}

// TestCompactWritesPagesOfTheFlushSize: zstd compresses each page alone,
// so pages smaller than the flush's made merged files larger than the
// files they replaced. The merged message column must come out in pages
// of parquetfile.DataPageBytes, not parquet-go's default 256 KiB.
func TestCompactWritesPagesOfTheFlushSize(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour})
	require.NoError(t, err)
	const flushes, rows = 3, 10_000
	prefix := strings.Repeat("m", 90) // about 100 bytes per message
	var messageBytes int64
	for f := range flushes {
		times := make([]time.Time, rows)
		for i := range times {
			times[i] = t0.Add(-time.Duration(f*rows+i) * time.Millisecond) // t0 ends its hour
		}
		p := prefix + strconv.Itoa(f)
		appendBatch(t, s, p, times...)
		for i := range rows {
			messageBytes += int64(len(p) + 1 + len(strconv.Itoa(i)))
		}
		require.NoError(t, s.Flush())
	}
	_, err = s.Compact(context.Background(), 0)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	merged := partitionFiles(t, dir, "date=2026-11-22/hour=9")
	require.Len(t, merged, 1)

	f, err := os.Open(filepath.Join(dir, "default", "logs", "date=2026-11-22/hour=9", merged[0]))
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	pf, err := parquet.OpenFile(f, st.Size())
	require.NoError(t, err)
	require.Equal(t, int64(flushes*rows), pf.NumRows())
	col, ok := pf.Schema().Lookup("message")
	require.True(t, ok)
	pages := 0
	for _, rg := range pf.RowGroups() {
		ps := rg.ColumnChunks()[col.ColumnIndex].Pages()
		for {
			p, err := ps.ReadPage()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			pages++
			parquet.Release(p)
		}
		require.NoError(t, ps.Close())
	}
	// Values plus their 4-byte lengths (PLAIN), in pages of DataPageBytes.
	want := int((messageBytes + 4*flushes*rows + parquetfile.DataPageBytes - 1) / parquetfile.DataPageBytes)
	assert.LessOrEqual(t, pages, want+1, "the message column's %d bytes in pages of %d bytes", messageBytes, parquetfile.DataPageBytes)
}

// TestDamagedPartitionStopsNoOtherCompaction damages a file of one closed
// partition: its compaction fails and says so, and the partitions after it
// are compacted all the same. A run used to stop at the first failure, so
// one damaged file kept every later hour uncompacted for good (and, with a
// bucket, never uploaded, since an hour is uploaded once compacted).
func TestDamagedPartitionStopsNoOtherCompaction(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	defer s.Close()
	const damagedHour = "date=2026-11-22/hour=10" // listed before hour=9
	for _, p := range []string{"a", "b"} {
		appendBatch(t, s, p, t0, t0.Add(time.Hour))
		require.NoError(t, s.Flush())
	}
	require.Len(t, partitionFiles(t, dir, closedHour), 2)
	damaged := partitionFiles(t, dir, damagedHour)
	require.Len(t, damaged, 2)
	before := messages(t, dir)
	path := filepath.Join(dir, "default", "logs", damagedHour, damaged[0])
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte("not parquet"), 0o644))

	st, err := s.Compact(context.Background(), 0)
	require.Error(t, err)
	assert.ErrorContains(t, err, "hour=10")
	assert.Equal(t, st.Err, err)
	assert.Len(t, partitionFiles(t, dir, closedHour), 1, "the undamaged hour is compacted")
	assert.ElementsMatch(t, damaged, partitionFiles(t, dir, damagedHour), "the damaged hour keeps its files")
	require.NoError(t, os.WriteFile(path, good, 0o644))
	assert.Equal(t, before, messages(t, dir))
}
