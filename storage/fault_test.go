package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/storagetest"
	"github.com/arc-otel/arc-otel/storage/wal"
	"github.com/arc-otel/arc-otel/storage/wal/waltest"
)

// walFaults injects faults into the WAL segment files only.
type walFaults struct {
	OSFS
	waltest.Faults
}

func (f *walFaults) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	file, err := os.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, segmentExt) {
		return file, err
	}
	return f.Wrap(file), nil
}

// TestFailedUndoPoisonsTheWAL fails a WAL write and the truncate that
// undoes it: the segment may end in a torn record, and a write committed
// behind it would be acknowledged and then cut off by replay. Every later
// write is refused (retryably) and /ready's check fails until a restart,
// which keeps everything acknowledged before.
func TestFailedUndoPoisonsTheWAL(t *testing.T) {
	dir := t.TempDir()
	fsys := &walFaults{}
	s := openStore(t, dir, fsys)
	appendBatch(t, s, "before", t0)
	require.NoError(t, s.Writable())

	fsys.ShortWrite.Store(true)
	fsys.FailTruncate.Store(true)
	rec, payload := storagetest.LogBatch(t, "failed", t0)
	defer rec.Release()
	tbl := logsTable(t)
	require.Error(t, s.Append(context.Background(), NewBatchID("default", tbl.Name, payload), "default", tbl, payload, rec))
	fsys.FailTruncate.Store(false)

	rec2, payload2 := storagetest.LogBatch(t, "after", t0)
	defer rec2.Release()
	err := s.Append(context.Background(), NewBatchID("default", tbl.Name, payload2), "default", tbl, payload2, rec2)
	require.ErrorIs(t, err, wal.ErrPoisoned, "no write is acknowledged behind a torn record")
	assert.NotErrorIs(t, err, ErrBackpressure, "not a 429: the sidecar needs a restart, clients retry elsewhere or later")
	assert.ErrorIs(t, s.Writable(), wal.ErrPoisoned, "/ready says so")
	assert.Error(t, s.Flush(), "no rotation behind the torn record either")
	crash(s)

	s = openStore(t, dir, fsys)
	require.NoError(t, s.Writable(), "a restart clears it")
	appendBatch(t, s, "restarted", t0)
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"before-0", "restarted-0"}}, messages(t, dir))
}

// TestRequestIsStoredWholeOrNotAtAll kills the process after each write
// call of a request that takes several write calls, restarts and
// replays: the request's rows are all there or none is.
func TestRequestIsStoredWholeOrNotAtAll(t *testing.T) {
	saved := walMaxWrite
	walMaxWrite = 4 << 10
	defer func() { walMaxWrite = saved }()
	times := make([]time.Time, 8)
	for i := range times {
		times[i] = t0
	}
	cut := 0
	for writes := int64(1); ; writes++ {
		dir := t.TempDir()
		fsys := &walFaults{}
		s := openStore(t, dir, fsys)
		appendBatch(t, s, "before", t0)
		tbl := logsTable(t)
		var batches []Batch
		for _, name := range []string{"x", "y", "z"} {
			rec, payload := storagetest.LogBatch(t, name, times...)
			defer rec.Release()
			batches = append(batches, Batch{ID: NoDedup, Database: "default", Table: tbl, IPC: payload, Rec: rec})
		}
		fsys.WritesLeft.Store(writes)
		err := s.AppendAll(context.Background(), batches)
		crash(s)
		if err == nil {
			require.Greater(t, writes, int64(2), "the request took several write calls")
			break
		}
		s = openStore(t, dir, nil)
		require.NoError(t, s.Close())
		got := messages(t, dir)["date=2026-11-22/hour=9"]
		switch len(got) {
		case 1:
			cut++
			assert.Equal(t, []string{"before-0"}, got)
		case 1 + 3*len(times):
			// Written whole before the kill, not acknowledged: a retry is
			// the client's to make, and whole.
		default:
			t.Fatalf("after %d writes: %d rows of the request are stored, want 0 or %d", writes, len(got)-1, 3*len(times))
		}
	}
	assert.Positive(t, cut, "some kill landed inside the request")
}

