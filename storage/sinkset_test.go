package storage

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/wal"
)

// sinkSetRig is a sinkSet on its own, over a WAL that storage/wal wrote:
// no Store, no Parquet, no committer.
type sinkSetRig struct {
	sys    string
	walDir string
	trims  atomic.Int32
	quit   chan struct{}
}

func newSinkSetRig(t *testing.T) *sinkSetRig {
	t.Helper()
	sys := filepath.Join(t.TempDir(), systemDirName)
	g := &sinkSetRig{sys: sys, walDir: filepath.Join(sys, walDirName), quit: make(chan struct{})}
	require.NoError(t, os.MkdirAll(g.walDir, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(sys, sinksDirName), 0o755))
	return g
}

// writeSegments writes one segment per request, each request one record
// of its batches' messages (one log row a batch), and closes them all.
func (g *sinkSetRig) writeSegments(t *testing.T, segments ...[]string) (seqs []uint64, last uint64) {
	t.Helper()
	w, err := wal.Open(wal.Options{FS: OSFS{}, Dir: g.walDir, Logger: quiet}, 1)
	require.NoError(t, err)
	for _, batches := range segments {
		payload := []byte{payloadVersion, byte(len(batches)), 0, 0, 0}
		for _, name := range batches {
			rec, ipc := logBatch(t, name, t0)
			rec.Release()
			payload = appendBatchHeader(payload, "default", "logs", NoDedup, len(ipc))
			payload = append(payload, ipc...)
		}
		w.Write(payload)
		require.NoError(t, w.Commit())
		last, err = w.Rotate()
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	seqs, err = wal.Segments(OSFS{}, g.walDir)
	require.NoError(t, err)
	return seqs, last
}

func (g *sinkSetRig) open(t *testing.T, opts Options) *sinkSet {
	t.Helper()
	opts.FS, opts.Logger, opts.Allocator, opts.Observer = OSFS{}, quiet, nil, nopObserver{}
	opts = withDefaults(opts)
	k := newSinkSet(sinkConfigOf(opts), g.sys, g.walDir, g.quit, func() error { g.trims.Add(1); return nil })
	require.NoError(t, k.load())
	return k
}

func (g *sinkSetRig) cursor(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(g.sys, sinksDirName, name+cursorExt))
	require.NoError(t, err)
	return string(data)
}

func TestSinkSetSendsClosedSegmentsAndMovesItsCursor(t *testing.T) {
	g := newSinkSetRig(t)
	seqs, last := g.writeSegments(t, []string{"a", "b"}, []string{"c"})
	sink := newFakeSink()
	k := g.open(t, Options{Sinks: []Sink{sink}})
	require.NoError(t, k.placeFresh(seqs, last))
	assert.Equal(t, "0\n", g.cursor(t, "fake"), "a new sink starts before the oldest segment present")
	assert.Equal(t, uint64(0), k.low(), "its cursor holds every segment")
	k.start()
	require.Eventually(t, func() bool { return k.lag("fake") == 0 }, 10*time.Second, 10*time.Millisecond)
	k.drain()
	k.stop()
	k.closeSinks()

	assert.Equal(t, []string{"a-0", "b-0", "c-0"}, sink.messages())
	assert.Equal(t, fmt.Sprintf("%d\n", last), g.cursor(t, "fake"))
	assert.Equal(t, last, k.low(), "the hold moved up to the last segment")
	assert.Positive(t, g.trims.Load(), "the Store is told to trim when the sink reaches the head")
	assert.Len(t, sink.writes, 2, "one token per table and segment")
	for tok := range sink.writes {
		assert.Regexp(t, fmt.Sprintf(`^arcstore-%s-[12]-default-logs-[0-9a-f]+-0$`, k.sidecarID), tok)
	}
}

func TestSinkSetRewritesASegmentWithTheSameTokens(t *testing.T) {
	g := newSinkSetRig(t)
	seqs, last := g.writeSegments(t, []string{"a", "b"})
	sink := newFakeSink()
	k := g.open(t, Options{Sinks: []Sink{sink}})
	require.NoError(t, k.placeFresh(seqs, last))
	k.start()
	require.Eventually(t, func() bool { return k.lag("fake") == 0 }, 10*time.Second, 10*time.Millisecond)
	k.abandon()
	// The cursor is lost, as a crash before its rename would lose it.
	require.NoError(t, os.WriteFile(filepath.Join(g.sys, sinksDirName, "fake"+cursorExt), []byte("0\n"), 0o644))

	k = g.open(t, Options{Sinks: []Sink{sink}})
	require.NoError(t, k.placeFresh(seqs, last))
	k.start()
	require.Eventually(t, func() bool { return k.lag("fake") == 0 }, 10*time.Second, 10*time.Millisecond)
	k.stop()
	assert.Equal(t, 1, sink.rewrites(), "the segment went again")
	assert.Len(t, sink.writes, 1, "under the same token")
	assert.Equal(t, []string{"a-0", "b-0"}, sink.messages(), "one copy in the sink")
}

func TestSinkSetWithoutSinksHoldsForADroppedOne(t *testing.T) {
	g := newSinkSetRig(t)
	seqs, last := g.writeSegments(t, []string{"a"}, []string{"b"})
	require.NoError(t, os.WriteFile(filepath.Join(g.sys, sinksDirName, "gone"+cursorExt), []byte("1\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(g.sys, sinksDirName, parquetCursor+cursorExt), []byte("2\n"), 0o644))
	k := g.open(t, Options{})
	require.NoError(t, k.placeFresh(seqs, last))
	assert.Equal(t, uint64(1), k.low(), "the held cursor holds its segments; Parquet's is not a sink's")
	assert.Equal(t, uint64(1), k.high())
	assert.Contains(t, k.heldNote(), "gone (delete "+filepath.Join(g.sys, sinksDirName, "gone"+cursorExt))
	assert.Empty(t, k.names())
	k.start()
	k.drain()
	k.stop()
	assert.Equal(t, "1\n", g.cursor(t, "gone"), "a held cursor is never moved")
	assert.Empty(t, k.sidecarID, "no sink, no id")
	assert.NoFileExists(t, filepath.Join(g.sys, sidecarIDName))

	require.NoError(t, os.Remove(filepath.Join(g.sys, sinksDirName, "gone"+cursorExt)))
	k = g.open(t, Options{})
	assert.Equal(t, uint64(math.MaxUint64), k.low(), "nothing holds the WAL once its cursor is deleted")
	assert.Empty(t, k.heldNote())
}

func TestSinkSetKeepsRefusedRowsInADeadLetterWithoutParquet(t *testing.T) {
	g := newSinkSetRig(t)
	seqs, last := g.writeSegments(t, []string{"a"})
	sink := newFakeSink()
	sink.setErr(fmt.Errorf("%w: column type changed", ErrRejected))
	k := g.open(t, Options{Sinks: []Sink{sink}, NoParquet: true})
	require.NoError(t, k.placeFresh(seqs, last))
	k.start()
	require.Eventually(t, func() bool { return k.lag("fake") == 0 }, 10*time.Second, 10*time.Millisecond)
	k.stop()
	files, err := filepath.Glob(filepath.Join(g.sys, deadLetterDirName, "fake", "*"+deadLetterExt))
	require.NoError(t, err)
	require.Len(t, files, 1)
	assert.Regexp(t, `^00000000000000000001-default-logs-[0-9a-f]+-0\.arrow$`, filepath.Base(files[0]))
}
