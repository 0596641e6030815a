package e2e

import (
	"context"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/otlparrow/otlparrowtest"
	"github.com/arc-otel/arc-otel/internal/schema"
)

// TestEndToEndFidelity sends generated data that sets every OTLP field
// through the real collector and sidecar with a plain OTLP client, reads
// the Parquet files back and rebuilds pdata: every span, log record and
// data point must come back equal to what was sent (docs/SCHEMA.md lists the
// only normalisations).
func TestEndToEndFidelity(t *testing.T) {
	s := startStack(t)
	conn, err := grpc.NewClient(s.collector.otlpGRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	_, err = ptraceotlp.NewGRPCClient(conn).Export(ctx, ptraceotlp.NewExportRequestFromTraces(otlparrowtest.Traces(otlparrowtest.Sent, 40)))
	require.NoError(t, err)
	_, err = plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(otlparrowtest.Logs(otlparrowtest.Sent, 40)))
	require.NoError(t, err)
	_, err = pmetricotlp.NewGRPCClient(conn).Export(ctx, pmetricotlp.NewExportRequestFromMetrics(otlparrowtest.Metrics(otlparrowtest.Sent, 30)))
	require.NoError(t, err)
	s.collector.waitDrained(t, 60*time.Second)
	s.sidecar.stop(t, 30*time.Second)
	dir := s.sidecar.dataDir

	spans, err := otlparrow.SpansToTraces(readRows[schema.Span](t, dir, schema.TableTraces))
	require.NoError(t, err)
	otlparrowtest.AssertTracesSameRecords(t, otlparrowtest.Traces(otlparrowtest.ReadBack, 40), spans)

	logs, err := otlparrow.LogRecordsToLogs(readRows[schema.LogRecord](t, dir, schema.TableLogs))
	require.NoError(t, err)
	events, err := otlparrow.LogRecordsToLogs(readRows[schema.LogRecord](t, dir, schema.TableEvents))
	require.NoError(t, err)
	assert.Positive(t, events.LogRecordCount(), "event-named records land in the events table")
	events.ResourceLogs().MoveAndAppendTo(logs.ResourceLogs())
	otlparrowtest.AssertLogsSameRecords(t, otlparrowtest.Logs(otlparrowtest.ReadBack, 40), logs)

	points, err := otlparrow.PointsToMetrics(readRows[schema.MetricPoint](t, dir, schema.TableMetrics))
	require.NoError(t, err)
	otlparrowtest.AssertMetricsSameRecords(t, otlparrowtest.Metrics(otlparrowtest.ReadBack, 30), points)
}

// readRows reads every Parquet file of a table with parquet-go.
func readRows[T any](t *testing.T, dataDir, table string) []T {
	t.Helper()
	var paths []string
	root := filepath.Join(dataDir, schema.DefaultDatabase, table)
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			paths = append(paths, p)
		}
		return err
	}))
	sort.Strings(paths)
	var rows []T
	for _, p := range paths {
		r, err := parquet.ReadFile[T](p)
		require.NoError(t, err)
		rows = append(rows, r...)
	}
	return rows
}
