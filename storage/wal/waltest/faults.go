// Package waltest injects disk faults into WAL segment files for tests of
// the WAL and of the store above it: short writes, failed fsyncs and
// truncates, a process that dies between two write calls, fsyncs held
// until a test lets them go.
package waltest

import (
	"errors"
	"os"
	"sync/atomic"
)

// ErrInjected is the error every injected fault returns.
var ErrInjected = errors.New("injected fault")

// Faults is what goes wrong next; the zero value injects nothing.
type Faults struct {
	ShortWrite   atomic.Bool   // the next write stores half its bytes, then fails
	FailSync     atomic.Bool   // the next fsync fails
	FailTruncate atomic.Bool   // every truncate fails
	WritesLeft   atomic.Int64  // > 0: writes that still reach the disk; then the process is dead
	Dead         atomic.Bool   // no write, fsync or truncate reaches the disk any more
	HoldSync     chan struct{} // non-nil: fsyncs wait until it is closed
}

// File is a file whose writes, fsyncs and truncates go through Faults.
type File struct {
	*os.File
	faults *Faults
}

// Wrap puts f behind the faults.
func (fs *Faults) Wrap(f *os.File) *File { return &File{File: f, faults: fs} }

func (f *File) Write(b []byte) (int, error) {
	fs := f.faults
	if fs.Dead.Load() {
		return 0, ErrInjected
	}
	if fs.WritesLeft.Load() > 0 && fs.WritesLeft.Add(-1) == 0 {
		fs.Dead.Store(true) // this write is the last to reach the disk
	}
	if fs.ShortWrite.CompareAndSwap(true, false) {
		n, _ := f.File.Write(b[:len(b)/2])
		return n, ErrInjected
	}
	return f.File.Write(b)
}

func (f *File) Sync() error {
	fs := f.faults
	if fs.HoldSync != nil {
		<-fs.HoldSync
	}
	if fs.Dead.Load() || fs.FailSync.CompareAndSwap(true, false) {
		return ErrInjected
	}
	return f.File.Sync()
}

func (f *File) Truncate(size int64) error {
	if f.faults.Dead.Load() || f.faults.FailTruncate.Load() {
		return ErrInjected
	}
	return f.File.Truncate(size)
}
