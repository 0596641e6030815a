package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/arc-otel/arc-otel/storage/layout"
)

// lockName is the file a store holds an exclusive flock on: two processes
// replaying and trimming one WAL, or one compacting under a running
// sidecar, would lose data.
const lockName = "lock"

// ErrLocked reports a data directory another store has open.
var ErrLocked = errors.New("data directory is in use by another arcstore")

// dirLock is the flock a store holds on its data directory.
type dirLock struct{ f *os.File }

func lockDir(fsys FS, sysDir string) (dirLock, error) {
	// Durable before anything is written in it: the WAL lives below.
	if err := layout.MkdirDurable(fsys, sysDir); err != nil {
		return dirLock{}, fmt.Errorf("create %s: %w", sysDir, err)
	}
	path := filepath.Join(sysDir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return dirLock{}, fmt.Errorf("open lock file: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return dirLock{}, fmt.Errorf("%w (%s)", ErrLocked, path)
		}
		return dirLock{}, fmt.Errorf("lock %s: %w", path, err)
	}
	return dirLock{f}, nil
}

// release lets another store open the directory; once released, it does
// nothing.
func (l *dirLock) release() {
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
