// Package waltest injects disk faults into WAL segment files for tests of
// the WAL and of the store above it: short writes, failed fsyncs and
// truncates, a process that dies between two write calls, vectored writes
// that store less than asked, fsyncs held until a test lets them go.
package waltest

import (
	"errors"
	"io"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ErrInjected is the error every injected fault returns.
var ErrInjected = errors.New("injected fault")

// Faults is what goes wrong next; the zero value injects nothing.
type Faults struct {
	ShortWrite   atomic.Bool   // the next write stores half its bytes, then fails
	PartialWrite atomic.Int64  // > 0: the next vectored write stores this many bytes and succeeds
	FailSync     atomic.Bool   // the next fsync fails
	FailTruncate atomic.Bool   // every truncate fails
	WritesLeft   atomic.Int64  // > 0: writes that still reach the disk; then the process is dead
	Dead         atomic.Bool   // no write, fsync or truncate reaches the disk any more
	HoldSync     chan struct{} // non-nil: fsyncs wait until it is closed
	Syncs        atomic.Int64  // fsyncs begun, held ones included
	FailSyncAt   atomic.Int64  // > 0: the fsync that Syncs numbers so (from 1) fails
	// Synced is how much of the file its last successful fsync made
	// durable (its write offset then): a crash keeps that much of it (of
	// the file synced last, when several are open).
	Synced atomic.Int64
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

// WriteVector is a vectored write (writev) under the same faults as
// Write: one call is one write, and a short one stores half its bytes.
func (f *File) WriteVector(bufs [][]byte) (int, error) {
	fs := f.faults
	if fs.Dead.Load() {
		return 0, ErrInjected
	}
	if fs.WritesLeft.Load() > 0 && fs.WritesLeft.Add(-1) == 0 {
		fs.Dead.Store(true) // this write is the last to reach the disk
	}
	if part := fs.PartialWrite.Swap(0); part > 0 {
		// As writev may: fewer bytes than asked for, and no error.
		return writev(f.File, cut(bufs, int(part)))
	}
	short := fs.ShortWrite.CompareAndSwap(true, false)
	if short {
		total := 0
		for _, b := range bufs {
			total += len(b)
		}
		bufs = cut(bufs, total/2)
	}
	n, err := writev(f.File, bufs)
	if short && err == nil {
		err = ErrInjected
	}
	return n, err
}

// cut returns the first n bytes of bufs.
func cut(bufs [][]byte, n int) [][]byte {
	var out [][]byte
	for _, b := range bufs {
		if n == 0 {
			break
		}
		b = b[:min(len(b), n)]
		out = append(out, b)
		n -= len(b)
	}
	return out
}

func writev(f *os.File, bufs [][]byte) (n int, err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	if cerr := rc.Write(func(fd uintptr) bool {
		n, err = unix.Writev(int(fd), bufs)
		return true
	}); cerr != nil {
		return 0, cerr
	}
	return max(n, 0), err
}

func (f *File) Sync() error {
	fs := f.faults
	n := fs.Syncs.Add(1)
	if fs.HoldSync != nil {
		<-fs.HoldSync
	}
	if fs.Dead.Load() || fs.FailSync.CompareAndSwap(true, false) || fs.FailSyncAt.CompareAndSwap(n, 0) {
		return ErrInjected
	}
	// Taken before the fsync: whatever it makes durable includes this
	// much. The write offset, not the size: the WAL writes in order, and
	// a recycled file is larger than what was written into it.
	end, err := f.File.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	fs.Synced.Store(end)
	return nil
}

func (f *File) Truncate(size int64) error {
	if f.faults.Dead.Load() || f.faults.FailTruncate.Load() {
		return ErrInjected
	}
	return f.File.Truncate(size)
}
