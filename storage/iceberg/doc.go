// Package iceberg keeps Apache Iceberg (format v2) tables over the
// sidecar's Parquet files, so that Spark, DuckDB and PyIceberg see
// each database's tables as tables with snapshots instead of folder globs.
//
// One table per database and table (namespace = database), partitioned by
// hour(time) like the hive tree, in a catalog named "arcstore": by
// default an SQL catalog on SQLite at <data-dir>/_arcstore/iceberg/catalog.db,
// else PostgreSQL or a REST catalog. No file is rewritten: a table lists
// the files the store wrote. Without a bucket a local table lists hard
// links to them under _arcstore/iceberg/<db>/<table>/data/ (see link.go
// for why), its metadata next to them; with one it lists the objects the
// uploader verified, its metadata under <prefix>/_iceberg/ in the bucket.
// Table metadata never sits inside the hive tree.
//
// The Committer runs off the write path: a pass every commit interval
// lists the files that exist (the hive tree, or the uploader's manifests)
// and each table's live files, and commits the difference, one snapshot
// per table. Computing the difference afresh is what makes it exactly
// once across crashes: a pass cut off anywhere leaves files on disk and a
// table that the next pass compares again. The uploader settles a
// partition (upload.Table) before it deletes a replaced object or a local
// partition, so a bucket table never points at a deleted object.
//
// A file whose columns the table lacks adds them as optional columns (and
// to the name mapping the id-less files are read through); a file whose
// column type conflicts with the table's is kept out of the table and
// logged.
package iceberg
