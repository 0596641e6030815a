package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/storagetest"
	"github.com/arc-otel/arc-otel/storage/wal"
	"github.com/arc-otel/arc-otel/storage/wal/waltest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func appendBatch(t *testing.T, s *Store, prefix string, times ...time.Time) {
	t.Helper()
	rec, payload := storagetest.LogBatch(t, prefix, times...)
	defer rec.Release()
	tbl, err := LookupTable(schema.TableLogs)
	require.NoError(t, err)
	require.NoError(t, tbl.Check(rec))
	require.NoError(t, s.Append(context.Background(), NewBatchID("default", tbl.Name, payload), "default", tbl, payload, rec))
}

func openStore(t *testing.T, dir string, fsys FS) *Store {
	t.Helper()
	s, err := Open(Options{DataDir: dir, Logger: quiet, FS: fsys, FlushInterval: time.Hour})
	require.NoError(t, err)
	return s
}

// crash stops the store the way kill -9 would: no flush, nothing closed
// cleanly, buffered rows abandoned.
func crash(s *Store) {
	s.commit.closing.Store(true)
	close(s.quit)
	s.sinks.abandon()
	s.wg.Wait()
	s.wal.Abandon()
	s.commit.abandon()
	s.flusher.abandon()
	s.lock.release()
}

// queued is how many requests wait for the next group commit.
func queued(s *Store) int { return len(s.commit.appends) }

// messages reads every Parquet file under dir/default/logs and returns the
// messages by partition directory.
func messages(t *testing.T, dir string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	root := filepath.Join(dir, "default", "logs")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".parquet") {
			return err
		}
		rows, err := parquet.ReadFile[schema.LogRecord](path)
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, r := range rows {
			out[rel] = append(out[rel], r.Message)
		}
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return out
	}
	require.NoError(t, err)
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

var t0 = time.Date(2026, 11, 22, 9, 59, 59, 0, time.UTC)

func TestAppendThenCloseWritesPartitions(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	appendBatch(t, s, "a", t0, t0.Add(time.Second), t0.Add(-48*time.Hour))
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{
		"date=2026-11-22/hour=9":  {"a-0"},
		"date=2026-11-22/hour=10": {"a-1"},
		"date=2026-11-20/hour=9":  {"a-2"},
	}, messages(t, dir))
}

func TestCrashReplaysAcknowledgedRowsOnce(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	appendBatch(t, s, "flushed", t0)
	require.NoError(t, s.Flush())
	appendBatch(t, s, "buffered", t0)
	crash(s)

	s = openStore(t, dir, nil)
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"buffered-0", "flushed-0"}}, messages(t, dir))

	// A second restart finds nothing left to replay.
	s = openStore(t, dir, nil)
	require.NoError(t, s.Close())
	assert.Len(t, messages(t, dir)["date=2026-11-22/hour=9"], 2)
}

// TestCrashInRecycledSegmentReplaysAcknowledgedRowsOnce: flushed segments'
// files are reused as new segments with their old records still in them.
// Batches of one size line those records up right behind the new ones; a
// crash must replay the new rows once and none of the old ones. The
// batches have no retry identity (as Arc writes), so dedup cannot hide an
// old record replayed.
func TestCrashInRecycledSegmentReplaysAcknowledgedRowsOnce(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	first := filepath.Join(s.wal.dir, wal.SegmentName(s.wal.Seq()))
	before, err := os.Stat(first)
	require.NoError(t, err)
	add := func(name string) {
		rec, payload := storagetest.LogBatch(t, name, t0)
		defer rec.Release()
		tbl, err := LookupTable(schema.TableLogs)
		require.NoError(t, err)
		require.NoError(t, s.Append(context.Background(), NoDedup, "default", tbl, payload, rec))
	}
	add("a")
	add("b")
	require.NoError(t, s.Flush())
	add("c")
	require.NoError(t, s.Flush())
	reused, err := os.Stat(filepath.Join(s.wal.dir, wal.SegmentName(s.wal.Seq())))
	require.NoError(t, err)
	require.True(t, os.SameFile(before, reused), "the open segment is the first one's file, recycled")
	add("d")
	crash(s)

	s = openStore(t, dir, nil)
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"a-0", "b-0", "c-0", "d-0"}}, messages(t, dir))
}

