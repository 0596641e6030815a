package wal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// record is a payload of exactly 200 bytes, so records of two lives of a
// recycled file line up: a stale record starts right where the new ones
// end, whole, and only its checksum's binding to the segment can tell.
func record(name string) string { return fmt.Sprintf("%-200s", name) }

// recycledWAL writes five records into segment 1, has it recycled, and
// returns the WAL with segment 3 open in segment 1's old file (segment 2
// holds "x").
func recycledWAL(t *testing.T, dir string, fsys *faultFS) *WAL {
	t.Helper()
	w, err := Open(options(dir, fsys), 1)
	require.NoError(t, err)
	for i := range 5 {
		commit(t, w, record(fmt.Sprint("old", i)))
	}
	old, err := os.Stat(filepath.Join(dir, SegmentName(1)))
	require.NoError(t, err)
	_, err = w.Rotate()
	require.NoError(t, err)
	require.NoError(t, w.RemoveThrough(1))
	assert.NoFileExists(t, filepath.Join(dir, SegmentName(1)))
	commit(t, w, record("x"))
	_, err = w.Rotate()
	require.NoError(t, err)
	reused, err := os.Stat(filepath.Join(dir, SegmentName(3)))
	require.NoError(t, err)
	require.True(t, os.SameFile(old, reused), "segment 3 is segment 1's file")
	require.Equal(t, old.Size(), reused.Size(), "with its old records still in it")
	return w
}

func crash(t *testing.T, w *WAL) {
	t.Helper()
	require.NoError(t, w.Abandon())
}

func segmentSize(t *testing.T, dir string, seq uint64) int64 {
	t.Helper()
	info, err := os.Stat(filepath.Join(dir, SegmentName(seq)))
	require.NoError(t, err)
	return info.Size()
}

func TestRecycledSegmentReplaysOnlyItsOwnRecords(t *testing.T) {
	for _, tt := range []struct {
		name   string
		commit []string // into the recycled segment before the crash
		want   []string
	}{
		{name: "crash before its first commit", want: []string{record("x")}},
		{name: "crash after one commit", commit: []string{record("y")}, want: []string{record("x"), record("y")}},
		{name: "crash after as many records as it held", commit: []string{record("y0"), record("y1"), record("y2"), record("y3"), record("y4")},
			want: []string{record("x"), record("y0"), record("y1"), record("y2"), record("y3"), record("y4")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			w := recycledWAL(t, dir, &faultFS{})
			for _, p := range tt.commit {
				commit(t, w, p)
			}
			durable := w.durable
			crash(t, w)
			got, err := replayAll(t, options(dir, nil))
			require.NoError(t, err, "the old records are the last segment's tail")
			assert.Equal(t, tt.want, got)
			if len(tt.commit) > 0 {
				assert.Equal(t, durable, segmentSize(t, dir, 3), "cut after the last committed record")
			}
		})
	}
}

// ys are three records: more than the two old ones a recycled file then
// holds behind them, so it is sealed rather than cut.
var ys = []string{record("y0"), record("y1"), record("y2")}

// TestRecycledSegmentIsSealedWhenClosed: only the last segment may end in
// bytes that are not records, so rotation and Close end a recycled file's
// records with an end marker. The file keeps its size (its blocks stay
// allocated for the next life); replay reads up to the marker, and a bad
// record before it is still corruption. A file holding more old bytes
// than records is cut instead: no segment takes more than twice its
// records on disk.
func TestRecycledSegmentIsSealedWhenClosed(t *testing.T) {
	sealed := func(t *testing.T) (string, int64) {
		dir := t.TempDir()
		w := recycledWAL(t, dir, &faultFS{})
		size := segmentSize(t, dir, 3)
		commit(t, w, ys...)
		_, err := w.Rotate()
		require.NoError(t, err)
		commit(t, w, record("z"))
		require.NoError(t, w.Close())
		return dir, size
	}
	t.Run("replayed up to the marker", func(t *testing.T) {
		dir, size := sealed(t)
		assert.Equal(t, size, segmentSize(t, dir, 3), "not cut")
		got, err := replayAll(t, options(dir, nil))
		require.NoError(t, err)
		assert.Equal(t, append(append([]string{record("x")}, ys...), record("z")), got)
		assert.Equal(t, size, segmentSize(t, dir, 3), "nothing to cut")
	})
	t.Run("more old bytes than records: cut", func(t *testing.T) {
		dir := t.TempDir()
		w := recycledWAL(t, dir, &faultFS{})
		commit(t, w, record("y"))
		_, err := w.Rotate()
		require.NoError(t, err)
		assert.EqualValues(t, SegmentHeaderSize+HeaderSize+200, segmentSize(t, dir, 3))
		require.NoError(t, w.Close())
		got, err := replayAll(t, options(dir, nil))
		require.NoError(t, err)
		assert.Equal(t, []string{record("x"), record("y")}, got)
	})
	t.Run("a bad record before the marker is corruption", func(t *testing.T) {
		dir, _ := sealed(t)
		flipByte(t, filepath.Join(dir, SegmentName(3)), SegmentHeaderSize+HeaderSize+5)
		_, err := replayAll(t, options(dir, nil))
		var ce *CorruptionError
		require.ErrorAs(t, err, &ce)
		assert.EqualValues(t, 3, ce.Seq)
		assert.EqualValues(t, SegmentHeaderSize, ce.Offset)
	})
	t.Run("sealed by Close, the last segment", func(t *testing.T) {
		dir := t.TempDir()
		w := recycledWAL(t, dir, &faultFS{})
		size := segmentSize(t, dir, 3)
		commit(t, w, ys...)
		require.NoError(t, w.Close())
		got, err := replayAll(t, options(dir, nil))
		require.NoError(t, err)
		assert.Equal(t, append([]string{record("x")}, ys...), got)
		assert.Equal(t, size, segmentSize(t, dir, 3), "ends at its marker: nothing to cut")
	})
}

