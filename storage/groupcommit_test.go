package storage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/storagetest"
	"github.com/arc-otel/arc-otel/storage/wal"
)

// logRequest makes a request of one log batch per name.
func logRequest(t *testing.T, names ...string) []Batch {
	t.Helper()
	tbl := logsTable(t)
	var batches []Batch
	for _, name := range names {
		rec, payload := storagetest.LogBatch(t, name, t0)
		t.Cleanup(rec.Release)
		batches = append(batches, Batch{ID: NewBatchID("default", tbl.Name, payload), Database: "default", Table: tbl, IPC: payload, Rec: rec})
	}
	return batches
}

// syncedBatches returns the IPC streams of every batch in the part of the
// segment that the last successful fsync made durable.
func syncedBatches(t *testing.T, segment string, synced int64) [][]byte {
	data, err := os.ReadFile(segment)
	if !assert.NoError(t, err) || !assert.LessOrEqual(t, synced, int64(len(data))) {
		return nil
	}
	seq, _ := wal.SegmentSeq(filepath.Base(segment))
	var out [][]byte
	err = wal.ReadSegmentData(seq, data[:synced], func(_ int64, payload []byte) error {
		entries, err := decodePayload(payload)
		for _, e := range entries {
			out = append(out, e.ipc)
		}
		return err
	})
	assert.NoError(t, err, "a synced record is whole")
	return out
}

// TestNoRequestIsAcknowledgedBeforeItsBytesAreSynced has concurrent
// clients append requests, without any fault, and checks at every
// acknowledgement that the request's batches are in the part of the WAL
// segment that an fsync has made durable: whoever led the group commit, a
// request is answered only after the fsync that covers it.
func TestNoRequestIsAcknowledgedBeforeItsBytesAreSynced(t *testing.T) {
	const clients, requests = 8, 10
	dir := t.TempDir()
	fsys := &walFaults{}
	s := openStore(t, dir, fsys)
	segment := filepath.Join(s.wal.Dir(), wal.SegmentName(s.wal.Seq()))
	var want []string
	reqs := make([][][]Batch, clients)
	for c := range clients {
		for r := range requests {
			var names []string
			for b := range 1 + r%2 {
				names = append(names, fmt.Sprintf("c%dr%db%d", c, r, b))
			}
			reqs[c] = append(reqs[c], logRequest(t, names...))
			for _, n := range names {
				want = append(want, n+"-0")
			}
		}
	}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for _, batches := range reqs[c] {
				if !assert.NoError(t, s.AppendAll(context.Background(), batches)) {
					return
				}
				synced := syncedBatches(t, segment, fsys.Synced.Load())
				for _, b := range batches {
					assert.True(t, slices.ContainsFunc(synced, func(ipc []byte) bool { return bytes.Equal(ipc, b.IPC) }),
						"an acknowledged batch is in the synced part of the wal")
				}
			}
		})
	}
	wg.Wait()
	crash(s)

	s = openStore(t, dir, nil)
	require.NoError(t, s.Close())
	got := messages(t, dir)["date=2026-11-22/hour=9"]
	slices.Sort(got)
	slices.Sort(want)
	assert.Equal(t, want, got, "every acknowledged row once")
}

// TestFailedFsyncFailsEveryRequestOfItsGroup queues three requests behind
// a commit whose fsync is held, so that they form the next group, and
// fails that group's fsync: each of the three is refused, none is
// replayed, and the WAL takes the next request (the failed records were
// cut back, nothing poisoned it).
func TestFailedFsyncFailsEveryRequestOfItsGroup(t *testing.T) {
	dir := t.TempDir()
	fsys := &walFaults{}
	obs := &recorder{}
	s, err := Open(Options{DataDir: dir, Logger: quiet, FS: fsys, FlushInterval: time.Hour, Observer: obs})
	require.NoError(t, err)

	fsys.HoldSync = make(chan struct{})
	leader := make(chan error, 1)
	first := logRequest(t, "first")
	go func() { leader <- s.AppendAll(context.Background(), first) }()
	require.Eventually(t, func() bool { return fsys.Syncs.Load() == 1 }, time.Minute, time.Millisecond, "the first commit waits in its fsync")
	followers := make(chan error, 3)
	for _, name := range []string{"a", "b", "c"} {
		batches := logRequest(t, name)
		go func() { followers <- s.AppendAll(context.Background(), batches) }()
	}
	require.Eventually(t, func() bool { return queued(s) == 3 }, time.Minute, time.Millisecond, "the other requests queue behind it")
	fsys.FailSyncAt.Store(2)
	close(fsys.HoldSync)
	require.NoError(t, <-leader)
	for range 3 {
		assert.ErrorIs(t, <-followers, errInjected, "every request of the failed group is refused")
	}
	commits, _ := obs.seen()
	require.Len(t, commits, 2)
	assert.Equal(t, 3, commits[1].Batches, "the three requests were one group")
	assert.ErrorIs(t, commits[1].Err, errInjected)

	require.NoError(t, s.Writable(), "a failed fsync that was cut back does not poison the wal")
	require.NoError(t, s.AppendAll(context.Background(), logRequest(t, "after")))
	crash(s)

	s = openStore(t, dir, nil)
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"after-0", "first-0"}}, messages(t, dir))
}

// TestCloseWaitsForTheGroupSyncing closes the store while a group is in
// its fsync and a request is queued behind it: Close returns only after
// both are answered, and both are stored.
func TestCloseWaitsForTheGroupSyncing(t *testing.T) {
	dir := t.TempDir()
	fsys := &walFaults{}
	s := openStore(t, dir, fsys)

	fsys.HoldSync = make(chan struct{})
	errs := make(chan error, 2)
	lead := logRequest(t, "leader")
	go func() { errs <- s.AppendAll(context.Background(), lead) }()
	require.Eventually(t, func() bool { return fsys.Syncs.Load() == 1 }, time.Minute, time.Millisecond, "the first request waits in its fsync")
	follow := logRequest(t, "follower")
	go func() { errs <- s.AppendAll(context.Background(), follow) }()
	require.Eventually(t, func() bool { return queued(s) == 1 }, time.Minute, time.Millisecond, "a request queues behind it")

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	require.Eventually(t, func() bool { return !s.Ready() }, time.Minute, time.Millisecond, "close has begun")
	select {
	case err := <-closed:
		t.Fatalf("close returned (%v) while a commit was in its fsync", err)
	case err := <-errs:
		t.Fatalf("a request was answered (%v) before its fsync", err)
	default:
	}
	close(fsys.HoldSync)
	for range 2 {
		assert.NoError(t, <-errs)
	}
	require.NoError(t, <-closed)
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"follower-0", "leader-0"}}, messages(t, dir))
}