// TestCorruptWALStopsStartUp: only the tail of the last segment may be cut
// as torn. Corruption elsewhere, or a record of a payload version this
// build does not read, stops start-up with the segment and offset, until
// the operator repairs (Options.WALRepair, arcstore -wal-repair).
func TestCorruptWALStopsStartUp(t *testing.T) {
	for _, tt := range []struct {
		name     string
		corrupt  func(t *testing.T, first, last string)
		repaired []string // what the sink gets after the repair
	}{
		{"a flipped byte in an older segment", func(t *testing.T, first, _ string) {
			data, err := os.ReadFile(first)
			require.NoError(t, err)
			data[len(data)-1] ^= 0xff // in b's record
			require.NoError(t, os.WriteFile(first, data, 0o644))
		}, []string{"a-0", "c-0"}},
		{"an unknown payload version in the last segment", func(t *testing.T, _, last string) {
			data, err := os.ReadFile(last)
			require.NoError(t, err)
			f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			seq, _ := wal.SegmentSeq(filepath.Base(last))
			_, err = f.Write(wal.FrameIn(seq, data, []byte{99, 1, 2, 3}))
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, []string{"a-0", "b-0", "c-0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour, Sinks: []Sink{newFakeSink()}}
			opts.Sinks[0].(*fakeSink).setErr(errors.New("down")) // holds the segments
			opts.SinkDrainTimeout = time.Millisecond
			s, err := Open(opts)
			require.NoError(t, err)
			first := filepath.Join(s.wal.Dir(), wal.SegmentName(s.wal.Seq()))
			appendBatch(t, s, "a", t0)
			appendBatch(t, s, "b", t0)
			require.NoError(t, s.Flush())
			appendBatch(t, s, "c", t0)
			last := filepath.Join(s.wal.Dir(), wal.SegmentName(s.wal.Seq()))
			crash(s)
			tt.corrupt(t, first, last)

			opts.Sinks = []Sink{newFakeSink()}
			_, err = Open(opts)
			var ce *wal.CorruptionError
			require.ErrorAs(t, err, &ce, "start-up stops")
			assert.Contains(t, []string{first, last}, ce.Segment)
			assert.Positive(t, ce.Offset)

			opts.WALRepair = true
			sink := newFakeSink()
			opts.Sinks = []Sink{sink}
			s, err = Open(opts)
			require.NoError(t, err, "repair truncates at the bad record")
			waitCaughtUp(t, s)
			require.NoError(t, s.Close())
			assert.Equal(t, tt.repaired, sink.messages())
			assert.Equal(t, []string{"a-0", "b-0", "c-0"}, messages(t, dir)["date=2026-11-22/hour=9"], "Parquet had a and b before")
		})
	}
}

func TestWALFaultsAreNotAcknowledged(t *testing.T) {
	for _, tt := range []struct {
		name   string
		inject func(*walFaults)
	}{
		{"short write", func(f *walFaults) { f.ShortWrite.Store(true) }},
		{"fsync failure", func(f *walFaults) { f.FailSync.Store(true) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fsys := &walFaults{}
			s := openStore(t, dir, fsys)
			tbl, err := LookupTable(schema.TableLogs)
			require.NoError(t, err)
			appendBatch(t, s, "before", t0)

			rec, payload := storagetest.LogBatch(t, "failed", t0)
			defer rec.Release()
			tt.inject(fsys)
			err = s.Append(context.Background(), NewBatchID("default", tbl.Name, payload), "default", tbl, payload, rec)
			require.ErrorIs(t, err, errInjected, "a batch whose WAL write failed is not acknowledged")

			appendBatch(t, s, "after", t0)
			crash(s) // the replay must see the cut-back segment, not a torn record
			s = openStore(t, dir, fsys)
			require.NoError(t, s.Close())
			assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"after-0", "before-0"}}, messages(t, dir))
		})
	}
}

