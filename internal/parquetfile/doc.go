// Package parquetfile writes Arrow record batches to Parquet files whose
// schema is a parquet-go schema (the contract's row types, or a
// measurement's): arrow-go's pqarrow encodes each column from the Arrow
// buffers as typed slices, with repetition and definition levels of lists
// computed in bulk from the Arrow offsets; this package builds the
// dictionaries of the dictionary-encoded string columns and of the keys
// and values of string maps itself, and the levels of those maps (once
// per map for both leaves, maplevels.go), so encoding
// allocates per batch, column and page, never per value. parquet-go reads
// the files back (compaction) and writes the compacted ones.
package parquetfile
