package storage

import (
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

// SinkWritten is one Write of a sink, for metrics.
type SinkWritten struct {
	Sink, Database, Table string
	Rows                  int64
	Duration              time.Duration
	Err                   error
	// DeadLetter is the file that keeps rows the sink refused (Err wraps
	// ErrRejected) when no other storage has them; empty otherwise.
	DeadLetter string
}

type nopObserver struct{}

func (nopObserver) Committed(Commit)       {}
func (nopObserver) Flushed(Flush)          {}
func (nopObserver) Compacted(CompactStats) {}
func (nopObserver) Retired(int)            {}
func (nopObserver) SinkWrote(SinkWritten)  {}
func (nopObserver) Deduplicated(Duplicate) {}
