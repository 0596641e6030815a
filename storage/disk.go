package storage

import (
	"errors"
	"fmt"
	"time"

	"github.com/dustin/go-humanize"
	"golang.org/x/sys/unix"
)

// DefaultMinFreeDisk is the free space kept on the data directory's file
// system for flushes. A flush turns at most a full buffer
// (DefaultMaxBufferBytes, 128 MiB of Arrow IPC) into Parquet, usually a
// fifth of that and never much more, before the WAL segments it covers go;
// the floor holds that four times over, with room for the next WAL
// segment, the flush's temp files and the compaction of small partitions,
// and is a small share of any volume worth running on. A fixed size, not a
// share of the volume: what a flush needs depends on the buffer, not the
// disk.
const DefaultMinFreeDisk = 512 << 20

// diskRecheck is how often a write waiting for disk space looks again.
const diskRecheck = 100 * time.Millisecond

// ErrDiskLow is a write refused because the data directory's file system
// has less free space than Options.MinFreeDisk: what is left is kept for
// the flushes that drain the WAL into Parquet. Clients should retry; the
// sidecar takes writes again as soon as space returns.
var ErrDiskLow = errors.New("the disk is nearly full")

// DiskFree reports the bytes the sidecar may still write on the file
// system holding dir.
type DiskFree func(dir string) (int64, error)

// StatfsFree is DiskFree from statfs(2): the blocks available to an
// unprivileged writer (not those reserved for root), as df shows them.
func StatfsFree(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// diskFloor is the free space kept for flushes on the data directory's
// file system.
type diskFloor struct {
	free DiskFree
	dir  string
	min  int64
}

// check returns an ErrDiskLow when writing size more bytes would leave
// less than the floor free. A file system whose free space cannot be read
// refuses nothing: the WAL's own write errors still keep what it cannot
// store from being acknowledged.
func (d diskFloor) check(size int64) error {
	if d.min < 0 {
		return nil
	}
	free, err := d.free(d.dir)
	if err != nil || free-size >= d.min {
		return nil
	}
	return fmt.Errorf("%w: %s free on the file system of %s, under the %s kept for flushes (-min-free-disk)",
		ErrDiskLow, humanize.IBytes(uint64(max(free, 0))), d.dir, humanize.IBytes(uint64(d.min)))
}
