// Package clickhouse is the groundwork of the ClickHouse sink (issue 8):
// the tables of the column contract as ClickHouse DDL, with the same
// column names as the Parquet files so one set of queries works on both.
// The sink that inserts WAL batches through ch-go builds on it.
package clickhouse
