// Package otlparrow converts OTLP pdata to Arrow record batches of the
// tables of internal/schema, and rows of those tables back to pdata.
//
// The forward direction (TracesConverter, LogsConverter, MetricsConverter)
// is the exporter's hot path. A converter is reused across calls: it
// renders text into scratch buffers, renders a resource's and a scope's
// attributes once for all their rows, appends bytes to Arrow builders, and
// reserves each builder from what the previous batch used, so that in
// steady state it allocates per batch (arrow-go's arrays and buffers), not
// per row. Converters are not safe for concurrent use; keep one per
// goroutine, or a sync.Pool of them.
//
// The reverse direction (SpansToTraces, LogRecordsToLogs, PointsToMetrics)
// serves tests and readers of the Parquet files. It regroups consecutive
// rows that share a resource, scope or metric. docs/SCHEMA.md lists what a
// round trip normalises.
package otlparrow
