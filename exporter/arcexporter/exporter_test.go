package arcexporter

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/arc-otel/arc-otel/exporter/arcexporter/internal/metadata"
	"github.com/arc-otel/arc-otel/internal/arcflight"
	"github.com/arc-otel/arc-otel/internal/otlparrow/otlparrowtest"
	"github.com/arc-otel/arc-otel/internal/schema"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeSidecar is an in-process Flight server that records what it gets and
// can fail a stream after a number of acknowledged batches.
type fakeSidecar struct {
	flight.BaseFlightServer
	mu       sync.Mutex
	rows     map[string]int64 // by database/table
	batches  map[string][]int64
	failCode codes.Code
	failAt   int // fail the stream at this batch (0-based), -1: never
	failures int // how many streams to fail
}

func (f *fakeSidecar) DoPut(stream flight.FlightService_DoPutServer) error {
	r, err := flight.NewRecordReader(stream)
	if err != nil {
		return err
	}
	defer r.Release()
	db, table, err := arcflight.ParseDescriptor(r.LatestFlightDescriptor())
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	t, ok := schema.Lookup(table)
	if !ok || !r.Schema().Equal(t.Arrow) {
		return status.Errorf(codes.InvalidArgument, "bad schema for %q", table)
	}
	for seq := 0; r.Next(); seq++ {
		f.mu.Lock()
		fail := f.failures > 0 && seq == f.failAt
		if fail {
			f.failures--
		} else {
			key := db + "/" + table
			f.rows[key] += r.RecordBatch().NumRows()
			f.batches[key] = append(f.batches[key], r.RecordBatch().NumRows())
		}
		f.mu.Unlock()
		if fail {
			return status.Errorf(f.failCode, "injected failure at batch %d", seq)
		}
		if err := stream.Send(&flight.PutResult{AppMetadata: arcflight.AckMetadata(uint64(seq))}); err != nil {
			return err
		}
	}
	if err := r.Err(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

func (f *fakeSidecar) rowsOf(key string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rows[key]
}

func startFake(t *testing.T) (*fakeSidecar, string) {
	f := &fakeSidecar{rows: map[string]int64{}, batches: map[string][]int64{}, failAt: -1}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := grpc.NewServer()
	flight.RegisterFlightServiceServer(gs, f)
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	return f, lis.Addr().String()
}

// testConfig has no queue and no retry, so Consume* returns the push's own
// error.
func testConfig(endpoint string, batchSize int) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.Endpoint = endpoint
	cfg.TLS.Insecure = true
	cfg.BatchSize = batchSize
	cfg.Database = "testdb"
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.BackOffConfig.Enabled = false
	return cfg
}

func TestTracesArriveInBatches(t *testing.T) {
	fake, addr := startFake(t)
	exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(metadata.Type), testConfig(addr, 7))
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()
	td := otlparrowtest.Traces(otlparrowtest.Sent, 5) // 20 spans
	require.NoError(t, exp.ConsumeTraces(context.Background(), td))
	assert.EqualValues(t, 20, fake.rowsOf("testdb/traces"))
	assert.Equal(t, []int64{7, 7, 6}, fake.batches["testdb/traces"])
}

func TestLogsAndEventsGoToTheirTables(t *testing.T) {
	fake, addr := startFake(t)
	exp, err := NewFactory().CreateLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), testConfig(addr, 1000))
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()
	require.NoError(t, exp.ConsumeLogs(context.Background(), otlparrowtest.Logs(otlparrowtest.Sent, 8)))
	assert.EqualValues(t, 24, fake.rowsOf("testdb/logs"))
	assert.EqualValues(t, 8, fake.rowsOf("testdb/events"))
}

func TestSidecarErrors(t *testing.T) {
	tests := []struct {
		name      string
		code      codes.Code
		failAt    int
		permanent bool
		remaining int // spans a retry must still send
	}{
		{"invalid data is permanent", codes.InvalidArgument, 0, true, 0},
		{"unauthenticated is permanent", codes.Unauthenticated, 0, true, 0},
		{"overload is retried from the first batch", codes.ResourceExhausted, 0, false, 20},
		{"outage after two acks retries only the rest", codes.Unavailable, 2, false, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, addr := startFake(t)
			fake.failCode, fake.failAt, fake.failures = tt.code, tt.failAt, 1
			exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(metadata.Type), testConfig(addr, 7))
			require.NoError(t, err)
			require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
			defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()
			err = exp.ConsumeTraces(context.Background(), otlparrowtest.Traces(otlparrowtest.Sent, 5))
			require.Error(t, err)
			assert.Equal(t, tt.permanent, consumererror.IsPermanent(err), "%v", err)
			assert.Equal(t, tt.code, status.Code(errors.Unwrap(err)), "%v", err)
			if !tt.permanent {
				var partial consumererror.Traces
				require.ErrorAs(t, err, &partial)
				assert.Equal(t, tt.remaining, partial.Data().SpanCount())
				assert.EqualValues(t, 20-tt.remaining, fake.rowsOf("testdb/traces"), "acknowledged rows are not sent twice")
			}
		})
	}
}

// TestRetryCompletesWithoutDuplicates lets exporterhelper retry after an
// outage in the middle of a push: the sidecar ends with every span once.
func TestRetryCompletesWithoutDuplicates(t *testing.T) {
	fake, addr := startFake(t)
	fake.failCode, fake.failAt, fake.failures = codes.Unavailable, 1, 2
	cfg := testConfig(addr, 7)
	cfg.BackOffConfig.Enabled = true
	cfg.BackOffConfig.InitialInterval = 1
	cfg.BackOffConfig.MaxInterval = 1
	exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()
	require.NoError(t, exp.ConsumeTraces(context.Background(), otlparrowtest.Traces(otlparrowtest.Sent, 5)))
	assert.EqualValues(t, 20, fake.rowsOf("testdb/traces"))
}

func TestNothingToSend(t *testing.T) {
	fake, addr := startFake(t)
	exp, err := NewFactory().CreateMetrics(context.Background(), exportertest.NewNopSettings(metadata.Type), testConfig(addr, 1000))
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()
	md := otlparrowtest.Metrics(otlparrowtest.Sent, 2)
	require.NoError(t, exp.ConsumeMetrics(context.Background(), md))
	assert.EqualValues(t, md.DataPointCount(), fake.rowsOf("testdb/metrics"))
}
