package wal

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/arc-otel/arc-otel/storage/wal/waltest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var errInjected = waltest.ErrInjected

// faultFS is the real file system with faults injected into segment files.
type faultFS struct {
	waltest.Faults
	onRemove    func(name string)
	onSyncDir   func(name string)
	noRename    bool // a file system without renameat2 RENAME_NOREPLACE
	failCreate  bool // creating a file fails
	failSyncDir int  // this many directory syncs fail next
}

func (f *faultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if f.failCreate && flag&os.O_CREATE != 0 {
		return nil, errInjected
	}
	file, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f.Wrap(file), nil
}

func (f *faultFS) Remove(name string) error {
	err := os.Remove(name)
	if f.onRemove != nil {
		f.onRemove(name)
	}
	return err
}
func (f *faultFS) ReadDir(name string) ([]os.DirEntry, error) { return os.ReadDir(name) }

func (f *faultFS) RenameNoReplace(oldpath, newpath string) error {
	if f.noRename {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: syscall.EINVAL}
	}
	if err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}
func (f *faultFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }
func (f *faultFS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

func (f *faultFS) SyncDir(name string) error {
	if f.onSyncDir != nil {
		f.onSyncDir(name)
	}
	if f.failSyncDir > 0 {
		f.failSyncDir--
		return errInjected
	}
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func options(dir string, fsys FS) Options {
	return Options{FS: fsys, Dir: dir, Logger: quiet, MaxWrite: 64}
}

// replayAll replays dir as a restart would and returns the payloads.
func replayAll(t *testing.T, opts Options) ([]string, error) {
	t.Helper()
	opts.FS = &faultFS{}
	seqs, err := Segments(opts.FS, opts.Dir)
	require.NoError(t, err)
	var got []string
	_, err = Replay(opts, seqs, func(_ uint64, _ int64, p []byte) error {
		if bytes.HasPrefix(p, []byte("bad")) {
			return fmt.Errorf("%w: payload version", ErrCorrupt)
		}
		got = append(got, string(p))
		return nil
	})
	return got, err
}

func commit(t *testing.T, w *WAL, payloads ...string) {
	t.Helper()
	for _, p := range payloads {
		w.Write([]byte(p))
	}
	require.NoError(t, w.Commit())
}

func big(name string) string { return name + ":" + string(bytes.Repeat([]byte{'x'}, 500)) }

func TestFailedCommitIsCutBack(t *testing.T) {
	dir := t.TempDir()
	fsys := &faultFS{}
	w, err := Open(options(dir, fsys), 1)
	require.NoError(t, err)
	commit(t, w, "a")
	fsys.ShortWrite.Store(true)
	w.Write([]byte(big("lost")))
	require.ErrorIs(t, w.Commit(), errInjected)
	assert.NoError(t, w.Err(), "a cut-back failure does not poison")
	commit(t, w, "b")
	require.NoError(t, w.Close())
	got, err := replayAll(t, options(dir, nil))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, got)
}

// TestFailedCutBackPoisons: a failed write whose undo fails too leaves a
// torn record; a record committed behind it would be acknowledged and then
// cut off by replay. Every later write must be refused until reopening.
func TestFailedCutBackPoisons(t *testing.T) {
	dir := t.TempDir()
	fsys := &faultFS{}
	w, err := Open(options(dir, fsys), 1)
	require.NoError(t, err)
	commit(t, w, "a")
	fsys.ShortWrite.Store(true)
	fsys.FailTruncate.Store(true)
	w.Write([]byte(big("torn")))
	require.ErrorIs(t, w.Commit(), ErrPoisoned)
	fsys.FailTruncate.Store(false)

	w.Write([]byte("b"))
	assert.ErrorIs(t, w.Commit(), ErrPoisoned, "no write is acknowledged behind a torn record")
	assert.ErrorIs(t, w.Err(), ErrPoisoned)
	_, err = w.Rotate()
	assert.ErrorIs(t, err, ErrPoisoned, "the torn segment stays the last one")
	require.NoError(t, w.Close())

	got, err := replayAll(t, options(dir, nil))
	require.NoError(t, err, "the torn record is the tail of the last segment")
	assert.Equal(t, []string{"a"}, got)
	w, err = Open(options(dir, &faultFS{}), 2)
	require.NoError(t, err)
	commit(t, w, "c")
	assert.NoError(t, w.Err(), "reopening clears it")
	require.NoError(t, w.Close())
}

// TestRecordSpanningWritesIsAtomic kills the process after each write
// call of a group whose record takes several write calls: replay
// keeps only whole records, and the request's record whole or not at all.
func TestRecordSpanningWritesIsAtomic(t *testing.T) {
	request := big("request") + big("its second batch")
	cutMidRecord := 0
	for writes := int64(1); ; writes++ {
		dir := t.TempDir()
		fsys := &faultFS{}
		w, err := Open(options(dir, fsys), 1)
		require.NoError(t, err)
		commit(t, w, "a")
		fsys.WritesLeft.Store(writes)
		w.Write([]byte("b"))
		w.Write([]byte(big("request")), []byte(big("its second batch")))
		err = w.Commit()
		require.NoError(t, w.Close())
		if err == nil {
			require.Greater(t, writes, int64(2), "the group took several write calls")
			break
		}
		info, serr := os.Stat(filepath.Join(dir, SegmentName(1)))
		require.NoError(t, serr)
		if whole := int64(3*HeaderSize + 2 + len(request)); info.Size() > 2*(HeaderSize+1) && info.Size() < whole {
			cutMidRecord++
		}
		got, err := replayAll(t, options(dir, nil))
		require.NoError(t, err, "dies after %d writes", writes)
		for _, p := range got {
			assert.Contains(t, []string{"a", "b", request}, p, "only whole records (dies after %d writes)", writes)
		}
	}
	assert.Positive(t, cutMidRecord, "some kill landed inside the request's record")
}

func TestReplayCorruption(t *testing.T) {
	for _, tt := range []struct {
		name    string
		corrupt func(t *testing.T, dir string) // the WAL holds segments 1 (a, b, c) and 2 (d, e, f)
		seq     uint64
		offset  int64
		want    []string // replayed with Repair (or without, when no error)
	}{
		{
			name: "torn tail of the last segment",
			corrupt: func(t *testing.T, dir string) {
				appendTo(t, filepath.Join(dir, SegmentName(2)), []byte{200, 0, 0, 0, 1, 2, 3})
			},
			want: []string{"a", "b", "c", "d", "e", "f"},
		},
		{
			name: "checksum in the middle of an older segment",
			corrupt: func(t *testing.T, dir string) {
				flipByte(t, filepath.Join(dir, SegmentName(1)), SegmentHeaderSize+HeaderSize+1+HeaderSize)
			},
			seq: 1, offset: SegmentHeaderSize + HeaderSize + 1,
			want: []string{"a", "c", "d", "e", "f"},
		},
		{
			name:    "torn tail of an older segment",
			corrupt: func(t *testing.T, dir string) { appendTo(t, filepath.Join(dir, SegmentName(1)), []byte{9, 0}) },
			seq:     1, offset: SegmentHeaderSize + 3*(HeaderSize+1),
			want: []string{"a", "b", "c", "d", "e", "f"},
		},
		{
			name: "a payload its reader refuses, in the last segment",
			corrupt: func(t *testing.T, dir string) {
				path := filepath.Join(dir, SegmentName(2))
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				appendTo(t, path, FrameIn(2, data, []byte("bad version")))
			},
			seq: 2, offset: SegmentHeaderSize + 3*(HeaderSize+1),
			want: []string{"a", "b", "c", "d", "e", "f"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			w, err := Open(options(dir, &faultFS{}), 1)
			require.NoError(t, err)
			commit(t, w, "a", "b", "c")
			_, err = w.Rotate()
			require.NoError(t, err)
			commit(t, w, "d", "e", "f")
			require.NoError(t, w.Close())
			tt.corrupt(t, dir)

			got, err := replayAll(t, options(dir, nil))
			if tt.seq == 0 {
				require.NoError(t, err)
				assert.Equal(t, tt.want, got)
				return
			}
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.seq, ce.Seq)
			assert.Equal(t, tt.offset, ce.Offset)
			assert.Equal(t, filepath.Join(dir, SegmentName(tt.seq)), ce.Segment)
			assert.ErrorIs(t, err, ErrCorrupt)
			assert.Contains(t, err.Error(), fmt.Sprintf("offset %d", tt.offset))

			opts := options(dir, nil)
			opts.Repair = true
			got, err = replayAll(t, opts)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			got, err = replayAll(t, options(dir, nil))
			require.NoError(t, err, "repaired for good")
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestRemovedBytesAreCountedBeforeTheFileGoes: whoever sees a segment gone
// must see the room it leaves, or a write is refused by the WAL bound
// right after the WAL emptied.
func TestRemovedBytesAreCountedBeforeTheFileGoes(t *testing.T) {
	dir := t.TempDir()
	fsys := &faultFS{}
	opts := options(dir, fsys)
	opts.MaxRecycled = -1
	w, err := Open(opts, 1)
	require.NoError(t, err)
	commit(t, w, big("a"))
	_, err = w.Rotate()
	require.NoError(t, err)
	require.EqualValues(t, HeaderSize+len(big("a")), w.Bytes())
	var atRemove, atSync []int64
	fsys.onRemove = func(string) { atRemove = append(atRemove, w.Bytes()) }
	fsys.onSyncDir = func(string) { atSync = append(atSync, w.Bytes()) }
	require.NoError(t, w.RemoveThrough(1))
	assert.Equal(t, []int64{0}, atRemove)
	assert.Equal(t, []int64{0}, atSync)
	require.NoError(t, w.Close())
}

func appendTo(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(b)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func flipByte(t *testing.T, path string, off int) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[off] ^= 0xff
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

// TestPartialVectoredWriteIsCompleted: writev may write fewer bytes than
// asked without an error (a signal, a full pipe of the page cache); the
// commit writes the rest, from inside a header or a payload part alike,
// and every record replays whole.
func TestPartialVectoredWriteIsCompleted(t *testing.T) {
	for _, part := range []int64{1, HeaderSize + 3, HeaderSize + 1 + HeaderSize, 700} {
		t.Run(fmt.Sprint(part), func(t *testing.T) {
			dir := t.TempDir()
			fsys := &faultFS{}
			opts := options(dir, fsys)
			opts.MaxWrite = 1 << 20
			w, err := Open(opts, 1)
			require.NoError(t, err)
			commit(t, w, "a")
			fsys.PartialWrite.Store(part)
			w.Write([]byte("b"))
			w.Write([]byte(big("c")), []byte("d"), nil, []byte(big("e")))
			require.NoError(t, w.Commit())
			assert.Zero(t, fsys.PartialWrite.Load(), "the partial write happened")
			require.NoError(t, w.Close())
			got, err := replayAll(t, opts)
			require.NoError(t, err)
			assert.Equal(t, []string{"a", "b", big("c") + "d" + big("e")}, got)
		})
	}
}

// TestLargeGroupOnRealFiles commits, on the real file system (the WAL's
// own writev), a group of more buffers than one writev takes (IOV_MAX),
// with a write size limit that cuts payload parts, and replays it.
func TestLargeGroupOnRealFiles(t *testing.T) {
	for _, maxWrite := range []int{0, 4096, 1000} {
		t.Run(fmt.Sprint(maxWrite), func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{FS: &osFS{}, Dir: dir, Logger: quiet, MaxWrite: maxWrite}
			w, err := Open(opts, 1)
			require.NoError(t, err)
			var want []string
			for i := range 700 { // 700 headers and 1400 parts: 2100 buffers
				p := fmt.Sprintf("record %d:", i)
				w.Write([]byte(p), bytes.Repeat([]byte{byte('a' + i%26)}, i))
				want = append(want, p+strings.Repeat(string(rune('a'+i%26)), i))
			}
			require.NoError(t, w.Commit())
			commit(t, w, "after")
			require.NoError(t, w.Close())
			got, err := replayAll(t, opts)
			require.NoError(t, err)
			assert.Equal(t, append(want, "after"), got)
		})
	}
}
