package arcexporter

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/arc-otel/arc-otel/exporter/arcexporter/internal/metadata"
	"github.com/arc-otel/arc-otel/exporter/arcexporter/internal/metadatatest"
	"github.com/arc-otel/arc-otel/internal/arcflight"
	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/otlparrow/otlparrowtest"
	"github.com/arc-otel/arc-otel/internal/schema"
)

// ackMode says how the fake sidecar acknowledges batches.
type ackMode int

const (
	ackEach     ackMode = iota
	ackNoneLast         // every batch but the last of a stream
	ackWrongSeq         // the first batch acknowledged as batch 1
	ackGarbage          // app_metadata that is not a sequence number
)

// fakeSidecar is the server side of internal/arcflight in process: it
// decodes each DoPut stream with a Flight record reader, checks descriptor
// and schema the way arcstore does, and acknowledges each batch. It can fail
// a stream at a chosen batch with a chosen gRPC code.
type fakeSidecar struct {
	flight.BaseFlightServer

	mu      sync.Mutex
	streams []string           // "database/table" of every stream, in order
	batches map[string][]int64 // rows of every acknowledged batch, by database/table

	ack        ackMode
	failCode   codes.Code
	failAt     int           // fail a stream at this batch (0-based)
	failures   int           // how many streams to fail
	retryDelay time.Duration // sent as RetryInfo with a failure when set
	endAfter   int           // end each stream with Unavailable after this many acks, as a draining sidecar does; 0 never
	checkTime  bool          // refuse a batch with a row over a year ahead, as arcstore does
	timeDetail bool          // the injected failure names the time column, as a refused time does
}

func (f *fakeSidecar) DoPut(stream flight.FlightService_DoPutServer) error {
	r, err := flight.NewRecordReader(stream)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	defer r.Release()
	db, table, err := arcflight.ParseDescriptor(r.LatestFlightDescriptor())
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	key := db + "/" + table
	f.mu.Lock()
	f.streams = append(f.streams, key)
	f.mu.Unlock()
	t, ok := schema.Lookup(table)
	if !ok || !r.Schema().Equal(t.Arrow) {
		return status.Errorf(codes.InvalidArgument, "schema of %q does not match the contract", table)
	}
	var unacked []uint64
	for seq := uint64(0); r.Next(); seq++ {
		if err := f.refuseTime(t, r.RecordBatch()); err != nil {
			return err
		}
		f.mu.Lock()
		fail := f.failures > 0 && int(seq) == f.failAt
		if fail {
			f.failures--
		} else {
			f.batches[key] = append(f.batches[key], r.RecordBatch().NumRows())
		}
		f.mu.Unlock()
		if fail {
			st := status.Newf(f.failCode, "injected failure at batch %d", seq)
			if f.timeDetail {
				st, err = st.WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: schema.ColTime}}})
				if err != nil {
					return err
				}
			}
			if f.retryDelay > 0 {
				st, err = st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(f.retryDelay)})
				if err != nil {
					return err
				}
			}
			return st.Err()
		}
		md := arcflight.AckMetadata(seq)
		switch f.ack {
		case ackNoneLast:
			// Held back until the next batch shows this one was not the last.
			unacked = append(unacked, seq)
			if len(unacked) < 2 {
				continue
			}
			md, unacked = arcflight.AckMetadata(unacked[0]), unacked[1:]
		case ackWrongSeq:
			md = arcflight.AckMetadata(seq + 1)
		case ackGarbage:
			md = []byte("ok")
		}
		if err := stream.Send(&flight.PutResult{AppMetadata: md}); err != nil {
			return err
		}
		f.mu.Lock()
		end := f.endAfter > 0 && int(seq)+1 == f.endAfter
		f.mu.Unlock()
		if end {
			return status.Error(codes.Unavailable, "sidecar shutting down")
		}
	}
	if err := r.Err(); err != nil && !errors.Is(err, io.EOF) {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return nil
}

