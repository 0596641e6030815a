// Package storage keeps what the sidecar accepts: a write-ahead log that is
// fsynced before any acknowledgement, in-memory partition buffers, and
// hive-partitioned Parquet files published atomically.
//
// The WAL itself (segments, group commit, rotation, replay, removal and its
// corruption error) is package wal; Store coordinates it with the buffers,
// flushes, sinks and compaction, and encodes its payloads: one record per
// request, so a request is replayed whole or not at all.
//
// The life of a batch: Append writes it to the current WAL segment and waits
// for the group commit's fsync, then adds the decoded record to the current
// generation of partition buffers. A flush swaps in a fresh generation and a
// fresh WAL segment, writes each partition of the old generation to a temp
// file, records an intent naming every file to publish and the last segment
// they cover, renames the files into place, deletes the covered segments and
// the intent. A crash at any point replays to exactly one copy: before the
// intent, the temp files are discarded and the WAL replays; after it, the
// intent is completed and the segments it covers are not replayed.
//
// Sinks (ClickHouse) read the closed WAL segments themselves, in order, each
// keeping a durable cursor of the last segment it has stored. A segment is
// deleted only once Parquet (its own cursor) and every sink are past it, so
// a sink that is down holds the WAL, never the acknowledgements, until the
// WAL reaches its bound; then Append answers ErrBackpressure. A segment
// written again after a crash gives the sink the same rows under the same
// token, which the destination uses to drop the repeat. A cursor on disk
// whose consumer this start does not run (a sink whose flag was dropped)
// holds the WAL the same way: only deleting the cursor gives its rows up.
//
// Below Options.MinFreeDisk of free space Append refuses writes
// (ErrDiskLow, after waiting for space), never flushes: the floor is the
// room flushes need to drain the WAL into Parquet.
//
// Inside the package each job is a room that owns its state: the
// committer (admission, the group commit goroutine, generations and buffer
// room), the flusher (the pending retry, flush-intent.json, tmp/ temps,
// Parquet's cursor), the sinkSet (runners, cursors, held cursors, the
// sidecar id, dead letters) and retention (trash/, dropped/); compaction
// is package compact. The flusher takes each closed generation from the
// committer, which tells the sinkSet the segment closed; both tell the
// Store when their cursor moved, and only the Store removes WAL segments
// (trimWAL, after saving the batch IDs). The Store alone holds the order
// of recovery and of Close; no room recovers in its constructor.
package storage
