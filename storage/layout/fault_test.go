package layout_test

import (
	"errors"
	"os"

	"github.com/arc-otel/arc-otel/storage/layout"
)

var errInjected = errors.New("injected fault")

// faultFS is the real file system with one operation made to fail: each
// hook, when set, runs instead of the call and returns its error.
type faultFS struct {
	layout.OSFS
	rename    func(oldpath, newpath string) error
	syncDir   func(name string) error
	removeAll func(path string) error
	readDir   func(name string) ([]os.DirEntry, error)
	openFile  func(name string) (layout.File, error)
}

func (f *faultFS) Rename(oldpath, newpath string) error {
	if f.rename != nil {
		return f.rename(oldpath, newpath)
	}
	return f.OSFS.Rename(oldpath, newpath)
}

func (f *faultFS) SyncDir(name string) error {
	if f.syncDir != nil {
		return f.syncDir(name)
	}
	return f.OSFS.SyncDir(name)
}

func (f *faultFS) RemoveAll(path string) error {
	if f.removeAll != nil {
		return f.removeAll(path)
	}
	return f.OSFS.RemoveAll(path)
}

func (f *faultFS) ReadDir(name string) ([]os.DirEntry, error) {
	if f.readDir != nil {
		return f.readDir(name)
	}
	return f.OSFS.ReadDir(name)
}

func (f *faultFS) OpenFile(name string, flag int, perm os.FileMode) (layout.File, error) {
	if f.openFile != nil {
		return f.openFile(name)
	}
	return f.OSFS.OpenFile(name, flag, perm)
}

// faultFile is a real file whose Write or Sync fails.
type faultFile struct {
	layout.File
	write, sync error
}

func (f *faultFile) Write(p []byte) (int, error) {
	if f.write != nil {
		return len(p) / 2, f.write
	}
	return f.File.Write(p)
}

func (f *faultFile) Sync() error {
	if f.sync != nil {
		return f.sync
	}
	return f.File.Sync()
}