// TestHalfWrittenTempFileIsIgnored leaves what a crash in the middle of
// writing a Parquet file leaves, a truncated temp file: it is never visible
// to readers, it is removed on start, and its rows come back from the WAL.
func TestHalfWrittenTempFileIsIgnored(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	appendBatch(t, s, "kept", t0, t0.Add(-time.Minute))
	require.NoError(t, s.Flush())
	data, err := os.ReadFile(firstParquet(t, dir))
	require.NoError(t, err)

	appendBatch(t, s, "replayed", t0)
	crash(s)
	tmp := filepath.Join(dir, systemDirName, tmpDirName, "20261122T095959Z-00000009-abcdef.parquet.tmp")
	require.NoError(t, os.WriteFile(tmp, data[:len(data)/2], 0o644))

	s = openStore(t, dir, nil)
	_, err = os.Stat(tmp)
	assert.ErrorIs(t, err, os.ErrNotExist, "temp files of unfinished flushes are removed on start")
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"kept-0", "kept-1", "replayed-0"}}, messages(t, dir))
}

func firstParquet(t *testing.T, dir string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "default", "logs", "*", "*", "*.parquet"))
	require.NoError(t, err)
	require.NotEmpty(t, m)
	return m[0]
}

// dirSyncFaults fails the next directory fsync of a chosen directory.
type dirSyncFaults struct {
	OSFS
	failDir atomic.Pointer[string]
}

func (f *dirSyncFaults) SyncDir(name string) error {
	if d := f.failDir.Load(); d != nil && *d == name && f.failDir.CompareAndSwap(d, nil) {
		return errInjected
	}
	return f.OSFS.SyncDir(name)
}

func (f *dirSyncFaults) failNext(dir string) { f.failDir.Store(&dir) }

// TestDirSyncFaults fails the directory fsync that makes a new file's name
// durable, where a flush creates one: nothing acknowledged may be lost, on
// a retry or after a crash.
func TestDirSyncFaults(t *testing.T) {
	for _, tt := range []struct {
		name string
		dir  func(root string) string
	}{
		// The intent's rename happened, its entry may not be durable: the
		// flush fails and removes its temp files, so the intent must go
		// with them or recovery would trust a plan naming files that
		// do not exist.
		{"flush intent", func(root string) string { return filepath.Join(root, systemDirName) }},
		// The temp files' names may not be durable: no intent may name
		// them, and the retry writes them again.
		{"flush temp files", func(root string) string { return filepath.Join(root, systemDirName, tmpDirName) }},
		// A new WAL segment that is not durable is removed, or every later
		// rotation would find its name taken.
		{"new wal segment", func(root string) string { return filepath.Join(root, systemDirName, walDirName) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fsys := &dirSyncFaults{}
			s := openStore(t, dir, fsys)
			appendBatch(t, s, "a", t0)
			fsys.failNext(tt.dir(dir))
			require.Error(t, s.Flush())
			_, err := os.Stat(filepath.Join(dir, systemDirName, intentName))
			assert.ErrorIs(t, err, os.ErrNotExist, "no intent outlives a failed flush")
			require.NoError(t, s.Flush(), "the next flush works")
			appendBatch(t, s, "b", t0)
			crash(s)

			s = openStore(t, dir, fsys)
			appendBatch(t, s, "c", t0)
			require.NoError(t, s.Close())
			assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"a-0", "b-0", "c-0"}}, messages(t, dir))
		})
	}
}

// TestIntentNamingMissingFilesReplaysTheWAL puts an intent whose files are
// gone next to rows that are only in the WAL: recovery must not take it as
// done and drop the segments.
func TestIntentNamingMissingFilesReplaysTheWAL(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	appendBatch(t, s, "a", t0)
	last := s.wal.Seq()
	crash(s)
	in := &flushIntent{LastSeq: last, Files: []publishStep{{
		Temp:  filepath.Join(dir, systemDirName, tmpDirName, "gone.parquet.tmp"),
		Final: filepath.Join(dir, "default", "logs", "date=2026-11-22", "hour=9", "gone.parquet"),
	}}}
	data, err := json.Marshal(in)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, systemDirName, intentName), data, 0o644))

	s = openStore(t, dir, nil)
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"a-0"}}, messages(t, dir))
}