// TestSealedSegmentThatStaysOpen: rotation seals the segment, then cannot
// create the next one; the segment stays open and the next commit writes
// over its end marker, so no acknowledged record hides behind one.
func TestSealedSegmentThatStaysOpen(t *testing.T) {
	dir := t.TempDir()
	fsys := &faultFS{}
	w := recycledWAL(t, dir, fsys)
	commit(t, w, ys...)
	fsys.failCreate = true
	_, err := w.Rotate()
	require.ErrorIs(t, err, errInjected)
	fsys.failCreate = false
	commit(t, w, record("z"))
	crash(t, w)
	got, err := replayAll(t, options(dir, nil))
	require.NoError(t, err)
	assert.Equal(t, append(append([]string{record("x")}, ys...), record("z")), got)
}

// TestNextSegmentThatMayComeBack: the next segment's creation fails at the
// directory sync, so it is removed again. When that removal is durable the
// sealed segment stays open and takes writes over its marker; when it may
// not be, a crash could bring the next segment back behind it, so nothing
// may be written over the marker: the WAL refuses writes.
func TestNextSegmentThatMayComeBack(t *testing.T) {
	for _, tt := range []struct {
		name      string
		failSyncs int
		poisoned  bool
	}{
		{"undone durably", 1, false},
		{"undone, maybe not durably", 2, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fsys := &faultFS{}
			w := recycledWAL(t, dir, fsys)
			commit(t, w, ys...)
			fsys.failSyncDir = tt.failSyncs
			_, err := w.Rotate()
			require.ErrorIs(t, err, errInjected)
			assert.NoFileExists(t, filepath.Join(dir, SegmentName(4)))
			want := append([]string{record("x")}, ys...)
			w.Write([]byte(record("z")))
			if tt.poisoned {
				assert.ErrorIs(t, w.Commit(), ErrPoisoned)
			} else {
				require.NoError(t, w.Commit())
				want = append(want, record("z"))
			}
			crash(t, w)
			got, err := replayAll(t, options(dir, nil))
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

// TestSmuggledFrameIsNotReplayed: a client's payload can hold bytes that
// frame a record. Written into a file that is later reused, and lined up
// right behind the new records by a crash, such a frame must not replay:
// its checksum would need the new life's nonce, drawn after it was
// written. The attacker's guesses: a zero nonce, and the file's nonce of
// the life it wrote in.
func TestSmuggledFrameIsNotReplayed(t *testing.T) {
	for guess := range 2 {
		t.Run(fmt.Sprint(guess), func(t *testing.T) {
			dir := t.TempDir()
			w, err := Open(options(dir, &faultFS{}), 1)
			require.NoError(t, err)
			var frames []byte
			for _, header := range [][]byte{append(SegmentMagic[:], make([]byte, 8)...), w.header[:]} {
				frames = append(frames, FrameIn(3, header, []byte("smuggled"))...)
			}
			// Segment 1: header, a 208-byte record, then a record whose
			// payload holds the frames 4 bytes in: at offset 16+208+8+4.
			commit(t, w, record("old"), "pad:"+string(frames))
			_, err = w.Rotate()
			require.NoError(t, err)
			require.NoError(t, w.RemoveThrough(1))
			commit(t, w, record("x"))
			_, err = w.Rotate()
			require.NoError(t, err)
			require.EqualValues(t, 3, w.Seq())
			// Segment 3 is segment 1's file: one record ending where the
			// guessed frame starts.
			at := SegmentHeaderSize + HeaderSize + 200 + HeaderSize + 4 + guess*(HeaderSize+len("smuggled"))
			commit(t, w, strings.Repeat("n", at-SegmentHeaderSize-HeaderSize))
			crash(t, w)
			got, err := replayAll(t, options(dir, nil))
			require.NoError(t, err)
			assert.Len(t, got, 2, "x and the new record, nothing smuggled")
			assert.NotContains(t, got, "smuggled")
		})
	}
}

// TestBytesCountRecordsNotRecycledFiles: a sealed segment's file is larger
// than its records; removing it takes out what was counted in, no more.
func TestBytesCountRecordsNotRecycledFiles(t *testing.T) {
	dir := t.TempDir()
	w := recycledWAL(t, dir, &faultFS{})
	commit(t, w, ys...)
	_, err := w.Rotate()
	require.NoError(t, err)
	require.Greater(t, segmentSize(t, dir, 3), int64(SegmentHeaderSize+3*(HeaderSize+200)), "sealed, not cut")
	require.NoError(t, w.RemoveThrough(3))
	assert.Zero(t, w.Bytes())
	commit(t, w, ys...)
	want := w.Bytes()
	require.NoError(t, w.Close())

	// A restart counts what replay found in the segments, not their files.
	opts := options(dir, &faultFS{})
	seqs, err := Segments(opts.FS, dir)
	require.NoError(t, err)
	opts.Counted, err = Replay(opts, seqs, func(uint64, int64, []byte) error { return nil })
	require.NoError(t, err)
	w, err = Open(opts, seqs[len(seqs)-1]+1)
	require.NoError(t, err)
	assert.Equal(t, want, w.Bytes())
	require.NoError(t, w.RemoveThrough(seqs[len(seqs)-1]))
	assert.Zero(t, w.Bytes(), "counted in and out alike")
	require.NoError(t, w.Close())
}

// TestProcessDiesDuringCommitIntoRecycledSegment: the process dies after
// each write call of a group written into a recycled file. Replay keeps
// the committed records, then whichever of the group's records reached
// the file whole (never acknowledged, as after any crash before the
// fsync), and cuts the rest: the torn record and the file's old records.
func TestProcessDiesDuringCommitIntoRecycledSegment(t *testing.T) {
	group := []string{record("lost0"), record("lost1")}
	for writes := int64(1); writes <= 6; writes++ {
		t.Run(fmt.Sprint(writes), func(t *testing.T) {
			dir := t.TempDir()
			fsys := &faultFS{}
			w := recycledWAL(t, dir, fsys)
			commit(t, w, record("y"))
			fsys.WritesLeft.Store(writes)
			for _, p := range group {
				w.Write([]byte(p))
			}
			err := w.Commit()
			require.Error(t, err, "the group took more write calls than reached the disk")
			require.NoError(t, w.Close())
			got, err := replayAll(t, options(dir, nil))
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(got), 2)
			assert.Equal(t, []string{record("x"), record("y")}, got[:2])
			assert.Equal(t, group[:len(got)-2], got[2:], "whole records of the group, in order, and nothing after")
		})
	}
}

func TestRecyclingKeepsOnlyWhatItMay(t *testing.T) {
	t.Run("segments of an older format are removed", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, SegmentName(4)), Frame([]byte("v1")), 0o644))
		w, err := Open(options(dir, &faultFS{}), 5)
		require.NoError(t, err)
		require.NoError(t, w.RemoveThrough(4))
		assertNoRecycled(t, dir)
		require.NoError(t, w.Close())
	})
	t.Run("at most MaxRecycled files", func(t *testing.T) {
		dir := t.TempDir()
		w, err := Open(options(dir, &faultFS{}), 1)
		require.NoError(t, err)
		for range 4 {
			commit(t, w, "a")
			_, err = w.Rotate()
			require.NoError(t, err)
		}
		require.NoError(t, w.RemoveThrough(4))
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		assert.ElementsMatch(t, []string{recycledName(1), recycledName(2), SegmentName(5)}, names)
		require.NoError(t, w.Close())
	})
	t.Run("files kept by the last run are removed, not replayed", func(t *testing.T) {
		dir := t.TempDir()
		w, err := Open(options(dir, &faultFS{}), 1)
		require.NoError(t, err)
		commit(t, w, "a")
		_, err = w.Rotate()
		require.NoError(t, err)
		require.NoError(t, w.RemoveThrough(1))
		require.NoError(t, w.Close())
		w, err = Open(options(dir, &faultFS{}), 3)
		require.NoError(t, err)
		assertNoRecycled(t, dir)
		require.NoError(t, w.Close())
	})
	t.Run("a file system without rename-no-replace gets new files", func(t *testing.T) {
		dir := t.TempDir()
		w, err := Open(options(dir, &faultFS{noRename: true}), 1)
		require.NoError(t, err)
		commit(t, w, "a")
		_, err = w.Rotate()
		require.NoError(t, err)
		require.NoError(t, w.RemoveThrough(1))
		assertNoRecycled(t, dir)
		commit(t, w, "b")
		require.NoError(t, w.Close())
		got, err := replayAll(t, options(dir, nil))
		require.NoError(t, err)
		assert.Equal(t, []string{"b"}, got)
	})
}

func assertNoRecycled(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, isRecycled(e.Name()), e.Name())
	}
}
