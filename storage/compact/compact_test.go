package compact

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/layout"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeGuard stands in for the store's locks: it records whether the tree
// lock is held and can say that a flush is half published.
type fakeGuard struct {
	maint, tree sync.Mutex
	treeHeld    bool
	unfinished  error
}

type heldLock struct {
	mu   *sync.Mutex
	held *bool
}

func (l heldLock) Lock() {
	l.mu.Lock()
	if l.held != nil {
		*l.held = true
	}
}

func (l heldLock) Unlock() {
	if l.held != nil {
		*l.held = false
	}
	l.mu.Unlock()
}

func (g *fakeGuard) Maint() sync.Locker { return heldLock{mu: &g.maint} }
func (g *fakeGuard) Tree() sync.Locker  { return heldLock{mu: &g.tree, held: &g.treeHeld} }
func (g *fakeGuard) Unfinished() error  { return g.unfinished }

// osFS is the real file system, as narrow as FS.
var _ FS = layout.OSFS{}

const hour9 = "default/logs/date=2026-11-22/hour=9"

var t0 = time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)

// writeLogs writes a Parquet file of logs with the given messages.
func writeLogs(t *testing.T, path string, msgs ...string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	rows := make([]schema.LogRecord, len(msgs))
	for i, m := range msgs {
		rows[i] = schema.LogRecord{Time: t0.UnixMicro() + int64(i), ObservedTime: t0.UnixMicro(), Message: m}
	}
	require.NoError(t, parquet.WriteFile(path, rows))
}

func readLogs(t *testing.T, dir string) []string {
	t.Helper()
	names, err := layout.ParquetFiles(layout.OSFS{}, dir)
	require.NoError(t, err)
	var out []string
	for _, n := range names {
		rows, err := parquet.ReadFile[schema.LogRecord](filepath.Join(dir, n))
		require.NoError(t, err)
		for _, r := range rows {
			out = append(out, r.Message)
		}
	}
	slices.Sort(out)
	return out
}

// tree is a data directory with two files in a closed hour of logs.
func tree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, layout.SystemDirName, layout.TmpDirName), 0o755))
	writeLogs(t, filepath.Join(dir, hour9, "a.parquet"), "a-0", "a-1")
	writeLogs(t, filepath.Join(dir, hour9, "b.parquet"), "b-0")
	return dir
}

func newCompactor(dir string, g Guard, hook func(string) error, report func(Stats)) *Compactor {
	return New(Config{
		FS: layout.OSFS{}, DataDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Mem: memory.DefaultAllocator, Guard: g, Hook: hook, Report: report,
	})
}

func TestRunMergesAClosedPartitionWithoutHoldingTheTreeWhileMerging(t *testing.T) {
	dir := tree(t)
	g := &fakeGuard{}
	var treeWhileMerging, treeWhileSwapping []bool
	var reports []Stats
	c := newCompactor(dir, g, func(step string) error {
		if step == "merged" {
			treeWhileMerging = append(treeWhileMerging, g.treeHeld)
		} else {
			treeWhileSwapping = append(treeWhileSwapping, g.treeHeld)
		}
		return nil
	}, func(st Stats) { reports = append(reports, st) })

	st, err := c.Run(context.Background(), 0)
	require.NoError(t, err)
	assert.Equal(t, []bool{false}, treeWhileMerging, "the merge runs without the tree lock")
	assert.Equal(t, []bool{true, true, true, true}, treeWhileSwapping, "staged, intent, exchanged, removed: under the tree lock")
	assert.Equal(t, 1, st.Partitions)
	assert.Equal(t, 2, st.FilesIn)
	assert.Equal(t, 1, st.FilesOut)
	assert.EqualValues(t, 3, st.Rows)
	require.Len(t, reports, 1)
	assert.Equal(t, st, reports[0])

	names, err := layout.ParquetFiles(layout.OSFS{}, filepath.Join(dir, hour9))
	require.NoError(t, err)
	require.Len(t, names, 1)
	assert.Contains(t, names[0], "-compacted-")
	assert.Equal(t, []string{"a-0", "a-1", "b-0"}, readLogs(t, filepath.Join(dir, hour9)))
	tmp, err := os.ReadDir(filepath.Join(dir, layout.SystemDirName, layout.TmpDirName))
	require.NoError(t, err)
	assert.Empty(t, tmp, "no temp file left")
}

func TestRunLeavesAnOpenHourAlone(t *testing.T) {
	dir := tree(t)
	c := newCompactor(dir, &fakeGuard{}, nil, nil)
	age := time.Since(t0) + time.Hour // the hour ended less than this ago
	st, err := c.Run(context.Background(), age)
	require.NoError(t, err)
	assert.Zero(t, st.Partitions)
	names, err := layout.ParquetFiles(layout.OSFS{}, filepath.Join(dir, hour9))
	require.NoError(t, err)
	assert.Equal(t, []string{"a.parquet", "b.parquet"}, names)
}