// TestNoCompactionWhileAFlushIsHalfPublished fails a flush after its files
// are renamed into place (the partition directory's fsync), so its intent
// stays for the retry. Compaction and retention must leave the partitions
// alone until it is finished: recovery tells a published step from a lost
// one by where its files are.
func TestNoCompactionWhileAFlushIsHalfPublished(t *testing.T) {
	dir := t.TempDir()
	fsys := &dirSyncFaults{}
	s := openStore(t, dir, fsys)
	appendBatch(t, s, "a", t0)
	require.NoError(t, s.Flush())
	appendBatch(t, s, "b", t0)
	fsys.failNext(filepath.Join(dir, "default", "logs", "date=2026-11-22", "hour=9"))
	require.ErrorIs(t, s.Flush(), errInjected)

	_, err := s.Compact(context.Background(), 0)
	assert.ErrorIs(t, err, errPublishUnfinished)
	_, err = s.ApplyRetention(t0.Add(time.Hour), Retention{"*/*": time.Minute})
	assert.ErrorIs(t, err, errPublishUnfinished)
	crash(s)

	s = openStore(t, dir, fsys)
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"a-0", "b-0"}}, messages(t, dir))
}

// TestVersion2RecordsAreStillRead replays a segment of one-batch records
// (payload version 2), as builds before whole-request records wrote them.
func TestVersion2RecordsAreStillRead(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	seg := filepath.Join(s.wal.Dir(), wal.SegmentName(s.wal.Seq()))
	crash(s)
	var data []byte
	for _, name := range []string{"old", "older"} {
		rec, ipc := storagetest.LogBatch(t, name, t0)
		rec.Release()
		head := appendBatchHeader([]byte{2}, "default", "logs", NewBatchID("default", "logs", ipc), 0)
		data = append(data, wal.Frame(head[:len(head)-4], ipc)...) // version 2 has no batch length
	}
	require.NoError(t, os.WriteFile(seg, data, 0o644))

	s = openStore(t, dir, nil)
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"old-0", "older-0"}}, messages(t, dir))
}

// TestNanosecondRecordsOfEarlierBuildsReplay replays a segment that a
// build storing nanoseconds wrote (an OTLP batch and a measurement batch,
// as an upgrade after a crash finds them): the rows are stored in
// microseconds, in the partition of their own time.
func TestNanosecondRecordsOfEarlierBuildsReplay(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	seg := filepath.Join(s.wal.Dir(), wal.SegmentName(s.wal.Seq()))
	crash(s)
	logs, _ := storagetest.LogBatch(t, "old", t0)
	defer logs.Release()
	_, cpu, _ := cpuBatchAt(t, 3, false, t0)
	defer cpu.Release()
	var data []byte
	for _, b := range []struct {
		table string
		rec   arrow.RecordBatch
	}{{"logs", logs}, {"cpu", cpu}} {
		ns := schema.TimesIn(b.rec, arrow.Nanosecond)
		ipc := storagetest.IPC(t, ns)
		ns.Release()
		head := appendBatchHeader([]byte{payloadVersion, 1, 0, 0, 0}, "default", b.table, NewBatchID("default", b.table, ipc), len(ipc))
		data = append(data, wal.Frame(head, ipc)...)
	}
	require.NoError(t, os.WriteFile(seg, data, 0o644))

	s = openStore(t, dir, nil)
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"old-0"}}, messages(t, dir))
	logFiles, err := filepath.Glob(filepath.Join(dir, "default", "logs", "date=2026-11-22", "hour=9", "*.parquet"))
	require.NoError(t, err)
	require.Len(t, logFiles, 1)
	rows, err := parquet.ReadFile[schema.LogRecord](logFiles[0])
	require.NoError(t, err)
	assert.Equal(t, []int64{t0.UnixMicro(), t0.UnixMicro()}, []int64{rows[0].Time, rows[0].ObservedTime})
	type cpuRow struct {
		Time int64 `parquet:"time,timestamp(microsecond)"`
	}
	cpuFiles, err := filepath.Glob(filepath.Join(dir, "default", "cpu", "date=2026-11-22", "hour=9", "*.parquet"))
	require.NoError(t, err)
	require.Len(t, cpuFiles, 1)
	got, err := parquet.ReadFile[cpuRow](cpuFiles[0])
	require.NoError(t, err)
	assert.Equal(t, []cpuRow{{t0.UnixMicro()}, {t0.UnixMicro() + 1}, {t0.UnixMicro() + 2}}, got)
	assertMicros(t, append(logFiles, cpuFiles...)...)
}

