// Package storage keeps what the sidecar accepts: a write-ahead log that is
// fsynced before any acknowledgement, in-memory partition buffers, and
// hive-partitioned Parquet files published atomically.
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
package storage
