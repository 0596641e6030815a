package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/storagetest"
	"github.com/arc-otel/arc-otel/storage/wal"
)

// fakeSink keeps what it is sent and, like ClickHouse's insert
// deduplication, stores a token's rows only the first time.
type fakeSink struct {
	mu     sync.Mutex
	err    error             // returned (after nothing is stored) while set
	writes map[string]int    // writes per token
	rows   map[string]string // token -> its messages, as first written
	stored []string
}

func newFakeSink() *fakeSink {
	return &fakeSink{writes: map[string]int{}, rows: map[string]string{}}
}

func (f *fakeSink) Name() string { return "fake" }
func (f *fakeSink) Close() error { return nil }

func (f *fakeSink) Write(_ context.Context, w SinkWrite) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	var msgs []string
	for _, rec := range w.Records {
		col := rec.Column(rec.Schema().FieldIndices("message")[0]).(*array.String)
		for i := range col.Len() {
			msgs = append(msgs, col.Value(i))
		}
	}
	f.writes[w.Token]++
	joined := strings.Join(msgs, ",")
	if prev, seen := f.rows[w.Token]; seen {
		if prev != joined {
			return fmt.Errorf("token %s came back with other rows: %q, was %q", w.Token, joined, prev)
		}
		return nil
	}
	f.rows[w.Token] = joined
	f.stored = append(f.stored, msgs...)
	return nil
}

func (f *fakeSink) setErr(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

func (f *fakeSink) messages() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := append([]string(nil), f.stored...)
	sort.Strings(out)
	return out
}

func (f *fakeSink) rewrites() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.writes {
		n += c - 1
	}
	return n
}

func openWithSink(t *testing.T, dir string, fsys FS, sink Sink, opts Options) *Store {
	t.Helper()
	opts.DataDir, opts.Logger, opts.FS, opts.FlushInterval = dir, quiet, fsys, time.Hour
	opts.Sinks = []Sink{sink}
	s, err := Open(opts)
	require.NoError(t, err)
	return s
}

// openWithDownSink opens dir with a sink that refuses every write, as a
// ClickHouse that is down would, and waits for it briefly on Close.
func openWithDownSink(t *testing.T, dir string, opts Options) (*Store, *fakeSink) {
	t.Helper()
	sink := newFakeSink()
	sink.setErr(fmt.Errorf("connection refused"))
	opts.SinkDrainTimeout = 50 * time.Millisecond
	return openWithSink(t, dir, nil, sink, opts), sink
}

func waitCaughtUp(t *testing.T, s *Store) {
	t.Helper()
	require.Eventually(t, func() bool { return s.SinkLag("fake") == 0 }, 10*time.Second, 10*time.Millisecond, "the sink catches up")
}

func walSize(t *testing.T, s *Store) int64 {
	t.Helper()
	_, n, err := s.WALStats()
	require.NoError(t, err)
	return n
}

func TestSinkGetsEveryAcknowledgedRowOnce(t *testing.T) {
	dir := t.TempDir()
	sink := newFakeSink()
	s := openWithSink(t, dir, nil, sink, Options{})
	appendBatch(t, s, "a", t0, t0.Add(time.Second))
	require.NoError(t, s.Flush())
	appendBatch(t, s, "b", t0)
	require.NoError(t, s.Close())

	assert.Equal(t, []string{"a-0", "a-1", "b-0"}, sink.messages())
	assert.Zero(t, sink.rewrites())
	assert.Equal(t, map[string][]string{
		"date=2026-11-22/hour=9":  {"a-0", "b-0"},
		"date=2026-11-22/hour=10": {"a-1"},
	}, messages(t, dir), "Parquet has them too")
	assert.Zero(t, walSize(t, s), "every segment both have is gone from the WAL")
}

