package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
		w.opts.logger().Warn("cannot keep a wal segment for reuse; removing it", "segment", from, "error", err)
		return false
	}
	r.paths = append(r.paths, to)
	return true
}

// reuse renames a kept file to path and opens it for writing from the
// start, returning the file and its size; (nil, 0, nil) when there is
// none, and a file it cannot reuse is removed.
func (w *WAL) reuse(path string) (File, int64, error) {
	r := &w.recycled
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.paths) == 0 {
		return nil, 0, nil
	}
	from := r.paths[0]
	r.paths = r.paths[1:]
	if err := w.opts.FS.RenameNoReplace(from, path); err != nil {
		_ = w.opts.FS.Remove(from)
		if errors.Is(err, os.ErrExist) {
			return nil, 0, fmt.Errorf("create wal segment: %w", err)
		}
		// No such rename here (EINVAL, ENOSYS): new files from now on.
		r.off = true
		w.opts.logger().Warn("cannot reuse wal segment files; creating new ones", "error", err)
		return nil, 0, nil
	}
	f, err := w.opts.FS.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		_ = w.opts.FS.Remove(path)
		return nil, 0, fmt.Errorf("open recycled wal segment: %w", err)
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		_ = w.opts.FS.Remove(path)
		return nil, 0, fmt.Errorf("open recycled wal segment: %w", err)
	}
	return f, end, nil
}
