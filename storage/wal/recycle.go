package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// DefaultMaxRecycled is how many removed segments a WAL keeps for reuse by
// default: the segments a flush releases at once are about as many as the
// writers fill before the next (one at a time, under steady load).
const DefaultMaxRecycled = 2

// recycledPrefix starts the name of a kept segment file. It does not end
// in SegmentExt: a recycled file is never listed, replayed or counted.
const recycledPrefix = "recycled-"

func recycledName(seq uint64) string { return fmt.Sprintf("%s%020d", recycledPrefix, seq) }

func isRecycled(name string) bool { return strings.HasPrefix(name, recycledPrefix) }

// recycled holds removed segment files until the next segments take them.
type recycled struct {
	mu    sync.Mutex
	max   int
	paths []string
	off   bool // the file system cannot rename without replacing
}

// recycle keeps closed segment seq for reuse and reports whether it did.
// Only segments this WAL wrote are kept: they are version 2, so whatever
// they still hold fails the checksums of their next life. A version 1
// segment's records would not.
func (w *WAL) recycle(seq uint64) bool {
	r := &w.recycled
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.off || len(r.paths) >= r.max || seq < w.first {
		return false
	}
	from := filepath.Join(w.opts.Dir, SegmentName(seq))
	to := filepath.Join(w.opts.Dir, recycledName(seq))
	if err := w.opts.FS.RenameNoReplace(from, to); err != nil {
		r.noRename(w, err)
		return false
	}
	r.paths = append(r.paths, to)
	return true
}

// noRename turns reuse off where the file system has no
// renameat2(RENAME_NOREPLACE); any other failure costs one file.
func (r *recycled) noRename(w *WAL, err error) {
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSYS) {
		r.off = true
		w.opts.logger().Warn("the file system cannot rename without replacing; wal segments are deleted and created, not reused", "error", err)
		return
	}
	w.opts.logger().Warn("cannot reuse a wal segment file; deleting it", "error", err)
}

// reuse opens a kept file and renames it to path, returning the file and
// its size; (nil, 0, nil) when there is none or it cannot be reused (it is
// then removed). The file is opened before the rename, so that a failure
// after it leaves no segment behind.
func (w *WAL) reuse(path string) (File, int64, error) {
	r := &w.recycled
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.paths) == 0 {
		return nil, 0, nil
	}
	from := r.paths[0]
	r.paths = r.paths[1:]
	f, end, err := openToOverwrite(w.opts.FS, from)
	if err != nil {
		w.opts.logger().Warn("cannot reuse a wal segment file; deleting it", "file", from, "error", err)
		_ = w.opts.FS.Remove(from)
		return nil, 0, nil
	}
	if err := w.opts.FS.RenameNoReplace(from, path); err != nil {
		f.Close()
		_ = w.opts.FS.Remove(from)
		if errors.Is(err, os.ErrExist) {
			return nil, 0, fmt.Errorf("create wal segment: %w", err)
		}
		r.noRename(w, err)
		return nil, 0, nil
	}
	return f, end, nil
}

// openToOverwrite opens a file for writing from its start and returns its
// size.
func openToOverwrite(fsys FS, path string) (File, int64, error) {
	f, err := fsys.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, 0, err
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, end, nil
}
