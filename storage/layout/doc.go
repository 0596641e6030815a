// Package layout owns the shape of a data directory: the folder names
// (the system folder, its wal, tmp, trash, compact, sinks and dropped
// folders), the rules that map database and table names to folders, the
// hive tree's partitions (<database>/<table>/date=YYYY-MM-DD/hour=H) and
// how they are listed, and the file system storage works through, with
// the one way it replaces a small file durably.
//
// It is the leaf every part of storage shares (the store, compaction,
// retention, the uploader and the Iceberg tables), so it must never
// import any of them, hold state, take a lock or decide when a partition
// may change: it lists and moves what its caller, holding the right
// locks, tells it to.
package layout
