package storage

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Observer sees what the store does, for metrics. The committer and flush
// goroutines call it in line: implementations must be quick and safe for
// concurrent use.
type Observer interface {
	// Committed reports one WAL group commit.
	Committed(Commit)
	// Flushed reports one flush attempt.
	Flushed(Flush)
	// Compacted reports one compaction run.
	Compacted(CompactStats)
	// Retired reports partitions deleted by retention.
	Retired(partitions int)
	// SinkWrote reports one write of a sink.
	SinkWrote(SinkWritten)
	// Deduplicated reports a batch acknowledged without a second copy: its
	// batch ID was stored within the dedup window (a retry, or a
	// byte-identical batch). It is called before Append returns.
	Deduplicated(Duplicate)
}

// Duplicate is a batch dropped as a copy of one already stored (the
// caller learns which of its batches from Batch.Deduplicated).
type Duplicate struct {
	Database, Table string
	Rows            int64
}

// Commit is one WAL group commit: the batches written (duplicates
// excluded) and how long the write-out and fsync took.
type Commit struct {
	Batches int
	Bytes   int64
	Sync    time.Duration
	Err     error
}

// Flush is one flush attempt and the files it published.
type Flush struct {
	Duration time.Duration
	Files    []FlushedFile
	Err      error
}

// FlushedFile is a Parquet file a flush wrote.
type FlushedFile struct {
	Database, Table string
	Rows, Bytes     int64
}

type nopObserver struct{}

func (nopObserver) Committed(Commit)       {}
func (nopObserver) Flushed(Flush)          {}
func (nopObserver) Compacted(CompactStats) {}
func (nopObserver) Retired(int)            {}
func (nopObserver) SinkWrote(SinkWritten)  {}
func (nopObserver) Deduplicated(Duplicate) {}

// MaxWALBytes is the configured ceiling of the WAL on disk.
func (s *Store) MaxWALBytes() int64 { return s.opts.MaxWALBytes }

// MaxBufferBytes is the configured ceiling of buffered bytes.
func (s *Store) MaxBufferBytes() int64 { return s.opts.MaxBufferBytes }

// WALStats returns the number of WAL segments and the bytes of their
// records (recycled segment files hold more on disk: see wal.WAL.Bytes).
func (s *Store) WALStats() (segments int, bytes int64, err error) {
	entries, err := s.fs.ReadDir(s.wal.dir)
	if err != nil {
		return 0, 0, fmt.Errorf("list wal: %w", err)
	}
	w := s.wal.WAL
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), segmentExt) {
			continue
		}
		segments++
		if w != nil {
			continue
		}
		// Before the WAL opens, the files are all there is to count.
		if info, err := e.Info(); err == nil {
			bytes += info.Size()
		}
	}
	if w != nil {
		bytes = w.Bytes()
	}
	return segments, bytes, nil
}

// countingWriter counts what reaches a file.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
