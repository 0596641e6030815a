package storage

import "sync"

// guard is the one thing the rooms that change the partition tree share
// (compaction, retention, partition drops, and the flush that publishes
// into it). Lock order is Maint, then Tree, never the reverse.
//
// The coordinator owns the two locks and the flusher that answers
// Unfinished; the rooms see them only through the guard.
type guard struct {
	maint, tree *sync.Mutex
	unfinished  func() error
}

// Maint is held by whoever rewrites or deletes partitions (compaction,
// retention, drops), so that they never run at once.
func (g guard) Maint() sync.Locker { return g.maint }

// Tree is held while a partition folder changes: a flush's publish, a
// compaction's swap, a retirement.
func (g guard) Tree() sync.Locker { return g.tree }

// Unfinished is errPublishUnfinished while a flush whose intent is durable
// has not finished publishing; Tree held. Partitions are left alone until
// it has: recovery tells a published step from a lost one by its files.
func (g guard) Unfinished() error { return g.unfinished() }
