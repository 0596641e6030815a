package storage

import "github.com/arc-otel/arc-otel/storage/compact"

// CompactStats says what a compaction did (compact.Stats).
type CompactStats = compact.Stats