func TestSinkOutageHoldsTheWALThenCatchesUp(t *testing.T) {
	dir := t.TempDir()
	sink := newFakeSink()
	sink.setErr(fmt.Errorf("connection refused"))
	s := openWithSink(t, dir, nil, sink, Options{MaxWALBytes: 64 << 10})
	defer s.Close()
	appendBatch(t, s, "a", t0)
	require.NoError(t, s.Flush())
	assert.Len(t, messages(t, dir)["date=2026-11-22/hour=9"], 1, "Parquet does not wait for the sink")
	held := walSize(t, s)
	assert.Positive(t, held, "the segment stays while the sink lacks it")
	assert.EqualValues(t, 1, s.SinkLag("fake"))

	// Fill the WAL to its bound: then writes are refused, retryably.
	var err error
	for i := 0; err == nil && i < 1000; i++ {
		rec, payload := logBatch(t, fmt.Sprintf("fill%d", i), t0)
		err = s.Append(context.Background(), NoDedup, "default", logsTable(t), payload, rec)
		rec.Release()
	}
	require.ErrorIs(t, err, ErrBackpressure)
	assert.Contains(t, err.Error(), "wal holds")

	sink.setErr(nil)
	require.NoError(t, s.Flush())
	waitCaughtUp(t, s)
	require.Eventually(t, func() bool { return walSize(t, s) == 0 }, 5*time.Second, 10*time.Millisecond, "the WAL is trimmed once the sink has it")
	appendBatch(t, s, "after", t0)
	require.NoError(t, s.Flush())
	waitCaughtUp(t, s)
	msgs := sink.messages()
	assert.Contains(t, msgs, "a-0")
	assert.Contains(t, msgs, "after-0")
	assert.Equal(t, len(msgs), len(uniq(msgs)), "nothing twice")
}

// TestSinkCrashRewritesWithTheSameTokens loses the sink's cursor after a
// write (as a crash between the insert and the cursor would), crashes, and
// checks the restart sends the same segment with the same tokens and rows,
// so a deduplicating destination keeps one copy.
func TestSinkCrashRewritesWithTheSameTokens(t *testing.T) {
	for _, tt := range []struct {
		name   string
		chunk  int
		tokens int
	}{{"a segment in one write", 8 << 20, 2}, {"a segment in one write per batch", 1, 3}} {
		t.Run(tt.name, func(t *testing.T) {
			saved := sinkChunkBytes
			sinkChunkBytes = tt.chunk
			defer func() { sinkChunkBytes = saved }()
			sink := testSinkCrashRewrites(t)
			assert.Len(t, sink.writes, tt.tokens, "tokens: one per table, segment and chunk")
		})
	}
}

func testSinkCrashRewrites(t *testing.T) *fakeSink {
	dir := t.TempDir()
	sink := newFakeSink()
	placed := false // the first cursor, written at start, goes through
	fsys := &faultFS{failRename: func(p string) bool {
		if !strings.HasSuffix(p, "fake"+cursorExt) {
			return false
		}
		fail := placed
		placed = true
		return fail
	}}
	s := openWithSink(t, dir, fsys, sink, Options{})
	appendBatch(t, s, "a", t0, t0.Add(time.Second))
	appendBatch(t, s, "b", t0)
	require.NoError(t, s.Flush())
	require.Eventually(t, func() bool { return len(sink.messages()) == 3 }, 5*time.Second, 10*time.Millisecond)
	assert.Positive(t, walSize(t, s), "no cursor, no trim")
	crash(s)

	s = openWithSink(t, dir, nil, sink, Options{})
	appendBatch(t, s, "c", t0)
	require.NoError(t, s.Close())
	assert.Positive(t, sink.rewrites(), "the segment went again")
	assert.Equal(t, []string{"a-0", "a-1", "b-0", "c-0"}, sink.messages(), "one copy in the sink")
	assert.Equal(t, map[string][]string{
		"date=2026-11-22/hour=9":  {"a-0", "b-0", "c-0"},
		"date=2026-11-22/hour=10": {"a-1"},
	}, messages(t, dir), "one copy in Parquet")
	assert.Zero(t, walSize(t, s))
	return sink
}

