package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockName is the file a store holds an exclusive flock on: two processes
// replaying and trimming one WAL, or one compacting under a running
// sidecar, would lose data.
const lockName = "lock"

// ErrLocked reports a data directory another store has open.
var ErrLocked = errors.New("data directory is in use by another arcstore")

func lockDir(sysDir string) (*os.File, error) {
	if err := os.MkdirAll(sysDir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", sysDir, err)
	}
	path := filepath.Join(sysDir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (%s)", ErrLocked, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

func (s *Store) unlock() {
	if s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
}
