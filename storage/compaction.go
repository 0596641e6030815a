package storage

import (
	"context"
	"time"

	"github.com/arc-otel/arc-otel/storage/compact"
)

// CompactStats says what a compaction did (compact.Stats).
type CompactStats = compact.Stats

// compactConfig is the compactor of s's directory and options; its runs
// are reported to the Observer on the goroutine that ran them.
func compactConfig(s *Store) compact.Config {
	return compact.Config{
		FS:           s.fs,
		DataDir:      s.dir,
		Logger:       s.log,
		Mem:          s.mem,
		Compression:  s.opts.Compression,
		RowGroupRows: s.opts.RowGroupRows,
		Sort:         s.opts.CompactSort,
		Guard:        s.guard,
		Report:       s.opts.Observer.Compacted,
	}
}

// Compact merges the files of every partition whose hour ended at least
// minAge ago, and rewrites the files of earlier builds (nanosecond
// timestamps, schema.StoredParquet) in any partition, so that every engine
// reads the whole tree. Flushes wait while a partition is swapped, not
// while it is merged.
func (s *Store) Compact(ctx context.Context, minAge time.Duration) (CompactStats, error) {
	return s.compactor.Run(ctx, minAge)
}
