// Package arcexporter is the collector's arc exporter: it converts traces,
// logs and metrics to Arrow record batches of the arc-otel tables and writes
// them to the arcstore sidecar over Arrow Flight DoPut, one acknowledgement
// per batch, each sent only once the sidecar has made the batch durable.
//
// The exporter is stateless. exporterhelper provides its queue, batching,
// retry and timeout; data the sidecar rejects as malformed is a permanent
// error, never retried.
package arcexporter // import "github.com/arc-otel/arc-otel/exporter/arcexporter"

// The pinned mdatagen that `make tools` builds, not whichever one is on PATH:
// generated code differs between releases.
//go:generate ../../.tools/mdatagen metadata.yaml
