package storage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/storagetest"
)

// recorder is an Observer that keeps what it is told. The committer and
// flush goroutines call it, hence the lock.
type recorder struct {
	mu      sync.Mutex
	commits []Commit
	flushes []Flush
	sinks   []SinkWritten
	dups    []Duplicate
}

func (r *recorder) Deduplicated(d Duplicate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dups = append(r.dups, d)
}

func (r *recorder) Committed(c Commit) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commits = append(r.commits, c)
}

func (r *recorder) Flushed(f Flush) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushes = append(r.flushes, f)
}

func (r *recorder) Compacted(CompactStats) {}
func (r *recorder) Retired(int)            {}

func (r *recorder) SinkWrote(w SinkWritten) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sinks = append(r.sinks, w)
}

func (r *recorder) seen() ([]Commit, []Flush) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Commit(nil), r.commits...), append([]Flush(nil), r.flushes...)
}

// flushFaults also fails the creation of the next Parquet temp file, which
// fails a flush before anything is published.
type flushFaults struct {
	walFaults
	failTemp atomic.Bool
}

func (f *flushFaults) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if strings.HasSuffix(name, parquetExt+".tmp") && f.failTemp.CompareAndSwap(true, false) {
		return nil, errInjected
	}
	return f.walFaults.OpenFile(name, flag, perm)
}

func TestObserverSeesCommitsAndFlushes(t *testing.T) {
	logs := func(rows int64) map[string]int64 { return map[string]int64{"default/logs": rows} }
	for _, tt := range []struct {
		name string
		act  func(t *testing.T, s *Store, fsys *flushFaults)
		// Batches of each group commit in order, and whether it failed.
		commitBatches []int
		commitErr     []bool
		// Whether each reported flush failed, and the rows and files of
		// the successful ones.
		flushErr []bool
		rows     map[string]int64
		files    int
	}{
		{
			name: "two batches over two hours",
			act: func(t *testing.T, s *Store, _ *flushFaults) {
				appendBatch(t, s, "a", t0, t0, t0)
				appendBatch(t, s, "b", t0, t0.Add(time.Second))
				require.NoError(t, s.Flush())
			},
			commitBatches: []int{1, 1},
			commitErr:     []bool{false, false},
			flushErr:      []bool{false},
			rows:          logs(5),
			files:         2, // one per hour partition
		},
		{
			name: "a retried batch is not written again",
			act: func(t *testing.T, s *Store, _ *flushFaults) {
				appendBatch(t, s, "a", t0, t0)
				appendBatch(t, s, "a", t0, t0) // known: no commit at all
				// Twice in one group: written once.
				rec, payload := storagetest.LogBatch(t, "b", t0)
				defer rec.Release()
				tbl, err := LookupTable(schema.TableLogs)
				require.NoError(t, err)
				b := Batch{ID: NewBatchID("default", tbl.Name, payload), Database: "default", Table: tbl, IPC: payload, Rec: rec}
				require.NoError(t, s.AppendAll(context.Background(), []Batch{b, b}))
				require.NoError(t, s.Flush())
			},
			commitBatches: []int{1, 1},
			commitErr:     []bool{false, false},
			flushErr:      []bool{false},
			rows:          logs(3),
			files:         1,
		},
		{
			name: "failed fsync, nothing to flush",
			act: func(t *testing.T, s *Store, fsys *flushFaults) {
				rec, payload := storagetest.LogBatch(t, "lost", t0)
				defer rec.Release()
				tbl, err := LookupTable(schema.TableLogs)
				require.NoError(t, err)
				fsys.FailSync.Store(true)
				require.ErrorIs(t, s.Append(context.Background(), NewBatchID("default", tbl.Name, payload), "default", tbl, payload, rec), errInjected)
				// An empty flush is not worth a report.
				require.NoError(t, s.Flush())
			},
			commitBatches: []int{1},
			commitErr:     []bool{true},
			rows:          map[string]int64{},
		},
		{
			name: "failed flush, then its retry",
			act: func(t *testing.T, s *Store, fsys *flushFaults) {
				appendBatch(t, s, "a", t0, t0)
				fsys.failTemp.Store(true)
				require.ErrorIs(t, s.Flush(), errInjected)
				require.NoError(t, s.Flush())
			},
			commitBatches: []int{1},
			commitErr:     []bool{false},
			flushErr:      []bool{true, false},
			rows:          logs(2),
			files:         1,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fsys := &flushFaults{}
			obs := &recorder{}
			s, err := Open(Options{DataDir: dir, Logger: quiet, FS: fsys, FlushInterval: time.Hour, Observer: obs})
			require.NoError(t, err)
			tt.act(t, s, fsys)
			commits, flushes := obs.seen()
			require.NoError(t, s.Close())

			var batches []int
			var errs []bool
			for _, c := range commits {
				batches = append(batches, c.Batches)
				errs = append(errs, c.Err != nil)
				if c.Batches > 0 && c.Err == nil {
					assert.Positive(t, c.Bytes, "bytes written to the WAL")
					assert.Positive(t, c.Sync, "fsync duration")
				}
			}
			assert.Equal(t, tt.commitBatches, batches)
			assert.Equal(t, tt.commitErr, errs)

			var flushErrs []bool
			rows := map[string]int64{}
			var files int
			var fileBytes int64
			for _, f := range flushes {
				flushErrs = append(flushErrs, f.Err != nil)
				assert.Positive(t, f.Duration)
				for _, file := range f.Files {
					rows[file.Database+"/"+file.Table] += file.Rows
					fileBytes += file.Bytes
					files++
				}
			}
			assert.Equal(t, tt.flushErr, flushErrs)
			assert.Equal(t, tt.rows, rows)
			assert.Equal(t, tt.files, files)
			assert.Equal(t, parquetBytes(t, dir), fileBytes, "reported bytes are the files' sizes")
		})
	}
}

func TestStoreGaugesForMetrics(t *testing.T) {
	s, err := Open(Options{DataDir: t.TempDir(), Logger: quiet, FlushInterval: time.Hour, MaxBufferBytes: 64 << 20})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	assert.Equal(t, int64(64<<20), s.MaxBufferBytes())

	appendBatch(t, s, "a", t0, t0)
	assert.Positive(t, s.Buffered())
	segments, bytes, err := s.WALStats()
	require.NoError(t, err)
	assert.Equal(t, 1, segments)
	assert.Positive(t, bytes)

	require.NoError(t, s.Flush())
	assert.Zero(t, s.Buffered(), "flushed")
	segments, bytes, err = s.WALStats()
	require.NoError(t, err)
	assert.Equal(t, 1, segments, "the new, empty segment")
	assert.Zero(t, bytes)
}

// parquetBytes is the total size of the Parquet files under dir.
func parquetBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, parquetExt) {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	})
	require.NoError(t, err)
	return n
}