func TestTornWALTailIsTruncated(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	appendBatch(t, s, "kept", t0)
	seg := filepath.Join(s.wal.dir, wal.SegmentName(s.wal.Seq()))
	crash(s)
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte{200, 0, 0, 0, 1, 2, 3, 4, 5}) // a header promising 200 bytes, then 1
	require.NoError(t, err)
	require.NoError(t, f.Close())

	s = openStore(t, dir, nil)
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"kept-0"}}, messages(t, dir))
}

// faultFS fails chosen operations to simulate a crash in the middle of a
// flush.
type faultFS struct {
	OSFS
	mu         sync.Mutex
	failRename func(newpath string) bool
}

// errInjected is the error of every injected fault, the WAL's included.
var errInjected = waltest.ErrInjected

func (f *faultFS) Rename(oldpath, newpath string) error {
	f.mu.Lock()
	fail := f.failRename != nil && f.failRename(newpath)
	f.mu.Unlock()
	if fail {
		return errInjected
	}
	return os.Rename(oldpath, newpath)
}

// crashHalfPublished stores rows of two hours in dir and crashes their
// flush between the two partitions' renames: the first file published,
// the second still a temp file. The returned FS fails nothing more.
func crashHalfPublished(t *testing.T, dir string) *faultFS {
	t.Helper()
	fsys := &faultFS{}
	s := openStore(t, dir, fsys)
	appendBatch(t, s, "x", t0, t0.Add(time.Hour))
	renames := 0
	fsys.failRename = func(newpath string) bool {
		if !strings.HasSuffix(newpath, ".parquet") {
			return false
		}
		renames++
		return renames > 1
	}
	require.ErrorIs(t, s.Flush(), errInjected)
	crash(s)
	fsys.failRename = nil
	return fsys
}

func TestCrashDuringPublishIsFinishedOnRestart(t *testing.T) {
	dir := t.TempDir()
	fsys := crashHalfPublished(t, dir)
	s := openStore(t, dir, fsys)
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{
		"date=2026-11-22/hour=9":  {"x-0"},
		"date=2026-11-22/hour=10": {"x-1"},
	}, messages(t, dir))
}

func TestFailedPublishIsRetriedWithoutDuplicates(t *testing.T) {
	dir := t.TempDir()
	fsys := &faultFS{}
	s := openStore(t, dir, fsys)
	appendBatch(t, s, "x", t0, t0.Add(time.Hour))
	renames := 0
	fsys.failRename = func(newpath string) bool {
		if !strings.HasSuffix(newpath, ".parquet") {
			return false
		}
		renames++
		return renames == 2
	}
	require.ErrorIs(t, s.Flush(), errInjected)
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{
		"date=2026-11-22/hour=9":  {"x-0"},
		"date=2026-11-22/hour=10": {"x-1"},
	}, messages(t, dir))
}

func TestBackpressureWhenBufferIsFull(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour, MaxBufferBytes: 1})
	require.NoError(t, err)
	defer s.Close()
	rec, payload := storagetest.LogBatch(t, "x", t0)
	defer rec.Release()
	tbl, _ := LookupTable(schema.TableLogs)
	assert.ErrorIs(t, s.Append(context.Background(), NewBatchID("default", tbl.Name, payload), "default", tbl, payload, rec), ErrBackpressure)
}