// assertMicros checks that every timestamp column of the files is in
// microseconds.
func assertMicros(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		f, err := os.Open(p)
		require.NoError(t, err)
		info, err := f.Stat()
		require.NoError(t, err)
		pf, err := parquet.OpenFile(f, info.Size())
		require.NoError(t, err)
		n := 0
		for _, path := range pf.Schema().Columns() {
			leaf, _ := pf.Schema().Lookup(path...)
			if lt := leaf.Node.Type().LogicalType(); lt != nil && strings.HasPrefix(lt.String(), "TIMESTAMP") {
				n++
				assert.Equal(t, schema.TimestampNode().Type().String(), leaf.Node.Type().String(), "%s: %v", p, path)
			}
		}
		assert.Positive(t, n, "%s has timestamps", p)
		f.Close()
	}
}

// TestConcurrentRequestsCannotOvershootTheBuffer holds the WAL's fsync so
// that many requests are past the buffer check at once and none is in a
// generation yet: only as many as fit in -max-buffer-bytes together may be
// let in, the rest are pushed back. Before, each compared its own size with
// what was already buffered, and all of them went in.
func TestConcurrentRequestsCannotOvershootTheBuffer(t *testing.T) {
	const clients = 8
	tbl, err := LookupTable(schema.TableLogs)
	require.NoError(t, err)
	var recs []arrow.RecordBatch
	var payloads [][]byte
	for i := range clients {
		rec, payload := storagetest.LogBatch(t, fmt.Sprintf("m%d", i), t0)
		defer rec.Release()
		recs, payloads = append(recs, rec), append(payloads, payload)
	}
	fsys := &walFaults{}
	fsys.HoldSync = make(chan struct{})
	s, err := Open(Options{DataDir: t.TempDir(), Logger: quiet, FS: fsys, FlushInterval: time.Hour,
		MaxBufferBytes: int64(len(payloads[0])) * 5 / 2, BufferWait: 100 * time.Millisecond}) // no flush can make room: refused after the wait
	require.NoError(t, err)

	errs := make(chan error, clients)
	for i := range clients {
		go func() {
			errs <- s.Append(context.Background(), NewBatchID("default", tbl.Name, payloads[i]), "default", tbl, payloads[i], recs[i])
		}()
	}
	refused := 0
	for refused < clients-2 {
		select {
		case err := <-errs:
			require.ErrorIs(t, err, ErrBackpressure, "only requests over the ceiling return (after the wait) while the fsync is held")
			refused++
		case <-time.After(30 * time.Second):
			t.Fatalf("%d requests went past a ceiling that holds 2 (%d refused)", clients-refused, refused)
		}
	}
	close(fsys.HoldSync)
	for range 2 {
		assert.NoError(t, <-errs)
	}
	assert.LessOrEqual(t, s.Buffered(), s.opts.MaxBufferBytes)
	require.NoError(t, s.Close())
}