func TestSinkWithoutParquet(t *testing.T) {
	dir := t.TempDir()
	sink := newFakeSink()
	s := openWithSink(t, dir, nil, sink, Options{NoParquet: true})
	appendBatch(t, s, "a", t0)
	crash(s)
	s = openWithSink(t, dir, nil, sink, Options{NoParquet: true})
	appendBatch(t, s, "b", t0)
	require.NoError(t, s.Close())
	assert.Equal(t, []string{"a-0", "b-0"}, sink.messages())
	assert.Empty(t, messages(t, dir), "no Parquet files")
	assert.Zero(t, walSize(t, s))

	_, err := Open(Options{DataDir: t.TempDir(), Logger: quiet, NoParquet: true})
	assert.ErrorContains(t, err, "no sink", "Parquet off and no sink stores nothing")
}

func TestSinkRejectionSkipsTheRowsForThatSinkOnly(t *testing.T) {
	dir := t.TempDir()
	sink := newFakeSink()
	sink.setErr(fmt.Errorf("%w: column type changed", ErrRejected))
	s := openWithSink(t, dir, nil, sink, Options{})
	appendBatch(t, s, "a", t0)
	require.NoError(t, s.Flush())
	waitCaughtUp(t, s)
	require.NoError(t, s.Close())
	assert.Empty(t, sink.messages())
	assert.Len(t, messages(t, dir)["date=2026-11-22/hour=9"], 1, "Parquet keeps them")
	assert.Zero(t, walSize(t, s), "a refusal does not hold the WAL forever")
}

// TestRejectedRowsWithoutParquetGoToDeadLetter: with Parquet off the sink
// is the only storage, so rows it refuses for good must not vanish with
// their WAL segment: they are kept, counted, in the dead-letter directory.
func TestRejectedRowsWithoutParquetGoToDeadLetter(t *testing.T) {
	dir := t.TempDir()
	sink := newFakeSink()
	sink.setErr(fmt.Errorf("%w: column type changed", ErrRejected))
	obs := &recorder{}
	s := openWithSink(t, dir, nil, sink, Options{NoParquet: true, Observer: obs})
	appendBatch(t, s, "a", t0, t0.Add(time.Second))
	require.NoError(t, s.Flush())
	waitCaughtUp(t, s)
	require.NoError(t, s.Close())
	assert.Zero(t, walSize(t, s), "the refusal does not hold the WAL")

	files, err := filepath.Glob(filepath.Join(dir, systemDirName, deadLetterDirName, "fake", "*"+deadLetterExt))
	require.NoError(t, err)
	require.Len(t, files, 1)
	f, err := os.Open(files[0])
	require.NoError(t, err)
	defer f.Close()
	rd, err := ipc.NewReader(f)
	require.NoError(t, err)
	defer rd.Release()
	var msgs []string
	for rd.Next() {
		col := rd.RecordBatch().Column(rd.RecordBatch().Schema().FieldIndices("message")[0]).(*array.String)
		for i := range col.Len() {
			msgs = append(msgs, col.Value(i))
		}
	}
	require.NoError(t, rd.Err())
	assert.Equal(t, []string{"a-0", "a-1"}, msgs, "every refused row is in the file")

	obs.mu.Lock()
	defer obs.mu.Unlock()
	var counted int64
	for _, w := range obs.sinks {
		if w.DeadLetter != "" {
			counted += w.Rows
			assert.Equal(t, files[0], w.DeadLetter)
		}
	}
	assert.EqualValues(t, 2, counted, "the observer (arcstore_sink_dead_letter_rows_total) counts them")
}

func uniq(in []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range in {
		m[s] = true
	}
	return m
}

func TestSidecarIDIsStable(t *testing.T) {
	dir := t.TempDir()
	s := openWithSink(t, dir, nil, newFakeSink(), Options{})
	id := s.sinks.sidecarID
	require.NoError(t, s.Close())
	s = openWithSink(t, dir, nil, newFakeSink(), Options{})
	defer s.Close()
	assert.Equal(t, id, s.sinks.sidecarID)
	assert.Len(t, id, 16)
	assert.FileExists(t, filepath.Join(dir, systemDirName, sidecarIDName))
}

func logBatch(t *testing.T, prefix string, times ...time.Time) (arrow.RecordBatch, []byte) {
	return storagetest.LogBatch(t, prefix, times...)
}