// TestFullBufferWaitsForAFlush writes ten batches one after the other into
// a buffer that holds two and a flush that runs only when asked: each
// write that finds the buffer full starts a flush and waits for the room
// it makes, so all ten are stored; refusing at once (-buffer-wait 0)
// refuses some of them.
func TestFullBufferWaitsForAFlush(t *testing.T) {
	for _, tt := range []struct {
		name    string
		wait    time.Duration
		refused bool
	}{
		{name: "waits for the room a flush makes", wait: 0 /* DefaultBufferWait */},
		{name: "refuses at once when told to", wait: -1, refused: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tbl := logsTable(t)
			var recs []arrow.RecordBatch
			var payloads [][]byte
			for i := range 10 {
				rec, payload := storagetest.LogBatch(t, fmt.Sprintf("m%d", i), t0)
				defer rec.Release()
				recs, payloads = append(recs, rec), append(payloads, payload)
			}
			s, err := Open(Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour,
				MaxBufferBytes: int64(len(payloads[0])) * 5 / 2, BufferWait: tt.wait})
			require.NoError(t, err)
			var stored []string
			refused := 0
			for i := range recs {
				err := s.Append(context.Background(), NewBatchID("default", tbl.Name, payloads[i]), "default", tbl, payloads[i], recs[i])
				if errors.Is(err, ErrBackpressure) {
					refused++
					continue
				}
				require.NoError(t, err)
				stored = append(stored, fmt.Sprintf("m%d-0", i)) // LogBatch names rows <message>-<row>
			}
			waited := s.BufferWaited()
			require.NoError(t, s.Close())
			if tt.refused {
				assert.Positive(t, refused)
				assert.Zero(t, waited)
			} else {
				assert.Zero(t, refused)
				assert.Positive(t, waited, "the writes that found the buffer full waited")
			}
			var found []string
			for _, msgs := range messages(t, dir) {
				found = append(found, msgs...)
			}
			assert.ElementsMatch(t, stored, found, "every acknowledged batch is in Parquet once")
		})
	}
}

// TestWaitForRoomEnds holds the WAL's fsync, so the buffer's only request
// never commits and no flush can make room: a second request waits, and
// its wait ends with a refusal after BufferWait, when its client goes away,
// or at once when the store closes.
func TestWaitForRoomEnds(t *testing.T) {
	for _, tt := range []struct {
		name string
		wait time.Duration
		// end ends the wait (nil: the timer does); it returns Close's
		// outcome when it closes the store.
		end  func(cancel context.CancelFunc, s *Store) <-chan error
		want error
	}{
		{name: "refused after the wait", wait: 200 * time.Millisecond, want: ErrBackpressure},
		{name: "the client goes away", wait: time.Minute, want: context.Canceled,
			end: func(cancel context.CancelFunc, _ *Store) <-chan error { cancel(); return nil }},
		{name: "the store closes", wait: time.Minute, want: ErrClosed,
			end: func(_ context.CancelFunc, s *Store) <-chan error {
				closed := make(chan error, 1)
				go func() { closed <- s.Close() }()
				return closed
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fsys := &walFaults{}
			fsys.HoldSync = make(chan struct{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			start := time.Now()
			s, firstDone, secondDone := waitBehindHeldCommit(ctx, t, fsys, t.TempDir(), tt.wait)
			var closed <-chan error
			if tt.end != nil {
				closed = tt.end(cancel, s)
			}
			select {
			case err := <-secondDone:
				assert.ErrorIs(t, err, tt.want)
				if tt.end == nil {
					assert.GreaterOrEqual(t, time.Since(start), tt.wait, "it waited its whole BufferWait")
				}
				assert.Positive(t, s.BufferWaited())
				assert.Positive(t, s.commit.waits.Load(), "the wait counted for the flusher (workersNow)")
			case <-time.After(30 * time.Second):
				t.Fatal("the wait did not end")
			}
			close(fsys.HoldSync)
			assert.NoError(t, <-firstDone)
			if closed == nil {
				assert.NoError(t, s.Close())
			} else {
				assert.NoError(t, <-closed)
			}
		})
	}
}

// waitBehindHeldCommit opens a store in dir whose buffer holds one
// request, appends a first one whose commit waits for fsys.HoldSync, then
// a second (with ctx) that finds no room: it returns once that one waits,
// with the channels the two answers arrive on.
func waitBehindHeldCommit(ctx context.Context, t *testing.T, fsys *walFaults, dir string, wait time.Duration) (s *Store, firstDone, secondDone <-chan error) {
	t.Helper()
	tbl := logsTable(t)
	first, firstPayload := storagetest.LogBatch(t, "first", t0)
	t.Cleanup(first.Release)
	second, secondPayload := storagetest.LogBatch(t, "second", t0)
	t.Cleanup(second.Release)
	s, err := Open(Options{DataDir: dir, Logger: quiet, FS: fsys, FlushInterval: time.Hour,
		MaxBufferBytes: int64(len(firstPayload)) * 3 / 2, BufferWait: wait})
	require.NoError(t, err)
	appendAsync := func(ctx context.Context, rec arrow.RecordBatch, payload []byte) <-chan error {
		done := make(chan error, 1)
		go func() { done <- s.Append(ctx, NewBatchID("default", tbl.Name, payload), "default", tbl, payload, rec) }()
		return done
	}
	firstDone = appendAsync(context.Background(), first, firstPayload)
	require.Eventually(t, func() bool { return s.commit.admitted.Load() > 0 }, 10*time.Second, time.Millisecond)
	secondDone = appendAsync(ctx, second, secondPayload)
	require.Eventually(t, func() bool { return s.commit.waiting.Load() == 1 }, 10*time.Second, time.Millisecond, "the second request waits")
	return s, firstDone, secondDone
}

// TestRoomGivenBackWakesWaiters: the buffer's only request fails its
// commit, so its room comes back without a flush; the request waiting for
// that room must get in at once, not sit out its BufferWait (a minute).
func TestRoomGivenBackWakesWaiters(t *testing.T) {
	fsys := &walFaults{}
	fsys.HoldSync = make(chan struct{})
	fsys.FailSync.Store(true)
	dir := t.TempDir()
	s, firstDone, secondDone := waitBehindHeldCommit(context.Background(), t, fsys, dir, time.Minute)

	close(fsys.HoldSync) // the first commit's fsync fails: its room is free again
	require.ErrorIs(t, <-firstDone, waltest.ErrInjected)
	select {
	case err := <-secondDone:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting request was not woken when the room came back")
	}
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"second-0"}}, messages(t, dir))
}