// refuseTime answers a batch with a row whose time is over a year ahead
// as arcstore does: InvalidArgument naming the time column in a
// BadRequest detail.
func (f *fakeSidecar) refuseTime(t *schema.Table, rec arrow.RecordBatch) error {
	if !f.checkTime {
		return nil
	}
	latest := schema.LatestTime(time.Now())
	for i, v := range rec.Column(t.FieldIndex(schema.ColTime)).(*array.Timestamp).Values() {
		if int64(v) > latest {
			st, err := status.Newf(codes.InvalidArgument, "row %d: time outside the accepted range", i).
				WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: schema.ColTime}}})
			if err != nil {
				return err
			}
			return st.Err()
		}
	}
	return nil
}

func (f *fakeSidecar) rowsOf(key string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for _, rows := range f.batches[key] {
		n += rows
	}
	return n
}

func (f *fakeSidecar) batchesOf(key string) []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batches[key])
}

func (f *fakeSidecar) streamsSeen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.streams)
}

func startFake(t *testing.T) (*fakeSidecar, string) {
	t.Helper()
	f := &fakeSidecar{batches: map[string][]int64{}, failAt: -1}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := grpc.NewServer()
	flight.RegisterFlightServiceServer(gs, f)
	go func() { _ = gs.Serve(lis) }()
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

func startTraces(t *testing.T, set exporter.Settings, cfg *Config) exporter.Traces {
	t.Helper()
	exp, err := NewFactory().CreateTraces(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	return exp
}

func TestSignalsArriveInBatches(t *testing.T) {
	traces := otlparrowtest.Traces(otlparrowtest.Sent, 5)   // 20 spans
	logs := otlparrowtest.Logs(otlparrowtest.Sent, 8)       // 24 logs, 8 events
	metrics := otlparrowtest.Metrics(otlparrowtest.Sent, 2) // every metric type
	tests := []struct {
		name      string
		batchSize int
		consume   func(t *testing.T, cfg *Config) error
		want      map[string][]int64 // batch sizes by database/table
		streams   []string           // in order
	}{
		{
			name:      "traces cut every batch_size spans",
			batchSize: 7,
			consume: func(t *testing.T, cfg *Config) error {
				return startTraces(t, exportertest.NewNopSettings(metadata.Type), cfg).ConsumeTraces(context.Background(), traces)
			},
			want:    map[string][]int64{"testdb/traces": {7, 7, 6}},
			streams: []string{"testdb/traces"},
		},
		{
			name:      "logs and events go to their own tables",
			batchSize: 10,
			consume: func(t *testing.T, cfg *Config) error {
				exp, err := NewFactory().CreateLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
				require.NoError(t, err)
				require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
				t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
				return exp.ConsumeLogs(context.Background(), logs)
			},
			want:    map[string][]int64{"testdb/logs": {10, 10, 4}, "testdb/events": {8}},
			streams: []string{"testdb/logs", "testdb/events"},
		},
		{
			name:      "metrics: a row per data point",
			batchSize: 1000,
			consume: func(t *testing.T, cfg *Config) error {
				exp, err := NewFactory().CreateMetrics(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
				require.NoError(t, err)
				require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
				t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
				return exp.ConsumeMetrics(context.Background(), metrics)
			},
			want:    map[string][]int64{"testdb/metrics": {int64(metrics.DataPointCount())}},
			streams: []string{"testdb/metrics"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, addr := startFake(t)
			require.NoError(t, tt.consume(t, testConfig(addr, tt.batchSize)))
			assert.Equal(t, tt.streams, fake.streamsSeen(), "one stream per table, descriptor [database, table]")
			for key, want := range tt.want {
				assert.Equal(t, want, fake.batchesOf(key), key)
			}
		})
	}
}

// TestEmptyPushSendsNothing: data that converts to no rows opens no stream.
func TestEmptyPushSendsNothing(t *testing.T) {
	fake, addr := startFake(t)
	cfg := testConfig(addr, 1000)
	set := exportertest.NewNopSettings(metadata.Type)
	ctx := context.Background()

	td := ptrace.NewTraces()
	td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	require.NoError(t, startTraces(t, set, cfg).ConsumeTraces(ctx, td))

	logsExp, err := NewFactory().CreateLogs(ctx, set, cfg)
	require.NoError(t, err)
	require.NoError(t, logsExp.Start(ctx, componenttest.NewNopHost()))
	defer func() { require.NoError(t, logsExp.Shutdown(ctx)) }()
	require.NoError(t, logsExp.ConsumeLogs(ctx, plog.NewLogs()))

	metricsExp, err := NewFactory().CreateMetrics(ctx, set, cfg)
	require.NoError(t, err)
	require.NoError(t, metricsExp.Start(ctx, componenttest.NewNopHost()))
	defer func() { require.NoError(t, metricsExp.Shutdown(ctx)) }()
	md := pmetric.NewMetrics()
	md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetEmptyGauge()
	require.NoError(t, metricsExp.ConsumeMetrics(ctx, md))

	assert.Empty(t, fake.streamsSeen())
}

func TestSidecarErrors(t *testing.T) {
	tests := []struct {
		name      string
		code      codes.Code
		ack       ackMode
		failAt    int
		permanent bool
		remaining int // spans a retry must still send
	}{
		{name: "invalid data is permanent", code: codes.InvalidArgument, permanent: true},
		{name: "failed precondition is permanent", code: codes.FailedPrecondition, permanent: true},
		{name: "unauthenticated is permanent", code: codes.Unauthenticated, permanent: true},
		{name: "permission denied is permanent", code: codes.PermissionDenied, permanent: true},
		{name: "overload is retried from the first batch", code: codes.ResourceExhausted, remaining: 20},
		{name: "internal error is retried", code: codes.Internal, remaining: 20},
		{name: "outage after two acks retries only the rest", code: codes.Unavailable, failAt: 2, remaining: 6},
		{name: "a missing ack retries the unacknowledged batch", ack: ackNoneLast, remaining: 6},
		{name: "an ack out of order is an error", ack: ackWrongSeq, remaining: 20},
		{name: "an unreadable ack is an error", ack: ackGarbage, remaining: 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, addr := startFake(t)
			fake.ack = tt.ack
			if tt.code != codes.OK {
				fake.failCode, fake.failAt, fake.failures = tt.code, tt.failAt, 1
			}
			cfg := testConfig(addr, 7)
			if tt.ack == ackNoneLast {
				// A stream stays open for the next push, so a missing
				// ack is noticed by the push's timeout.
				cfg.TimeoutConfig.Timeout = 3 * time.Second
			}
			exp := startTraces(t, exportertest.NewNopSettings(metadata.Type), cfg)
			err := exp.ConsumeTraces(context.Background(), otlparrowtest.Traces(otlparrowtest.Sent, 5))
			require.Error(t, err)
			assert.Equal(t, tt.permanent, consumererror.IsPermanent(err), "%v", err)
			if tt.code != codes.OK {
				assert.Equal(t, tt.code, status.Code(errors.Unwrap(err)), "%v", err)
			}
			if !tt.permanent {
				var partial consumererror.Traces
				require.ErrorAs(t, err, &partial)
				assert.Equal(t, tt.remaining, partial.Data().SpanCount())
			}
		})
	}
}

// TestRetryInfoDelaysTheRetry: a RetryInfo detail becomes exporterhelper's
// throttle error, whose delay the retry waits for at least.
func TestRetryInfoDelaysTheRetry(t *testing.T) {
	fake, addr := startFake(t)
	fake.failCode, fake.failAt, fake.failures = codes.ResourceExhausted, 0, 1
	fake.retryDelay = 300 * time.Millisecond

	noRetry := startTraces(t, exportertest.NewNopSettings(metadata.Type), testConfig(addr, 7))
	err := noRetry.ConsumeTraces(context.Background(), otlparrowtest.Traces(otlparrowtest.Sent, 5))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Throttle (300ms)")

	fake.failures = 1
	cfg := testConfig(addr, 7)
	cfg.BackOffConfig.Enabled = true
	cfg.BackOffConfig.InitialInterval = time.Millisecond
	cfg.BackOffConfig.MaxInterval = time.Millisecond
	begin := time.Now()
	require.NoError(t, startTraces(t, exportertest.NewNopSettings(metadata.Type), cfg).
		ConsumeTraces(context.Background(), otlparrowtest.Traces(otlparrowtest.Sent, 5)))
	assert.GreaterOrEqual(t, time.Since(begin), fake.retryDelay)
	assert.EqualValues(t, 20, fake.rowsOf("testdb/traces"))
}

// TestRetryCompletesWithoutDuplicates lets exporterhelper retry after
// failures in the middle of a push: the sidecar ends with every span once.
func TestRetryCompletesWithoutDuplicates(t *testing.T) {
	tests := []struct {
		name string
		code codes.Code
	}{
		{name: "unavailable", code: codes.Unavailable},
		{name: "resource exhausted", code: codes.ResourceExhausted},
		{name: "deadline exceeded", code: codes.DeadlineExceeded},
		{name: "aborted", code: codes.Aborted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, addr := startFake(t)
			fake.failCode, fake.failAt, fake.failures = tt.code, 1, 2
			cfg := testConfig(addr, 7)
			cfg.BackOffConfig.Enabled = true
			cfg.BackOffConfig.InitialInterval = time.Millisecond
			cfg.BackOffConfig.MaxInterval = time.Millisecond
			exp := startTraces(t, exportertest.NewNopSettings(metadata.Type), cfg)
			require.NoError(t, exp.ConsumeTraces(context.Background(), otlparrowtest.Traces(otlparrowtest.Sent, 5)))
			assert.EqualValues(t, 20, fake.rowsOf("testdb/traces"))
			assert.Equal(t, []int64{7, 7, 6}, fake.batchesOf("testdb/traces"))
		})
	}
}

// TestQueuedPushesDrainOnShutdown runs the default configuration, queue and
// batcher included: every request arrives, in batches of at most
// batch_size.
func TestQueuedPushesDrainOnShutdown(t *testing.T) {
	fake, addr := startFake(t)
	cfg := createDefaultConfig().(*Config)
	cfg.Endpoint = addr
	cfg.TLS.Insecure = true
	exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	const pushes, spans = 60, 20
	for range pushes {
		require.NoError(t, exp.ConsumeTraces(context.Background(), otlparrowtest.RealisticTraces(spans)))
	}
	require.NoError(t, exp.Shutdown(context.Background()))
	assert.EqualValues(t, pushes*spans, fake.rowsOf("default/traces"))
	for _, rows := range fake.batchesOf("default/traces") {
		assert.LessOrEqual(t, rows, int64(defaultBatchSize))
	}
}

// TestSmallRequestIsNotHeldForCompany: with the default queue a client's
// request is answered once its rows are acknowledged, so a request smaller
// than batch_size must go out at once rather than wait for others to fill
// a batch. With a flush_timeout of an hour, a request held for company
// would outlive the test's deadline. A request larger than batch_size is
// cut into batches of at most batch_size, all acknowledged before the
// answer.
func TestSmallRequestIsNotHeldForCompany(t *testing.T) {
	for _, tt := range []struct {
		name  string
		spans int
		want  []int64
	}{
		{"an OTel SDK's batch of 512 spans", 512, []int64{512}},
		{"a single span", 1, []int64{1}},
		{"more than batch_size", 2500, []int64{500, 1000, 1000}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake, addr := startFake(t)
			cfg := createDefaultConfig().(*Config)
			cfg.Endpoint = addr
			cfg.TLS.Insecure = true
			cfg.QueueConfig.Get().Batch.Get().FlushTimeout = time.Hour
			exp := startTraces(t, exportertest.NewNopSettings(metadata.Type), cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			require.NoError(t, exp.ConsumeTraces(ctx, otlparrowtest.RealisticTraces(tt.spans)))
			got := fake.batchesOf("default/traces")
			slices.Sort(got)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestOversizedBatchIsPermanent: a batch over the server's message size
// limit is refused the same way on every retry.
func TestOversizedBatchIsPermanent(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(1 << 10))
	flight.RegisterFlightServiceServer(gs, &fakeSidecar{batches: map[string][]int64{}, failAt: -1})
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)

	cfg := testConfig(lis.Addr().String(), 1000)
	cfg.BackOffConfig.Enabled = true
	exp := startTraces(t, exportertest.NewNopSettings(metadata.Type), cfg)
	err = exp.ConsumeTraces(context.Background(), otlparrowtest.RealisticTraces(100))
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err), "%v", err)
	assert.Contains(t, err.Error(), "lower batch_size")
}

func TestTelemetry(t *testing.T) {
	fake, addr := startFake(t)
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	exp := startTraces(t, metadatatest.NewSettings(tel), testConfig(addr, 7))
	require.NoError(t, exp.ConsumeTraces(context.Background(), otlparrowtest.Traces(otlparrowtest.Sent, 5)))

	// The second push continues the first's stream: its batch 1 is the
	// stream's batch 4.
	fake.failCode, fake.failAt, fake.failures = codes.Unavailable, 4, 1
	require.Error(t, exp.ConsumeTraces(context.Background(), otlparrowtest.Traces(otlparrowtest.Sent, 5)))
	assert.Equal(t, []string{"testdb/traces"}, fake.streamsSeen())

	traces := attribute.NewSet(attribute.String("exporter", "arc"), attribute.String("table", "traces"))
	// 3 batches of the first push, 1 acknowledged of the second.
	metadatatest.AssertEqualExporterArcBatchesSent(t, tel,
		[]metricdata.DataPoint[int64]{{Attributes: traces, Value: 4}}, metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
	metadatatest.AssertEqualExporterArcRowsSent(t, tel,
		[]metricdata.DataPoint[int64]{{Attributes: traces, Value: 27}}, metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
	m, err := tel.GetMetric("otelcol_exporter_arc_put_duration")
	require.NoError(t, err)
	h, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok)
	require.Len(t, h.DataPoints, 1)
	assert.Equal(t, traces, h.DataPoints[0].Attributes)
	assert.EqualValues(t, 2, h.DataPoints[0].Count, "failed streams are timed too")
}

// TestStreamsAreReusedAcrossPushes: every push of a table goes on the same
// long-lived stream (one per table here, with one push at a time), whose
// acknowledgements continue its sequence.
func TestStreamsAreReusedAcrossPushes(t *testing.T) {
	fake, addr := startFake(t)
	cfg := testConfig(addr, 7)
	set := exportertest.NewNopSettings(metadata.Type)
	traces := startTraces(t, set, cfg)
	logs, err := NewFactory().CreateLogs(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, logs.Start(context.Background(), componenttest.NewNopHost()))
	for range 5 {
		require.NoError(t, traces.ConsumeTraces(context.Background(), otlparrowtest.Traces(otlparrowtest.Sent, 5)))
		require.NoError(t, logs.ConsumeLogs(context.Background(), otlparrowtest.RealisticLogs(10)))
	}
	require.NoError(t, logs.Shutdown(context.Background()))
	assert.EqualValues(t, 100, fake.rowsOf("testdb/traces"))
	assert.EqualValues(t, 50, fake.rowsOf("testdb/logs"))
	assert.ElementsMatch(t, []string{"testdb/traces", "testdb/logs"}, fake.streamsSeen())
}

// TestEndedStreamIsReplaced: a pooled stream the sidecar ended while it was
// idle (it restarted, or is shutting down) is replaced by a new stream at
// once, without an error for the push and without sending anything twice.
func TestEndedStreamIsReplaced(t *testing.T) {
	fake, addr := startFake(t)
	fake.endAfter = 3 // every stream ends after the first push's 3 batches
	exp := startTraces(t, exportertest.NewNopSettings(metadata.Type), testConfig(addr, 7))
	for range 3 {
		require.NoError(t, exp.ConsumeTraces(context.Background(), otlparrowtest.Traces(otlparrowtest.Sent, 5)))
	}
	assert.EqualValues(t, 60, fake.rowsOf("testdb/traces"))
	assert.Equal(t, []int64{7, 7, 6, 7, 7, 6, 7, 7, 6}, fake.batchesOf("testdb/traces"))
	assert.Len(t, fake.streamsSeen(), 3)
}

// TestStreamsAreConcurrent: pushes running at once each get their own
// stream, and every row arrives once.
func TestStreamsAreConcurrent(t *testing.T) {
	fake, addr := startFake(t)
	exp := startTraces(t, exportertest.NewNopSettings(metadata.Type), testConfig(addr, 7))
	const pushers, pushes = 4, 10
	var wg sync.WaitGroup
	for range pushers {
		wg.Go(func() {
			for range pushes {
				assert.NoError(t, exp.ConsumeTraces(context.Background(), otlparrowtest.Traces(otlparrowtest.Sent, 5)))
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, pushers*pushes*20, fake.rowsOf("testdb/traces"))
	assert.LessOrEqual(t, len(fake.streamsSeen()), pushers)
}

// TestIdleStreamsAge: a stream idle for longer than maxIdle is closed
// instead of reused, and the most recently used stream is taken first.
func TestIdleStreamsAge(t *testing.T) {
	_, addr := startFake(t)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := flight.NewClientFromConn(conn, nil)
	open := func() *putStream {
		s, err := openStream(context.Background(), client, memory.DefaultAllocator, "testdb", schema.Traces)
		require.NoError(t, err)
		return s
	}
	var pool streamPool
	defer pool.close()
	now := time.Now()
	old, recent := open(), open()
	pool.put(old, now)
	pool.put(recent, now.Add(maxIdle))
	assert.Same(t, recent, pool.take(schema.Traces, now.Add(maxIdle)), "most recently used first")
	pool.put(recent, now.Add(maxIdle))
	assert.Same(t, recent, pool.take(schema.Traces, now.Add(maxIdle+time.Second)), "the old stream is closed, not taken")
	assert.Nil(t, pool.take(schema.Traces, now.Add(maxIdle+time.Second)))
	assert.ErrorIs(t, old.stream.Context().Err(), context.Canceled, "the aged stream was closed")
	assert.NoError(t, recent.stream.Context().Err())
	recent.close()
}

// A converter goes back to its pool only once the batches it emitted are
// released: their buffers come back to it then, and a push that took it
// earlier, while they were in flight, allocated new ones.
func TestConverterReturnsWithItsBatches(t *testing.T) {
	pool := &sync.Pool{New: func() any { return otlparrow.NewTracesConverter(memory.DefaultAllocator, 10) }}
	td := otlparrowtest.Traces(otlparrowtest.Sent, 5)
	var b batches
	var used *otlparrow.TracesConverter
	require.NoError(t, converted(pool, &b, func(c *otlparrow.TracesConverter, emit otlparrow.Emit) error {
		used = c
		return c.Convert(td, emit)
	}))
	require.Len(t, b.recs, 1)
	for range 3 {
		other := pool.Get().(*otlparrow.TracesConverter)
		assert.True(t, used != other, "a converter whose batches are held was handed out")
		defer other.Release()
	}
	b.release() // puts used back (under -race, sync.Pool drops some puts)
}

// stalledSidecar takes DoPut streams and reads nothing from them, as a
// sidecar whose disk hangs or a link that drops every packet looks to
// the exporter once the flow-control windows are full.
type stalledSidecar struct{ flight.BaseFlightServer }

func (*stalledSidecar) DoPut(stream flight.FlightService_DoPutServer) error {
	<-stream.Context().Done()
	return stream.Context().Err()
}

// TestTimeoutEndsAPushBlockedOnFlowControl: a push of more batches than
// the stream's flow-control window holds ends at its timeout with a
// retryable error, even while a batch is still being written (without a
// sending_queue batcher, a request larger than batch_size is several
// batches of one table on one stream).
func TestTimeoutEndsAPushBlockedOnFlowControl(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// Fixed 64 KiB windows: no BDP estimate grows them past the test's data.
	gs := grpc.NewServer(grpc.InitialWindowSize(64<<10), grpc.InitialConnWindowSize(64<<10))
	flight.RegisterFlightServiceServer(gs, &stalledSidecar{})
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()

	cfg := testConfig(lis.Addr().String(), 100)
	cfg.TimeoutConfig.Timeout = 300 * time.Millisecond
	exp := startTraces(t, exportertest.NewNopSettings(metadata.Type), cfg)
	td := otlparrowtest.RealisticTraces(3000) // 30 batches, a few MiB
	done := make(chan error, 1)
	go func() { done <- exp.ConsumeTraces(context.Background(), td) }()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.False(t, consumererror.IsPermanent(err), "%v", err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		var partial consumererror.Traces
		require.ErrorAs(t, err, &partial)
		assert.Equal(t, td.SpanCount(), partial.Data().SpanCount(), "nothing was acknowledged")
	case <-time.After(10 * time.Second):
		gs.Stop() // ends the push, so that the exporter can shut down
		<-done
		t.Fatal("the push outlived its 300 ms timeout by 10 s")
	}
}

// TestRowsTimedOutOfRangeAreDroppedAlone: the sidecar refuses a batch
// holding a row over a year ahead (a unit mix-up in a client); the
// exporter drops those rows and sends the rest of the push again, instead
// of dropping every row of the push with them.
func TestRowsTimedOutOfRangeAreDroppedAlone(t *testing.T) {
	future := pcommon.NewTimestampFromTime(time.Now().Add(3 * 365 * 24 * time.Hour))
	tests := []struct {
		name    string
		keys    []string
		consume func(t *testing.T, set exporter.Settings, cfg *Config) error
		sent    int64
	}{
		{"traces", []string{"testdb/traces"}, func(t *testing.T, set exporter.Settings, cfg *Config) error {
			td := otlparrowtest.Traces(otlparrowtest.Sent, 5) // 20 spans
			td.ResourceSpans().At(1).ScopeSpans().At(0).Spans().At(2).SetStartTimestamp(future)
			return startTraces(t, set, cfg).ConsumeTraces(context.Background(), td)
		}, 19},
		{"logs", []string{"testdb/logs", "testdb/events"}, func(t *testing.T, set exporter.Settings, cfg *Config) error {
			ld := otlparrowtest.RealisticLogs(20)
			lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
			lr := lrs.At(lrs.Len() - 1)
			lr.SetTimestamp(0)
			lr.SetObservedTimestamp(future)
			exp, err := NewFactory().CreateLogs(context.Background(), set, cfg)
			require.NoError(t, err)
			require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
			defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()
			return exp.ConsumeLogs(context.Background(), ld)
		}, 19},
		{"metrics", []string{"testdb/metrics"}, func(t *testing.T, set exporter.Settings, cfg *Config) error {
			md := otlparrowtest.Metrics(otlparrowtest.Sent, 2)
			md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().At(0).SetTimestamp(future)
			exp, err := NewFactory().CreateMetrics(context.Background(), set, cfg)
			require.NoError(t, err)
			require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
			defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()
			return exp.ConsumeMetrics(context.Background(), md)
		}, int64(otlparrowtest.Metrics(otlparrowtest.Sent, 2).DataPointCount() - 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, addr := startFake(t)
			fake.checkTime = true
			cfg := testConfig(addr, 7)
			cfg.BackOffConfig.Enabled = true
			cfg.BackOffConfig.InitialInterval = time.Millisecond
			cfg.BackOffConfig.MaxInterval = time.Millisecond
			require.NoError(t, tt.consume(t, exportertest.NewNopSettings(metadata.Type), cfg))
			var rows int64
			for _, key := range tt.keys {
				rows += fake.rowsOf(key)
			}
			assert.Equal(t, tt.sent, rows, "every row but the one out of range, once")
		})
	}
}

// TestRefusedTimeNoRowDropsIsPermanent: when the sidecar refuses a time
// the exporter finds in range (the sidecar's clock is behind), the push
// fails for good rather than being sent again for ever.
func TestRefusedTimeNoRowDropsIsPermanent(t *testing.T) {
	fake, addr := startFake(t)
	fake.failCode, fake.failAt, fake.failures = codes.InvalidArgument, 0, 1
	fake.timeDetail = true
	err := startTraces(t, exportertest.NewNopSettings(metadata.Type), testConfig(addr, 7)).
		ConsumeTraces(context.Background(), otlparrowtest.Traces(otlparrowtest.Sent, 5))
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err), "%v", err)
}
