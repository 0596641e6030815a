package storage

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/storagetest"
)

// walFaults wraps the WAL segment files to fail writes part way or fsyncs.
type walFaults struct {
	OSFS
	shortWrite atomic.Bool // the next write to a segment stores half its bytes, then fails
	failSync   atomic.Bool // the next segment fsync fails
}

type faultFile struct {
	*os.File
	fs *walFaults
}

func (f *walFaults) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	file, err := os.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, segmentExt) {
		return file, err
	}
	return &faultFile{File: file, fs: f}, nil
}

func (f *faultFile) Write(b []byte) (int, error) {
	if f.fs.shortWrite.CompareAndSwap(true, false) {
		n, _ := f.File.Write(b[:len(b)/2])
		return n, errInjected
	}
	return f.File.Write(b)
}

func (f *faultFile) Sync() error {
	if f.fs.failSync.CompareAndSwap(true, false) {
		return errInjected
	}
	return f.File.Sync()
}

func TestWALFaultsAreNotAcknowledged(t *testing.T) {
	for _, tt := range []struct {
		name   string
		inject func(*walFaults)
	}{
		{"short write", func(f *walFaults) { f.shortWrite.Store(true) }},
		{"fsync failure", func(f *walFaults) { f.failSync.Store(true) }},
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
			s.crash() // the replay must see the cut-back segment, not a torn record
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
	s.crash()
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
			s.crash()

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
	s.crash()
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
	s.crash()

	s = openStore(t, dir, fsys)
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"a-0", "b-0"}}, messages(t, dir))
}