func logsTable(t *testing.T) *Table {
	tbl, err := LookupTable(schema.TableLogs)
	require.NoError(t, err)
	return tbl
}

// TestRestartWithoutTheSinkKeepsItsRows leaves segments in the WAL for a
// sink that is down, then opens the directory without the sink (a sidecar
// restarted without -clickhouse-addr, or `arcstore compact`): the rows
// already in Parquet are not written again, the segments stay for the
// sink, and it gets every row once it is back.
func TestRestartWithoutTheSinkKeepsItsRows(t *testing.T) {
	dir := t.TempDir()
	s, sink := openWithDownSink(t, dir, Options{})
	appendBatch(t, s, "a", t0)
	require.NoError(t, s.Flush())
	require.Positive(t, walSize(t, s), "held for the sink")
	start := time.Now()
	require.NoError(t, s.Close())
	assert.Less(t, time.Since(start), 5*time.Second, "closing waits for a sink that is down only SinkDrainTimeout")

	s = openStore(t, dir, nil)
	appendBatch(t, s, "b", t0)
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"a-0", "b-0"}}, messages(t, dir), "each row once in Parquet")
	assert.Positive(t, walSize(t, s), "the absent sink's segments stay")

	sink.setErr(nil)
	s = openWithSink(t, dir, nil, sink, Options{})
	waitCaughtUp(t, s)
	require.NoError(t, s.Close())
	assert.Equal(t, []string{"a-0", "b-0"}, sink.messages(), "the sink gets what it missed")
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"a-0", "b-0"}}, messages(t, dir), "still once in Parquet")
	assert.Zero(t, walSize(t, s))
}

// TestDeletingACursorReleasesTheSegments checks the way out the start-up
// warning names: without the cursor file nobody waits for the segments.
func TestDeletingACursorReleasesTheSegments(t *testing.T) {
	dir := t.TempDir()
	s, _ := openWithDownSink(t, dir, Options{})
	appendBatch(t, s, "a", t0)
	require.NoError(t, s.Close())
	require.Positive(t, walSize(t, s))

	require.NoError(t, os.Remove(filepath.Join(dir, systemDirName, sinksDirName, "fake"+cursorExt)))
	s = openStore(t, dir, nil)
	require.NoError(t, s.Close())
	assert.Zero(t, walSize(t, s), "released")
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"a-0"}}, messages(t, dir))
}

// TestSinkAddedToAnOldDirectoryStartsAtItsWAL adds a sink to a directory
// whose WAL is far along: it starts at the oldest segment present instead
// of walking every number since the first.
func TestSinkAddedToAnOldDirectoryStartsAtItsWAL(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	for i := range 5 {
		appendBatch(t, s, fmt.Sprintf("old%d", i), t0)
		require.NoError(t, s.Flush())
	}
	require.NoError(t, s.Close())

	sink := newFakeSink()
	s = openWithSink(t, dir, nil, sink, Options{})
	assert.Positive(t, s.sinks.runners[0].done.Load(), "starts at the oldest segment present, not at the first ever")
	waitCaughtUp(t, s)
	appendBatch(t, s, "new", t0)
	require.NoError(t, s.Close())
	assert.Equal(t, []string{"new-0"}, sink.messages(), "rows from before the sink are in Parquet only")
}

// TestParquetOffAndOnAgain turns Parquet off on a directory whose Parquet
// is behind, then on again. Off, the sinks are the storage: they get every
// row, and the WAL is not kept for a Parquet that may never come back. On
// again, Parquet starts with new rows; nothing reaches the sink twice.
func TestParquetOffAndOnAgain(t *testing.T) {
	dir := t.TempDir()
	sink := newFakeSink()
	s := openWithSink(t, dir, nil, sink, Options{})
	appendBatch(t, s, "a", t0)
	crash(s) // "a" is in the WAL only

	s = openWithSink(t, dir, nil, sink, Options{NoParquet: true})
	appendBatch(t, s, "b", t0)
	require.NoError(t, s.Close())
	assert.Equal(t, []string{"a-0", "b-0"}, sink.messages(), "every acknowledged row in the sink")
	assert.Empty(t, messages(t, dir))
	assert.Zero(t, walSize(t, s), "nothing kept for Parquet while it is off")

	s = openWithSink(t, dir, nil, sink, Options{})
	appendBatch(t, s, "c", t0)
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"c-0"}}, messages(t, dir))
	assert.Equal(t, []string{"a-0", "b-0", "c-0"}, sink.messages(), "no second copy in the sink")
	assert.Zero(t, walSize(t, s))
}