func TestCheckName(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"default", true}, {"prod-eu_1", true}, {"", false}, {"..", false}, {"../etc", false},
		{"a/b", false}, {"/abs", false}, {".hidden", false}, {systemDirName, false}, {"%5Farcstore", true},
		{strings.Repeat("a", 255), true}, {strings.Repeat("a", 256), false},
		{"java.lang%3Atype%3DMemory", true}, {"java.lang%3atype%3dMemory", false}, {"%61bc", false}, {"a%", false}, {"a%4", false},
		{"disk%20io", true}, {"disk io", false}, {"temp%C3%A9rature", true}, {"bad%FFutf8", false}, {"nl%0A", false},
		{"a.", false}, {"a%2E", true}, {"%2E%2E", true}, {"%2E.", false}, {"traces", true},
	} {
		t.Run(fmt.Sprintf("%q", tt.name), func(t *testing.T) {
			err := CheckName("database", tt.name)
			if tt.ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrBadName)
			}
		})
	}
}

// TestRetriedBatchIsStoredOnce covers a batch made durable whose
// acknowledgement was lost: the retry, before or after a flush or a crash,
// is acknowledged without a second copy.
// TestFolderNames: every name InfluxDB takes is stored under a folder
// name that is one plain path element of RFC 3986's unreserved characters
// and percent escapes, maps back to the name, and stays as it is for a name
// that was a valid folder name before (issue 31 item 7).
func TestFolderNames(t *testing.T) {
	for _, tt := range []struct {
		name, measurement, database string
	}{
		{"cpu", "cpu", "cpu"},
		{"prod-eu_1", "prod-eu_1", "prod-eu_1"},
		{"apiserver_flowcontrol_priority_level_request_count_watermarks_bucket", "apiserver_flowcontrol_priority_level_request_count_watermarks_bucket", "apiserver_flowcontrol_priority_level_request_count_watermarks_bucket"},
		{"job:http_requests:rate5m", "job%3Ahttp_requests%3Arate5m", "job%3Ahttp_requests%3Arate5m"},
		{"java.lang:type=Memory", "java.lang%3Atype%3DMemory", "java.lang%3Atype%3DMemory"},
		{"disk io", "disk%20io", "disk%20io"},
		{"température", "temp%C3%A9rature", "temp%C3%A9rature"},
		{"telegraf.autogen", "telegraf.autogen", "telegraf.autogen"},
		{"~user", "~user", "~user"},
		{"../etc", "%2E.%2Fetc", "%2E.%2Fetc"},
		{"..", "%2E%2E", "%2E%2E"},
		{".hidden", "%2Ehidden", "%2Ehidden"},
		{"end.", "end%2E", "end%2E"},
		{"100%", "100%25", "100%25"},
		{`C:\a*?"<>|`, "C%3A%5Ca%2A%3F%22%3C%3E%7C", "C%3A%5Ca%2A%3F%22%3C%3E%7C"},
		{"traces", "%74races", "traces"},
		{"Traces", "Traces", "Traces"},
		{systemDirName, systemDirName, "%5Farcstore"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := MeasurementFolder(tt.name)
			require.NoError(t, err)
			assert.Equal(t, tt.measurement, m)
			db, err := DatabaseFolder(tt.name)
			require.NoError(t, err)
			assert.Equal(t, tt.database, db)
			for kind, f := range map[string]string{"measurement": m, "database": db} {
				back, err := NameOfFolder(f)
				require.NoError(t, err)
				assert.Equal(t, tt.name, back, "the folder maps back to the name")
				assert.NoError(t, CheckName(kind, f))
				assert.Equal(t, f, filepath.Base(f), "one path element")
			}
		})
	}
	for _, bad := range []string{"", "a\nb", "nul\x00", "bad\xffutf8", strings.Repeat("é", 43)} {
		_, err := MeasurementFolder(bad)
		assert.ErrorIs(t, err, ErrBadName, "%q", bad)
		_, err = DatabaseFolder(bad)
		assert.ErrorIs(t, err, ErrBadName, "%q", bad)
	}
	_, err := MeasurementFolder(strings.Repeat("é", 42))
	assert.NoError(t, err, "42 two-byte characters take 252 bytes escaped")
}

