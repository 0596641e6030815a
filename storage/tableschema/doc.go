// Package tableschema owns what a stored table's Parquet files look like
// beyond the contract's columns (internal/schema): a measurement's Parquet
// schema, flushed and compacted, the integer columns compaction gives a
// dictionary, and each table's sort and bloom-filter columns.
//
// It is a leaf shared by the store's flush and by compaction: it must
// never import storage or any of its parts, read or write files of the
// data directory, or keep state; it answers from a schema or an open file.
// (internal/schema is the contract every component speaks; this package is
// only storage's choices on top of it.)
package tableschema