// TestParquetOpenOfASinkOnlyDirectory opens a directory that had only a
// sink with Parquet on, as `arcstore compact` does, while the sink lags:
// the sink's rows do not turn into Parquet files, and the sidecar started
// again with Parquet off is not held back by a Parquet cursor.
func TestParquetOpenOfASinkOnlyDirectory(t *testing.T) {
	dir := t.TempDir()
	s, sink := openWithDownSink(t, dir, Options{NoParquet: true})
	appendBatch(t, s, "a", t0)
	require.NoError(t, s.Close())

	s = openStore(t, dir, nil)
	require.NoError(t, s.Flush())
	require.NoError(t, s.Close())
	assert.Empty(t, messages(t, dir), "the sink's rows are not Parquet's")
	assert.Positive(t, walSize(t, s), "still held for the sink")

	sink.setErr(nil)
	s = openWithSink(t, dir, nil, sink, Options{NoParquet: true})
	appendBatch(t, s, "b", t0)
	require.NoError(t, s.Close())
	assert.Equal(t, []string{"a-0", "b-0"}, sink.messages())
	assert.Zero(t, walSize(t, s), "no Parquet cursor holds the WAL")
	assert.Empty(t, messages(t, dir))
}

// idWatchFS checks, each time a WAL segment is removed, that the batch ID
// of every batch in it is in the batch ID file on disk: a retry of a batch
// whose segment is gone must still be known after a crash.
type idWatchFS struct {
	OSFS
	mu      sync.Mutex
	checked int
	missing int
}

func (f *idWatchFS) Remove(name string) error {
	f.check(name)
	return f.OSFS.Remove(name)
}

// RenameNoReplace is how a segment goes when the WAL keeps its file.
func (f *idWatchFS) RenameNoReplace(oldpath, newpath string) error {
	f.check(oldpath)
	return f.OSFS.RenameNoReplace(oldpath, newpath)
}

func (f *idWatchFS) check(name string) {
	if strings.HasSuffix(name, segmentExt) {
		f.mu.Lock()
		d := newDedup(time.Hour, nil)
		if data, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(name)), batchIDsName)); err == nil {
			_ = d.decode(data)
		}
		seq, _ := wal.SegmentSeq(filepath.Base(name))
		_ = wal.ReadSegment(f, filepath.Dir(name), seq, func(_ int64, payload []byte) error {
			entries, err := decodePayload(payload)
			for _, e := range entries {
				f.checked++
				if !d.has(e.id) {
					f.missing++
				}
			}
			return err
		})
		f.mu.Unlock()
	}
}

func TestBatchIDsAreSavedBeforeTheirSegmentGoes(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts Options
		sink bool
	}{
		{"parquet", Options{}, false},
		{"parquet and a sink", Options{}, true},
		{"a sink only", Options{NoParquet: true}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fsys := &idWatchFS{}
			opts := tt.opts
			opts.DataDir, opts.Logger, opts.FS, opts.FlushInterval = t.TempDir(), quiet, fsys, time.Hour
			if tt.sink {
				opts.Sinks = []Sink{newFakeSink()}
			}
			s, err := Open(opts)
			require.NoError(t, err)
			tbl := logsTable(t)
			for i := range 3 {
				rec, payload := logBatch(t, fmt.Sprintf("b%d", i), t0)
				id := NewBatchID("default", tbl.Name, payload)
				require.NoError(t, s.Append(context.Background(), id, "default", tbl, payload, rec))
				rec.Release()
				require.NoError(t, s.Flush())
				if tt.sink {
					waitCaughtUp(t, s)
				}
			}
			require.NoError(t, s.Close())
			fsys.mu.Lock()
			defer fsys.mu.Unlock()
			assert.Positive(t, fsys.checked, "segments with batches were removed")
			assert.Zero(t, fsys.missing, "no segment left before its batch ids were saved")
		})
	}
}