func TestRunWaitsForAHalfPublishedFlush(t *testing.T) {
	dir := tree(t)
	unfinished := errors.New("a flush is half published")
	c := newCompactor(dir, &fakeGuard{unfinished: unfinished}, nil, nil)
	_, err := c.Run(context.Background(), 0)
	require.ErrorIs(t, err, unfinished)
	names, err := layout.ParquetFiles(layout.OSFS{}, filepath.Join(dir, hour9))
	require.NoError(t, err)
	assert.Equal(t, []string{"a.parquet", "b.parquet"}, names, "the partition keeps its files")
	tmp, err := os.ReadDir(filepath.Join(dir, layout.SystemDirName, layout.TmpDirName))
	require.NoError(t, err)
	assert.Empty(t, tmp, "the merged file is removed")
}

// TestRecoverSettlesEachStep stops a swap after each step and recovers
// with a new compactor, as a restart would: the partition holds the old
// files or the merged one, and no staging folder or intent is left.
func TestRecoverSettlesEachStep(t *testing.T) {
	errStop := errors.New("stop")
	for _, tt := range []struct {
		step    string
		swapped bool
	}{{"merged", false}, {"staged", false}, {"intent", false}, {"exchanged", true}, {"removed", true}} {
		t.Run(tt.step, func(t *testing.T) {
			dir := tree(t)
			c := newCompactor(dir, &fakeGuard{}, func(step string) error {
				if step == tt.step {
					return errStop
				}
				return nil
			}, nil)
			_, err := c.Run(context.Background(), 0)
			require.ErrorIs(t, err, errStop)

			require.NoError(t, newCompactor(dir, &fakeGuard{}, nil, nil).Recover())
			names, err := layout.ParquetFiles(layout.OSFS{}, filepath.Join(dir, hour9))
			require.NoError(t, err)
			if tt.swapped {
				require.Len(t, names, 1)
				assert.Contains(t, names[0], "-compacted-")
			} else {
				assert.Equal(t, []string{"a.parquet", "b.parquet"}, names)
			}
			assert.Equal(t, []string{"a-0", "a-1", "b-0"}, readLogs(t, filepath.Join(dir, hour9)))
			_, err = os.Stat(filepath.Join(dir, layout.SystemDirName, layout.CompactDirName))
			assert.ErrorIs(t, err, os.ErrNotExist, "staging folders are gone")
			_, err = os.Stat(filepath.Join(dir, layout.SystemDirName, IntentName))
			assert.ErrorIs(t, err, os.ErrNotExist, "the intent is gone")
		})
	}
}

// TestRunSkipsFilesBesideTables puts a file where tables are (a README
// in a database folder): compaction lists it as nothing, as retention
// does, instead of failing every run on it.
func TestRunSkipsFilesBesideTables(t *testing.T) {
	dir := tree(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "default", "README"), []byte("notes"), 0o644))
	st, err := newCompactor(dir, &fakeGuard{}, nil, nil).Run(context.Background(), 0)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Partitions)
	assert.Equal(t, []string{"a-0", "a-1", "b-0"}, readLogs(t, filepath.Join(dir, hour9)))
}

// A sorted compaction that fails after the sort spilled a run (a damaged
// file after more than sortRunRows rows) leaves no temp file open or on
// disk: the sort's runs file went only when a merge finished, so every
// retry of a partition with a damaged file kept another one, and its
// space, until the sidecar restarted.
func TestFailedSortedMergeRemovesItsRuns(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, layout.SystemDirName, layout.TmpDirName)
	require.NoError(t, os.MkdirAll(tmp, 0o755))
	msgs := make([]string, sortRunRows+1)
	for i := range msgs {
		msgs[i] = "m"
	}
	writeLogs(t, filepath.Join(dir, hour9, "a.parquet"), msgs...)
	damaged := filepath.Join(dir, hour9, "b.parquet")
	writeLogs(t, damaged, "b-0", "b-1")
	data, err := os.ReadFile(damaged)
	require.NoError(t, err)
	for i := 4; i < 24; i++ { // the first page's header, after "PAR1"
		data[i] ^= 0xa5
	}
	require.NoError(t, os.WriteFile(damaged, data, 0o644))

	c := New(Config{
		FS: layout.OSFS{}, DataDir: dir, Logger: slog.New(slog.DiscardHandler),
		Mem: memory.DefaultAllocator, Guard: &fakeGuard{}, Sort: true,
	})
	_, err = c.Run(context.Background(), 0)
	require.ErrorContains(t, err, "b.parquet", "the damaged file fails the merge")
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "temp files left")
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	for _, fd := range fds {
		if p, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil {
			assert.False(t, strings.HasPrefix(p, dir), "%s is still open", p)
		}
	}
	names, err := layout.ParquetFiles(layout.OSFS{}, filepath.Join(dir, hour9))
	require.NoError(t, err)
	assert.Equal(t, []string{"a.parquet", "b.parquet"}, names, "the partition keeps its files")
}
