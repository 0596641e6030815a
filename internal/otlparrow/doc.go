// Package otlparrow converts OTLP pdata to Arrow record batches of the
// schema package's tables, and rows read back from Parquet to pdata.
//
// The forward direction is the exporter's hot path: converters are reused
// across calls, render every text value into scratch buffers and append
// bytes to Arrow builders, so steady-state allocations are per batch, not
// per row. Converters are not safe for concurrent use.
package otlparrow
