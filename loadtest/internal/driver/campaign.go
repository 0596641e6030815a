package driver

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/arc-otel/arc-otel/loadtest/internal/campaign"
)

// Events is the events table: log records with an event name.
const Events Signal = "events"

// Campaign sends the demo story (package campaign) once, minute by minute,
// through the collector's OTLP gRPC receiver.
type Campaign struct {
	Endpoint string
	Story    *campaign.Story
	Recorder *Recorder
}

// Run sends every batch of the story; a failed export ends the run.
func (d *Campaign) Run(ctx context.Context) error {
	conn, err := grpc.NewClient(d.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("dial %s: %w", d.Endpoint, err)
	}
	defer conn.Close()
	traces, logs, metrics := ptraceotlp.NewGRPCClient(conn), plogotlp.NewGRPCClient(conn), pmetricotlp.NewGRPCClient(conn)
	for i := range d.Story.Traces {
		start := time.Now()
		if _, err := traces.Export(ctx, ptraceotlp.NewExportRequestFromTraces(d.Story.Traces[i])); err != nil {
			return fmt.Errorf("export traces of minute %d: %w", i, err)
		}
		d.Recorder.Success(Traces, d.Story.Traces[i].SpanCount(), 0, time.Since(start))
		start = time.Now()
		if _, err := logs.Export(ctx, plogotlp.NewExportRequestFromLogs(d.Story.Logs[i])); err != nil {
			return fmt.Errorf("export logs of minute %d: %w", i, err)
		}
		events := countEvents(d.Story.Logs[i])
		d.Recorder.Success(Logs, d.Story.Logs[i].LogRecordCount()-events, 0, time.Since(start))
		if events > 0 {
			d.Recorder.Success(Events, events, 0, 0)
		}
		start = time.Now()
		if _, err := metrics.Export(ctx, pmetricotlp.NewExportRequestFromMetrics(d.Story.Metrics[i])); err != nil {
			return fmt.Errorf("export metrics of minute %d: %w", i, err)
		}
		d.Recorder.Success(Metrics, d.Story.Metrics[i].DataPointCount(), 0, time.Since(start))
	}
	return nil
}

func countEvents(ld plog.Logs) int {
	n := 0
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				if lr.EventName() != "" {
					n++
				}
			}
		}
	}
	return n
}
