package arcexporter

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/arc-otel/arc-otel/exporter/arcexporter/internal/metadata"
	"github.com/arc-otel/arc-otel/internal/schema"
)

// Defaults.
const (
	defaultEndpoint  = "127.0.0.1:8815"
	defaultBatchSize = 1000
	// Pushes in flight: with wait_for_result the rate is concurrency over
	// the durable-ack latency, so more consumers than exporterhelper's 10
	// (measured, docs/PERFORMANCE.md).
	defaultNumConsumers = 16
)

// NewFactory returns the factory of the arc exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithTraces(createTraces, metadata.TracesStability),
		exporter.WithLogs(createLogs, metadata.LogsStability),
		exporter.WithMetrics(createMetrics, metadata.MetricsStability),
	)
}

func createDefaultConfig() component.Config {
	client := configgrpc.NewDefaultClientConfig()
	client.Endpoint = defaultEndpoint
	// Plaintext to the loopback sidecar; Config.Unmarshal turns TLS on
	// for any other endpoint unless tls is set.
	client.TLS.Insecure = true
	queue := exporterhelper.NewDefaultQueueConfig()
	// An OTLP success means the rows are in the sidecar's fsynced WAL: a
	// request waits until the batch holding it is acknowledged, so a
	// collector crash loses nothing a client was told was accepted.
	queue.WaitForResult = true
	queue.BlockOnOverflow = true
	queue.NumConsumers = defaultNumConsumers
	// The batcher cuts requests larger than batch_size into pushes that
	// run at once on several consumers, so their batches share WAL fsyncs
	// instead of following each other on one stream. It never holds a
	// request back to wait for others (min_size 0): with wait_for_result a
	// client is answered only once its batch is durable, so a request of
	// fewer than min_size items would wait the whole flush_timeout for
	// company that a client waiting for its answer does not send (OTel
	// SDKs export 512 spans at a time; measured in docs/PERFORMANCE.md).
	batch := exporterhelper.NewDefaultBatchConfig()
	batch.FlushTimeout = 10 * time.Millisecond
	batch.MinSize = 0
	batch.MaxSize = defaultBatchSize
	queue.Batch = configoptional.Some(batch)
	queue.Sizer = batch.Sizer
	queue.QueueSize = 1_000_000
	return &Config{
		ClientConfig:  client,
		Database:      schema.DefaultDatabase,
		BatchSize:     defaultBatchSize,
		TimeoutConfig: exporterhelper.NewDefaultTimeoutConfig(),
		QueueConfig:   configoptional.Some(queue),
		BackOffConfig: configretry.NewDefaultBackOffConfig(),
	}
}

func options(cfg *Config, e *arcExporter) []exporterhelper.Option {
	return []exporterhelper.Option{
		exporterhelper.WithStart(e.start),
		exporterhelper.WithShutdown(e.shutdown),
		exporterhelper.WithTimeout(cfg.TimeoutConfig),
		exporterhelper.WithRetry(cfg.BackOffConfig),
		exporterhelper.WithQueue(cfg.QueueConfig),
	}
}

func createTraces(ctx context.Context, set exporter.Settings, c component.Config) (exporter.Traces, error) {
	cfg := c.(*Config)
	e, err := newExporter(cfg, set)
	if err != nil {
		return nil, err
	}
	return exporterhelper.NewTraces(ctx, set, cfg, e.pushTraces, options(cfg, e)...)
}

func createLogs(ctx context.Context, set exporter.Settings, c component.Config) (exporter.Logs, error) {
	cfg := c.(*Config)
	e, err := newExporter(cfg, set)
	if err != nil {
		return nil, err
	}
	return exporterhelper.NewLogs(ctx, set, cfg, e.pushLogs, options(cfg, e)...)
}

func createMetrics(ctx context.Context, set exporter.Settings, c component.Config) (exporter.Metrics, error) {
	cfg := c.(*Config)
	e, err := newExporter(cfg, set)
	if err != nil {
		return nil, err
	}
	return exporterhelper.NewMetrics(ctx, set, cfg, e.pushMetrics, options(cfg, e)...)
}
