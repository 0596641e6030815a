// Package otlparrow converts OTLP pdata to Arrow record batches of the
// tables of internal/schema, and rows of those tables back to pdata.
//
// The forward direction (TracesConverter, LogsConverter, MetricsConverter)
// is the exporter's hot path. A converter is reused across calls: it
// renders a resource's, a scope's and a metric's columns once and appends
// them in bulk per run of their rows, renders a record's own attributes
// straight into their columns (UTF-8 checked once per row), builds the flat
// columns (and the list offsets) in plain Go slices handed to Arrow as
// buffers when a batch is cut,
// reserves each column from what the previous batch used, and takes a
// column's buffers back when the record that held them is released. In
// steady state it allocates per batch (arrow-go's array objects and the
// builders of the nested lists' structs), not per row. Converters are not safe for
// concurrent use; keep one per goroutine, or a sync.Pool of them. Records
// may be released on any goroutine.
//
// The reverse direction (SpansToTraces, LogRecordsToLogs, PointsToMetrics)
// serves tests and readers of the Parquet files. It regroups consecutive
// rows that share a resource, scope or metric. docs/SCHEMA.md lists what a
// round trip normalises.
package otlparrow
