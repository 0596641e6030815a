package storage

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/storagetest"
)

// fakeDisk is a file system whose free space the test sets.
type fakeDisk struct {
	free atomic.Int64
	err  atomic.Pointer[error]
}

func (d *fakeDisk) read(string) (int64, error) {
	if err := d.err.Load(); err != nil {
		return 0, *err
	}
	return d.free.Load(), nil
}

const floor = 100 << 20

func openOnDisk(t *testing.T, dir string, disk *fakeDisk, with ...func(*Options)) *Store {
	t.Helper()
	disk.free.Store(10 << 30)
	opts := Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour, MinFreeDisk: floor, DiskFree: disk.read, BufferWait: 100 * time.Millisecond}
	for _, w := range with {
		w(&opts)
	}
	s, err := Open(opts)
	require.NoError(t, err)
	return s
}

// TestWritesStopAtTheDiskFloor: below -min-free-disk a write waits for a
// flush, then is refused with ErrDiskLow naming the numbers, and nothing
// of it is stored; /ready's check says the same; once space returns writes
// go through again without a restart.
func TestWritesStopAtTheDiskFloor(t *testing.T) {
	dir := t.TempDir()
	disk := &fakeDisk{}
	s := openOnDisk(t, dir, disk)
	appendBatch(t, s, "before", t0)
	require.NoError(t, s.DiskRoom())

	disk.free.Store(floor / 2)
	err := s.DiskRoom()
	require.ErrorIs(t, err, ErrDiskLow)
	assert.Contains(t, err.Error(), "50 MiB free on the file system of "+dir+", under the 100 MiB kept for flushes (-min-free-disk)")
	rec, payload := batchOf(t, "refused")
	defer rec.Release()
	start := time.Now()
	err = s.Append(context.Background(), NewBatchID("default", "logs", payload), "default", logsTable(t), payload, rec)
	require.ErrorIs(t, err, ErrDiskLow)
	assert.NotErrorIs(t, err, ErrBackpressure, "a full disk is not a client sending too fast")
	assert.Contains(t, err.Error(), "waited 100ms for a flush")
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
	assert.Positive(t, s.BufferWaited())

	// A request that would take the disk below the floor waits too.
	disk.free.Store(floor + int64(len(payload)) - 1)
	require.NoError(t, s.DiskRoom(), "nothing written, nothing under the floor")
	err = s.Append(context.Background(), NewBatchID("default", "logs", payload), "default", logsTable(t), payload, rec)
	require.ErrorIs(t, err, ErrDiskLow)

	disk.free.Store(floor + 10<<20)
	require.NoError(t, s.DiskRoom())
	appendBatch(t, s, "after", t0)
	require.NoError(t, s.Close())
	assert.ElementsMatch(t, []string{"before-0", "after-0"}, messages(t, dir)["date=2026-11-22/hour=9"], "nothing of the refused request")
}

// TestFlushDrainsBelowTheFloor: flushes are never refused: they turn the
// WAL into Parquet whatever the free space, so the floor is theirs.
func TestFlushDrainsBelowTheFloor(t *testing.T) {
	dir := t.TempDir()
	disk := &fakeDisk{}
	s := openOnDisk(t, dir, disk)
	appendBatch(t, s, "a", t0)
	appendBatch(t, s, "b", t0)
	disk.free.Store(0)
	require.NoError(t, s.Flush())
	assert.Zero(t, s.Buffered())
	assert.Equal(t, []string{"a-0", "b-0"}, messages(t, dir)["date=2026-11-22/hour=9"])
	_, walBytes, err := s.WALStats()
	require.NoError(t, err)
	assert.Zero(t, walBytes, "the WAL is trimmed")
	require.NoError(t, s.Close(), "and so is the flush at close")
}

// TestWaitingWriteGoesOnWhenSpaceReturns: a write that found the disk at
// the floor goes on as soon as space returns, not at the end of its wait,
// even when nothing announces it (retention or an operator freed space;
// the buffer is empty, so no flush runs).
func TestWaitingWriteGoesOnWhenSpaceReturns(t *testing.T) {
	dir := t.TempDir()
	disk := &fakeDisk{}
	s := openOnDisk(t, dir, disk, func(o *Options) { o.BufferWait = time.Minute })
	disk.free.Store(floor / 2)
	done := make(chan error, 1)
	go func() {
		rec, payload := batchOf(t, "waited")
		defer rec.Release()
		done <- s.Append(context.Background(), NewBatchID("default", "logs", payload), "default", logsTable(t), payload, rec)
	}()
	require.Eventually(t, func() bool { return s.commit.waiting.Load() == 1 }, 10*time.Second, time.Millisecond)
	disk.free.Store(10 << 30)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the write still waits after space returned")
	}
	require.NoError(t, s.Close())
	assert.Equal(t, []string{"waited-0"}, messages(t, dir)["date=2026-11-22/hour=9"])
}

// TestNoFloorWhereFreeSpaceCannotBeRead: a file system without statfs
// refuses nothing (the WAL's own errors still guard what is acknowledged),
// and the start says so; a negative floor turns the check off.
func TestNoFloorWhereFreeSpaceCannotBeRead(t *testing.T) {
	disk := &fakeDisk{}
	unreadable := errors.New("statfs: function not implemented")
	disk.err.Store(&unreadable)
	var logged syncBuffer
	s := openOnDisk(t, t.TempDir(), disk, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logged, nil)) })
	assert.Contains(t, logged.String(), "cannot read the free space")
	assert.NoError(t, s.DiskRoom())
	appendBatch(t, s, "a", t0)
	require.NoError(t, s.Close())

	disk = &fakeDisk{}
	s = openOnDisk(t, t.TempDir(), disk, func(o *Options) { o.MinFreeDisk = -1 })
	disk.free.Store(0)
	assert.NoError(t, s.DiskRoom())
	appendBatch(t, s, "a", t0)
	require.NoError(t, s.Close())
}

// TestCompactionWaitsForDiskSpace: a merge holds a partition twice, so
// scheduled compaction is skipped below the floor (retention, which frees
// space, still runs) and resumes once space returns.
func TestCompactionWaitsForDiskSpace(t *testing.T) {
	dir := t.TempDir()
	disk := &fakeDisk{}
	var logged syncBuffer
	s := openOnDisk(t, dir, disk)
	threeFlushes(t, s)
	require.NoError(t, s.Close())
	require.Len(t, partitionFiles(t, dir, closedHour), 3)

	s = openOnDisk(t, dir, disk, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logged, nil))
		o.CompactInterval = 10 * time.Millisecond
		disk.free.Store(floor - 1) // before the first run
	})
	require.Eventually(t, func() bool { return strings.Count(logged.String(), "compaction skipped") >= 3 }, 10*time.Second, 5*time.Millisecond)
	assert.Len(t, partitionFiles(t, dir, closedHour), 3)
	disk.free.Store(10 << 30)
	require.Eventually(t, func() bool { return len(partitionFiles(t, dir, closedHour)) == 1 }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, s.Close())
}

// syncBuffer is a log sink the store's goroutines write while the test
// reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func batchOf(t *testing.T, prefix string) (arrow.RecordBatch, []byte) {
	t.Helper()
	return storagetest.LogBatch(t, prefix, t0)
}