func TestRetriedBatchIsStoredOnce(t *testing.T) {
	dir := t.TempDir()
	tbl, err := LookupTable(schema.TableLogs)
	require.NoError(t, err)
	rec, payload := storagetest.LogBatch(t, "r", t0, t0.Add(time.Second))
	defer rec.Release()
	id := NewBatchID("default", tbl.Name, payload)
	put := func(s *Store) { require.NoError(t, s.Append(context.Background(), id, "default", tbl, payload, rec)) }

	s := openStore(t, dir, nil)
	put(s)
	put(s) // retry while still buffered
	crash(s)
	s = openStore(t, dir, nil)
	put(s) // retry after replay
	require.NoError(t, s.Flush())
	put(s) // retry after the WAL segment is gone
	crash(s)
	s = openStore(t, dir, nil)
	put(s) // retry after a restart with nothing left to replay
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"r-0"}, "date=2026-11-22/hour=10": {"r-1"}}, messages(t, dir))

	other, otherPayload := storagetest.LogBatch(t, "r", t0, t0.Add(2*time.Second))
	defer other.Release()
	assert.NotEqual(t, id, NewBatchID("default", tbl.Name, otherPayload), "different content, different id")
	assert.NotEqual(t, id, NewBatchID("other", tbl.Name, payload), "same content in another database is another batch")
}

func TestCorruptBatchIDFileDoesNotBlockStart(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	appendBatch(t, s, "a", t0)
	require.NoError(t, s.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, systemDirName, batchIDsName), []byte("torn"), 0o644))
	s = openStore(t, dir, nil)
	appendBatch(t, s, "b", t0)
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"a-0", "b-0"}}, messages(t, dir))
}