// emptyWALProbe appends, from inside the WAL directory's fsync that
// follows a trim, once the WAL directory holds no bytes: what a client
// sending right after a sink caught up does.
type emptyWALProbe struct {
	OSFS
	armed atomic.Bool
	try   func() error
	err   chan error
}

func (f *emptyWALProbe) SyncDir(name string) error {
	if filepath.Base(name) == walDirName && f.armed.Load() {
		var size int64
		entries, _ := os.ReadDir(name)
		for _, e := range entries {
			if info, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), segmentExt) {
				size += info.Size()
			}
		}
		if size == 0 && f.armed.CompareAndSwap(true, false) {
			f.err <- f.try()
		}
	}
	return f.OSFS.SyncDir(name)
}

// TestWALRoomIsThereOnceItsSegmentsAreGone is the deterministic form of a
// flake of TestSinkOutageHoldsTheWALThenCatchesUp: right after the sink
// caught up and the WAL emptied, a write was refused because "the wal
// holds N bytes": the bytes were counted out only after the directory's
// fsync that follows the removal.
func TestWALRoomIsThereOnceItsSegmentsAreGone(t *testing.T) {
	dir := t.TempDir()
	sink := newFakeSink()
	sink.setErr(fmt.Errorf("connection refused"))
	fsys := &emptyWALProbe{err: make(chan error, 1)}
	s := openWithSink(t, dir, fsys, sink, Options{MaxWALBytes: 64 << 10})
	defer s.Close()
	var err error
	for i := 0; err == nil && i < 1000; i++ {
		rec, payload := logBatch(t, fmt.Sprintf("fill%d", i), t0)
		err = s.Append(context.Background(), NoDedup, "default", logsTable(t), payload, rec)
		rec.Release()
	}
	require.ErrorIs(t, err, ErrBackpressure)
	rec, payload := logBatch(t, "after", t0)
	defer rec.Release()
	fsys.try = func() error {
		return s.Append(context.Background(), NoDedup, "default", logsTable(t), payload, rec)
	}
	require.NoError(t, s.Flush())
	fsys.armed.Store(true)
	sink.setErr(nil)
	s.sinks.wake()
	select {
	case err := <-fsys.err:
		assert.NoError(t, err, "the WAL is empty on disk: a write fits")
	case <-time.After(10 * time.Second):
		t.Fatal("the sink never emptied the WAL")
	}
}

// TestSinkTokensOfOneTableWithTwoSchemaFrames stores, in one WAL segment,
// logs from an exporter of this build and from one of an earlier build
// (its stream's schema frame has nanosecond times, kept in the WAL as
// sent): a rolling upgrade. The segment's two groups of the one table must
// reach the sink under two tokens; under one, a destination that
// deduplicates by token (ClickHouse) keeps only the first.
func TestSinkTokensOfOneTableWithTwoSchemaFrames(t *testing.T) {
	dir := t.TempDir()
	sink := newFakeSink()
	s := openWithSink(t, dir, nil, sink, Options{SinkDrainTimeout: time.Second})
	tbl := logsTable(t)
	appendBatch(t, s, "new", t0)
	rec, _ := logBatch(t, "old", t0)
	defer rec.Release()
	ns := schema.TimesIn(rec, arrow.Nanosecond)
	defer ns.Release()
	ipc := storagetest.IPC(t, ns)
	require.NoError(t, s.Append(context.Background(), NewBatchID("default", tbl.Name, ipc), "default", tbl, ipc, rec))
	appendBatch(t, s, "new2", t0)
	require.NoError(t, s.Close())

	assert.Equal(t, []string{"new-0", "new2-0", "old-0"}, sink.messages())
	sink.mu.Lock()
	defer sink.mu.Unlock()
	assert.Len(t, sink.writes, 2, "two tokens: %v", sink.writes)
}
