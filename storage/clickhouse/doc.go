// Package clickhouse is the sidecar's ClickHouse sink: it creates the
// tables of the column contract in ClickHouse (same column names as the
// Parquet files, so one set of queries works on both) and inserts the rows
// of each closed WAL segment through ch-go's native protocol, in columnar
// blocks built straight from the Arrow buffers.
//
// Exactly once rests on two things: the store hands the sink the same rows
// under the same token whenever a segment is written again (after a crash
// or a failed insert), and every insert carries that token as
// insert_deduplication_token, which MergeTree remembers for the tables'
// deduplication window and drops on a repeat.
package clickhouse