// TestGroupOfRequestsIsReplayedWhole queues several requests of two
// batches each behind an fsync that is held, so that they share the next
// group commit, then crashes and replays. The WAL writes a group's records
// only at the commit, without copying them first: every record's batch
// headers must still be what they were when its checksum was taken.
func TestGroupOfRequestsIsReplayedWhole(t *testing.T) {
	dir := t.TempDir()
	fsys := &walFaults{}
	obs := &recorder{}
	s, err := Open(Options{DataDir: dir, Logger: quiet, FS: fsys, FlushInterval: time.Hour, Observer: obs})
	require.NoError(t, err)
	tbl := logsTable(t)
	request := func(names ...string) []Batch {
		var batches []Batch
		for _, name := range names {
			rec, payload := storagetest.LogBatch(t, name, t0)
			t.Cleanup(rec.Release)
			batches = append(batches, Batch{ID: NewBatchID("default", tbl.Name, payload), Database: "default", Table: tbl, IPC: payload, Rec: rec})
		}
		return batches
	}
	fsys.HoldSync = make(chan struct{})
	errs := make(chan error, 4)
	first := request("first")
	go func() { errs <- s.AppendAll(context.Background(), first) }()
	require.Eventually(t, func() bool { return fsys.Syncs.Load() == 1 }, time.Minute, time.Millisecond, "the first commit waits in its fsync")
	for _, names := range [][]string{{"a", "b"}, {"c", "dd"}, {"eee", "f"}} {
		batches := request(names...)
		go func() { errs <- s.AppendAll(context.Background(), batches) }()
	}
	require.Eventually(t, func() bool { return len(s.commit.appends) == 3 }, time.Minute, time.Millisecond, "the other requests queue behind it")
	close(fsys.HoldSync)
	for range 4 {
		require.NoError(t, <-errs)
	}
	commits, _ := obs.seen()
	require.Len(t, commits, 2)
	assert.Equal(t, 6, commits[1].Batches, "the three requests shared one commit")
	crash(s)

	s = openStore(t, dir, nil)
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"a-0", "b-0", "c-0", "dd-0", "eee-0", "f-0", "first-0"}}, messages(t, dir))
}

// dirSyncLog records which directories were fsynced.
type dirSyncLog struct {
	OSFS
	mu     sync.Mutex
	synced map[string]bool
}

func (f *dirSyncLog) SyncDir(name string) error {
	f.mu.Lock()
	if f.synced == nil {
		f.synced = map[string]bool{}
	}
	f.synced[filepath.Clean(name)] = true
	f.mu.Unlock()
	return f.OSFS.SyncDir(name)
}

func (f *dirSyncLog) wasSynced(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.synced[filepath.Clean(name)]
}

// TestFirstWriteIsDurableInANewDataDir acknowledges a write into a data
// directory that did not exist: the WAL segment holding it is fsynced, and
// so must be the name of every folder the store created on the way to it,
// or a power loss takes the folder, and the acknowledged rows, with it.
func TestFirstWriteIsDurableInANewDataDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	fsys := &dirSyncLog{}
	s := openStore(t, dir, fsys)
	appendBatch(t, s, "a", t0)
	sys := filepath.Join(dir, systemDirName)
	wal := filepath.Join(sys, walDirName)
	for _, d := range []string{
		root, // holds data
		dir,  // holds _arcstore
		sys,  // holds wal
		wal,  // holds the segment
	} {
		assert.True(t, fsys.wasSynced(d), "the entries of %s are not fsynced before the first acknowledgement", d)
	}
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"a-0"}}, messages(t, dir))
}

// opLog records, in order, the files created, the renames' targets and
// the directories fsynced.
type opLog struct {
	OSFS
	mu  sync.Mutex
	ops []string
}

func (f *opLog) add(op string) {
	f.mu.Lock()
	f.ops = append(f.ops, op)
	f.mu.Unlock()
}

func (f *opLog) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if flag&os.O_CREATE != 0 {
		f.add("create " + name)
	}
	return f.OSFS.OpenFile(name, flag, perm)
}

func (f *opLog) Rename(oldpath, newpath string) error {
	f.add("rename " + newpath)
	return f.OSFS.Rename(oldpath, newpath)
}

func (f *opLog) SyncDir(name string) error {
	f.add("sync " + filepath.Clean(name))
	return f.OSFS.SyncDir(name)
}