// fakeClock is a clock tests move by hand.
type fakeClock struct{ nanos atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.nanos.Store(t0.UnixNano())
	return c
}

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.nanos.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.nanos.Add(int64(d)) }

// TestDedupWindowCountsRunningTime: a sidecar that stored a batch and died
// before acknowledging it can stay down for longer than the window while
// the exporter retries; down time must not age the batch's ID. Running
// time does.
func TestDedupWindowCountsRunningTime(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	open := func() *Store {
		s, err := Open(Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour, DedupWindow: 15 * time.Minute, Clock: clock.now})
		require.NoError(t, err)
		return s
	}
	tbl := logsTable(t)
	rec, payload := storagetest.LogBatch(t, "r", t0)
	defer rec.Release()
	id := NewBatchID("default", tbl.Name, payload)
	put := func(s *Store) { require.NoError(t, s.Append(context.Background(), id, "default", tbl, payload, rec)) }

	s := open()
	clock.advance(10 * time.Minute)
	put(s)
	require.NoError(t, s.Flush()) // the ID is saved with its running time, the segment goes
	crash(s)

	clock.advance(3 * time.Hour) // down
	s = open()
	clock.advance(time.Minute)
	appendBatch(t, s, "other", t0)
	require.NoError(t, s.Flush()) // saves the IDs again: nothing expired
	put(s)
	require.NoError(t, s.Flush())
	assert.Equal(t, []string{"other-0", "r-0"}, messages(t, dir)["date=2026-11-22/hour=9"], "the retry after the outage is known")

	clock.advance(15 * time.Minute) // running: the window passes
	appendBatch(t, s, "later", t0)
	require.NoError(t, s.Flush())
	put(s)
	require.NoError(t, s.Close())
	assert.Equal(t, []string{"later-0", "other-0", "r-0", "r-0"}, messages(t, dir)["date=2026-11-22/hour=9"], "an ID older than the window in running time is forgotten")
}

// TestOldBatchIDFileIsRead: a batch ID file of the wall-clock format
// (before running time was counted) keeps its IDs for a whole window.
func TestOldBatchIDFileIsRead(t *testing.T) {
	var id BatchID
	id[0] = 7
	old := append(id[:], make([]byte, 8)...) // written at the Unix epoch
	d := newDedup(time.Minute, nil)
	require.NoError(t, d.decode(old))
	assert.True(t, d.has(id))
	d2 := newDedup(time.Minute, nil)
	require.NoError(t, d2.decode(d.encode()))
	assert.True(t, d2.has(id), "not expired by its wall-clock time")
}

// TestAppendAllSaysWhichBatchesWereCopies: a caller learns from the batch
// itself that it was acknowledged without a second copy, so it can count it
// apart from stored rows.
func TestAppendAllSaysWhichBatchesWereCopies(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	defer s.Close()
	tbl, err := LookupTable(schema.TableLogs)
	require.NoError(t, err)
	rec, payload := storagetest.LogBatch(t, "d", t0)
	defer rec.Release()
	batch := func() []Batch {
		return []Batch{{ID: NewBatchID("default", tbl.Name, payload), Database: "default", Table: tbl, IPC: payload, Rec: rec}}
	}
	first := batch()
	require.NoError(t, s.AppendAll(context.Background(), first))
	assert.False(t, first[0].Deduplicated, "the first copy is stored")
	again := batch()
	require.NoError(t, s.AppendAll(context.Background(), again))
	assert.True(t, again[0].Deduplicated, "the retry is acknowledged, not stored")
}

