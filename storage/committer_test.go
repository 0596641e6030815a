package storage

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/wal"
)

// committerRig is a committer on its own, writing a real WAL: no Store,
// no flush loop, no sink loop (the sinkSet has no sink; the test reads
// what it is told).
type committerRig struct {
	c    *committer
	dir  string
	quit chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

func newCommitterRig(t *testing.T, opts Options) *committerRig {
	t.Helper()
	dir := t.TempDir()
	opts.DataDir, opts.Logger = dir, quiet
	opts = withDefaults(opts)
	g := &committerRig{dir: filepath.Join(dir, systemDirName, walDirName), quit: make(chan struct{})}
	require.NoError(t, os.MkdirAll(g.dir, 0o755))
	w, err := wal.Open(wal.Options{FS: OSFS{}, Dir: g.dir, Logger: quiet}, 1)
	require.NoError(t, err)
	sys := filepath.Join(dir, systemDirName)
	sinks := newSinkSet(sinkConfigOf(opts), sys, g.dir, g.quit, func() error { return nil })
	g.c = newCommitter(committerConfigOf(opts), &walState{WAL: w, dir: g.dir}, newDedup(opts.DedupWindow, opts.Clock), sinks, g.quit)
	g.c.flusher = newFlusher(flusherConfigOf(opts), sys, g.c.rotates, g.quit)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.c.commitLoop()
	}()
	t.Cleanup(func() {
		g.stop()
		w.Close()
	})
	return g
}

// stop ends the committer's goroutine the way a crash would.
func (g *committerRig) stop() {
	g.once.Do(func() {
		close(g.quit)
		g.wg.Wait()
		g.c.abandon()
	})
}

func (g *committerRig) append(t *testing.T, batches []Batch) error {
	t.Helper()
	var size int64
	for _, b := range batches {
		size += int64(len(b.IPC))
	}
	full, err := g.c.appendAll(context.Background(), batches, size)
	require.NoError(t, full)
	return err
}

func (g *committerRig) rotate(t *testing.T) *generation {
	t.Helper()
	reply := make(chan *generation, 1)
	g.c.rotates <- reply
	gen := <-reply
	require.NotNil(t, gen)
	return gen
}

// batchIDsIn returns the batch IDs of every record of a closed segment,
// one slice per record.
func (g *committerRig) batchIDsIn(t *testing.T, seq uint64) [][]BatchID {
	t.Helper()
	var out [][]BatchID
	require.NoError(t, wal.ReadSegment(OSFS{}, g.dir, seq, func(_ int64, payload []byte) error {
		entries, err := decodePayload(payload)
		var ids []BatchID
		for _, e := range entries {
			ids = append(ids, e.id)
		}
		out = append(out, ids)
		return err
	}))
	return out
}

func TestCommitterWritesARequestAsOneRecordAndBuffersIt(t *testing.T) {
	g := newCommitterRig(t, Options{})
	req := logRequest(t, "a", "b", "c")
	require.NoError(t, g.append(t, req))
	assert.Positive(t, g.c.buffered.Load(), "committed rows wait for a flush")
	assert.Zero(t, g.c.admitted.Load(), "admission is given back once answered")

	again := logRequest(t, "a")
	require.NoError(t, g.append(t, again))
	assert.True(t, again[0].Deduplicated, "a stored batch is acknowledged without a copy")

	gen := g.rotate(t)
	defer gen.release()
	assert.Equal(t, uint64(1), gen.lastSeq, "the generation ends with the segment rotated out")
	assert.EqualValues(t, 3, gen.rows)
	assert.Equal(t, uint64(1), g.c.sinks.closed(), "the sinks are told the segment is closed")
	assert.Equal(t, [][]BatchID{{req[0].ID, req[1].ID, req[2].ID}}, g.batchIDsIn(t, 1), "one record of the request's three batches, no copy")
}

func TestCommitterRefusesPastTheBufferAndTheWALBound(t *testing.T) {
	g := newCommitterRig(t, Options{MaxBufferBytes: 1})
	req := logRequest(t, "a")
	full, err := g.c.appendAll(context.Background(), req, int64(len(req[0].IPC)))
	require.NoError(t, err)
	assert.ErrorIs(t, full, ErrBackpressure, "the buffer's ceiling")
	assert.Zero(t, g.c.admitted.Load())
	select {
	case <-g.c.flusher.trigger:
	default:
		t.Fatal("a refusal asks for a flush")
	}

	g = newCommitterRig(t, Options{MaxWALBytes: 1})
	req = logRequest(t, "a")
	err = g.append(t, req)
	assert.ErrorIs(t, err, ErrBackpressure, "the WAL's bound")
	assert.ErrorContains(t, err, "not yet in every sink")
}

func TestCommitterAbandonReleasesItsGeneration(t *testing.T) {
	g := newCommitterRig(t, Options{})
	require.NoError(t, g.append(t, logRequest(t, "a")))
	g.stop()
	assert.Nil(t, g.c.gen.parts, "the records' memory is given back")
	info, err := os.Stat(filepath.Join(g.dir, wal.SegmentName(1)))
	require.NoError(t, err, "what was acknowledged stays in the WAL")
	assert.Positive(t, info.Size())
}