// TestFlushTempFilesAreDurableBeforeItsIntent checks the order a flush
// takes: its temp files' names are durable before the intent that names
// them is. Otherwise a power loss between two renames of the publish can
// leave one file published and the other's temp file gone: recovery
// cannot finish the flush, replays the WAL, and the published file's rows
// are stored twice.
func TestFlushTempFilesAreDurableBeforeItsIntent(t *testing.T) {
	dir := t.TempDir()
	fsys := &opLog{}
	s := openStore(t, dir, fsys)
	appendBatch(t, s, "a", t0, t0.Add(time.Hour))
	fsys.mu.Lock()
	fsys.ops = nil
	fsys.mu.Unlock()
	require.NoError(t, s.Flush())
	require.NoError(t, s.Close())

	tmp := filepath.Join(dir, systemDirName, tmpDirName)
	intent := filepath.Join(dir, systemDirName, intentName)
	fsys.mu.Lock()
	ops := slices.Clone(fsys.ops)
	fsys.mu.Unlock()
	lastTemp, synced, named := -1, -1, -1
	for i, op := range ops {
		switch {
		case strings.HasPrefix(op, "create "+tmp+string(filepath.Separator)):
			lastTemp = i
		case op == "sync "+tmp:
			synced = i
		case op == "rename "+intent && named < 0:
			named = i
		}
	}
	require.Positive(t, lastTemp, "the flush wrote temp files: %v", ops)
	require.Positive(t, named, "the flush wrote its intent: %v", ops)
	assert.True(t, synced > lastTemp && synced < named, "the temp folder is fsynced after the last temp file and before the intent: %v", ops)
	assert.Equal(t, map[string][]string{
		"date=2026-11-22/hour=9":  {"a-0"},
		"date=2026-11-22/hour=10": {"a-1"},
	}, messages(t, dir))
}

// walRemoveFaults cannot remove (or recycle) WAL segment files while fail
// is set.
type walRemoveFaults struct {
	OSFS
	fail atomic.Bool
}

func (f *walRemoveFaults) Remove(name string) error {
	if f.fail.Load() && strings.HasSuffix(name, segmentExt) {
		return errInjected
	}
	return f.OSFS.Remove(name)
}

func (f *walRemoveFaults) RenameNoReplace(oldpath, newpath string) error {
	if f.fail.Load() && strings.HasSuffix(oldpath, segmentExt) {
		return errInjected
	}
	return f.OSFS.RenameNoReplace(oldpath, newpath)
}

// TestWALSegmentsThatCannotGoStopNoFlush fails the removal of the WAL
// segments a flush has put in Parquet: the flush is done all the same (its
// files published, Parquet's cursor past them), the segments stay for the
// next trim, and the flushes after it go on. Failing the flush kept its
// intent and retried only it: no later generation was flushed, so
// compaction, retention and in the end every write stopped on a file that
// could not be deleted.
func TestWALSegmentsThatCannotGoStopNoFlush(t *testing.T) {
	dir := t.TempDir()
	fsys := &walRemoveFaults{}
	s := openStore(t, dir, fsys)
	fsys.fail.Store(true)
	appendBatch(t, s, "a", t0)
	require.NoError(t, s.Flush())
	appendBatch(t, s, "b", t0)
	require.NoError(t, s.Flush())
	assert.NoError(t, s.flusher.unfinished(), "no flush is left half done")
	segments, err := wal.Segments(fsys, filepath.Join(dir, systemDirName, walDirName))
	require.NoError(t, err)
	assert.Greater(t, len(segments), 1, "the segments stay while they cannot go")

	fsys.fail.Store(false)
	appendBatch(t, s, "c", t0)
	require.NoError(t, s.Flush())
	segments, err = wal.Segments(fsys, filepath.Join(dir, systemDirName, walDirName))
	require.NoError(t, err)
	assert.Len(t, segments, 1, "the next trim removes them")
	crash(s)

	s = openStore(t, dir, fsys)
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"a-0", "b-0", "c-0"}}, messages(t, dir))
}