// TestBatchStoredBeforeTheUpgradeIsKnown: a batch an earlier version
// stored under its SHA-256 ID (LegacyBatchID), in the WAL or the batch ID
// file, is still recognised when the exporter retries it after an upgrade,
// through Batch.LegacyID, for as long as such IDs are remembered.
func TestBatchStoredBeforeTheUpgradeIsKnown(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flush bool // the old ID only in the batch ID file, not the WAL
	}{{"replayed from the wal", false}, {"read from the batch id file", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tbl := logsTable(t)
			rec, payload := storagetest.LogBatch(t, "u", t0)
			defer rec.Release()
			legacy := LegacyBatchID("default", tbl.Name, payload)
			s := openStore(t, dir, nil)
			assert.False(t, s.LegacyBatchIDs())
			require.NoError(t, s.Append(context.Background(), legacy, "default", tbl, payload, rec)) // the earlier version
			if tc.flush {
				require.NoError(t, s.Flush())
			}
			crash(s)

			s = openStore(t, dir, nil)
			require.True(t, s.LegacyBatchIDs(), "the earlier version's ID is remembered")
			retry := []Batch{{ID: NewBatchID("default", tbl.Name, payload), LegacyID: legacy, Database: "default", Table: tbl, IPC: payload, Rec: rec}}
			require.NoError(t, s.AppendAll(context.Background(), retry))
			assert.True(t, retry[0].Deduplicated, "the retry after the upgrade is acknowledged, not stored")
			require.NoError(t, s.Close())
			assert.Equal(t, []string{"u-0"}, messages(t, dir)["date=2026-11-22/hour=9"])
		})
	}
}

// TestLegacyBatchIDsAreForgottenWithTheWindow: once the earlier version's
// IDs leave the window, receivers stop computing the second ID.
func TestLegacyBatchIDsAreForgottenWithTheWindow(t *testing.T) {
	clock := newFakeClock()
	d := newDedup(time.Minute, clock.now)
	d.add(NewBatchID("default", "logs", []byte("new")))
	assert.False(t, d.hasLegacy(), "this version's IDs are not legacy")
	d.add(LegacyBatchID("default", "logs", []byte("old")))
	d.add(LegacyBatchID("default", "logs", []byte("old"))) // counted once
	assert.True(t, d.hasLegacy())
	clock.advance(30 * time.Second)
	d.encode()
	assert.True(t, d.hasLegacy(), "still within the window")
	clock.advance(time.Minute)
	d.encode()
	assert.False(t, d.hasLegacy(), "expired with the window")
	d2 := newDedup(time.Minute, clock.now)
	require.NoError(t, d2.decode(append(append([]byte(batchIDsMagic), make([]byte, 8)...), append(LegacyBatchID("d", "t", []byte("x")).bytes(), make([]byte, 8)...)...)))
	assert.True(t, d2.hasLegacy(), "legacy IDs read from the batch ID file count")
}

func (id BatchID) bytes() []byte { return id[:] }

func TestBatchIDTellsVersionsApart(t *testing.T) {
	id := NewBatchID("default", "logs", []byte("a"), []byte("b"))
	assert.False(t, id.legacy())
	assert.Equal(t, id, NewBatchID("default", "logs", []byte("ab")), "the parts are hashed as one stream")
	assert.NotEqual(t, id, NewBatchID("default", "logs", []byte("ac")))
	assert.NotEqual(t, id, NewBatchID("default", "logsa", []byte("b")), "names are delimited")
	assert.True(t, LegacyBatchID("default", "logs", []byte("ab")).legacy())
	assert.False(t, NoDedup.legacy())
}

// TestInterruptedFlushIsFinishedInAMovedDataDir crashes a flush half
// published, then opens the data directory under another path (restored
// elsewhere, mounted elsewhere, or named relative to another working
// directory): recovery must still finish the flush, not replay the WAL
// over the file already published.
func TestInterruptedFlushIsFinishedInAMovedDataDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a")
	fsys := crashHalfPublished(t, dir)
	moved := filepath.Join(root, "b")
	require.NoError(t, os.Rename(dir, moved))
	s := openStore(t, moved, fsys)
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{
		"date=2026-11-22/hour=9":  {"x-0"},
		"date=2026-11-22/hour=10": {"x-1"},
	}, messages(t, moved))
}
