package storage

import "sync"

// guard is the one thing the rooms that change the partition tree share
// (compaction, retention, partition drops, and the flush that publishes
// into it). Lock order is Maint, then Tree, never the reverse.
type guard struct{ s *Store }

// Maint is held by whoever rewrites or deletes partitions (compaction,
// retention, drops), so that they never run at once.
func (g guard) Maint() sync.Locker { return &g.s.compactMu }

// Tree is held while a partition folder changes: a flush's publish, a
// compaction's swap, a retirement.
func (g guard) Tree() sync.Locker { return &g.s.flushMu }

// Unfinished is errPublishUnfinished while a flush whose intent is durable
// has not finished publishing; Tree held. Partitions are left alone until
// it has: recovery tells a published step from a lost one by its files.
func (g guard) Unfinished() error { return g.s.flusher.unfinished() }
