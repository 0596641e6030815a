package layout

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/arc-otel/arc-otel/storage/wal"
)

// File is the part of *os.File that storage uses. Tests wrap it to inject
// short writes and fsync failures. It is the WAL's, so every FS is one the
// WAL can use.
type File = wal.File

// FS is the file system storage works on.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	MkdirAll(path string, perm os.FileMode) error
	ReadDir(name string) ([]os.DirEntry, error)
	ReadFile(name string) ([]byte, error)
	// SyncDir makes the directory's entries durable: after a rename or a
	// create, the name survives a crash only once its directory is synced.
	SyncDir(name string) error
	Link(oldname, newname string) error
	RemoveAll(path string) error
	// Exchange swaps two paths atomically (renameat2 RENAME_EXCHANGE).
	Exchange(a, b string) error
	// RenameNoReplace renames unless newpath exists (renameat2
	// RENAME_NOREPLACE); the WAL recycles its segment files with it.
	RenameNoReplace(oldpath, newpath string) error
}

// DirReader is the part of FS that lists folders.
type DirReader interface {
	ReadDir(name string) ([]os.DirEntry, error)
}

// FileWriter is the part of FS that WriteFileAtomic takes.
type FileWriter interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Rename(oldpath, newpath string) error
	SyncDir(name string) error
}

// OSFS is the real file system.
type OSFS struct{}

func (OSFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	return os.OpenFile(name, flag, perm)
}
func (OSFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (OSFS) Remove(name string) error                     { return os.Remove(name) }
func (OSFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (OSFS) ReadDir(name string) ([]os.DirEntry, error)   { return os.ReadDir(name) }
func (OSFS) ReadFile(name string) ([]byte, error)         { return os.ReadFile(name) }
func (OSFS) Link(oldname, newname string) error           { return os.Link(oldname, newname) }
func (OSFS) RemoveAll(path string) error                  { return os.RemoveAll(path) }

func (OSFS) Exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return fmt.Errorf("%w: the file system does not support atomic exchange (renameat2 RENAME_EXCHANGE); compaction needs it", err)
	}
	return err
}

func (OSFS) RenameNoReplace(oldpath, newpath string) error {
	if err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}

func (OSFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteFileAtomic writes data to path so that a crash leaves either the old
// content or the new, never a mix: temp file, fsync, rename, fsync the
// directory.
func WriteFileAtomic(fsys FileWriter, path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return err
	}
	return fsys.SyncDir(filepath.Dir(path))
}

// CountingWriter counts what reaches a file: the flush and the compaction
// report the bytes they wrote without asking the file system.
type CountingWriter struct {
	W io.Writer
	N int64
}

func (c *CountingWriter) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.N += int64(n)
	return n, err
}

// MkdirDurable creates dir and any missing parents, and fsyncs the parent
// of each folder it created: a file made durable in a new folder is lost
// with the folder unless the folder's own name is durable too. A folder
// that exists is left as it is.
func MkdirDurable(fsys FS, dir string) error {
	var created []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		created = append(created, d)
		if p := filepath.Dir(d); p == d {
			break
		}
	}
	if len(created) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range created {
		if err := fsys.SyncDir(filepath.Dir(d)); err != nil {
			return fmt.Errorf("sync dir: %w", err)
		}
	}
	return nil
}
