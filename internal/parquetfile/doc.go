// Package parquetfile writes Arrow record batches to Parquet files with
// parquet-go, column by column: values go straight from the Arrow buffers
// into parquet-go's column writers with their repetition and definition
// levels, so encoding allocates per batch, not per row, and nested columns
// (maps, lists of structs) need no intermediate Go values.
package parquetfile
