package arcexporter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/arc-otel/arc-otel/exporter/arcexporter/internal/metadata"
	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/schema"
)

type arcExporter struct {
	cfg    *Config
	set    exporter.Settings
	mem    memory.Allocator
	tel    *metadata.TelemetryBuilder
	conn   *grpc.ClientConn
	client flight.Client
	pool   streamPool
	runner *runner // runs pushes on goroutines whose stacks already grew

	// attrs holds the precomputed attributes of each table's measurements,
	// so recording telemetry allocates nothing per push.
	attrs map[*schema.Table]metric.MeasurementOption

	traces, logs, metrics sync.Pool
}

func newExporter(cfg *Config, set exporter.Settings) (*arcExporter, error) {
	tel, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("create telemetry: %w", err)
	}
	e := &arcExporter{cfg: cfg, set: set, mem: memory.DefaultAllocator, tel: tel, runner: newRunner(), attrs: map[*schema.Table]metric.MeasurementOption{}}
	for _, name := range schema.Names() {
		t, _ := schema.Lookup(name)
		e.attrs[t] = metric.WithAttributeSet(attribute.NewSet(
			attribute.String("exporter", set.ID.String()), attribute.String("table", t.Name)))
	}
	e.traces.New = func() any { return otlparrow.NewTracesConverter(e.mem, cfg.BatchSize) }
	e.logs.New = func() any { return otlparrow.NewLogsConverter(e.mem, cfg.BatchSize) }
	e.metrics.New = func() any { return otlparrow.NewMetricsConverter(e.mem, cfg.BatchSize) }
	if persistentBatching(cfg) {
		set.Logger.Warn("sending_queue has storage and batch: after a collector crash, requests the sidecar stored but the queue had not yet released come back merged with other neighbours, as batches the sidecar cannot recognise, and are stored twice; set sending_queue::batch::enabled: false for exactly once")
	}
	return e, nil
}

// persistentBatching reports a persistent queue whose batcher merges
// requests after they left it.
func persistentBatching(cfg *Config) bool {
	if !cfg.QueueConfig.HasValue() {
		return false
	}
	q := cfg.QueueConfig.Get()
	return q.StorageID != nil && q.Batch.HasValue()
}

func (e *arcExporter) start(ctx context.Context, host component.Host) error {
	conn, err := e.cfg.ClientConfig.ToClientConn(ctx, host.GetExtensions(), e.set.TelemetrySettings)
	if err != nil {
		return fmt.Errorf("connect to sidecar: %w", err)
	}
	e.conn = conn
	e.client = flight.NewClientFromConn(conn, nil)
	return nil
}

func (e *arcExporter) shutdown(context.Context) error {
	e.runner.close()
	e.pool.close()
	e.tel.Shutdown()
	if e.conn == nil {
		return nil
	}
	return e.conn.Close()
}

// batches are the record batches of one push, by table, in the order the
// converter emitted them.
type batches struct {
	tables []*schema.Table
	recs   [][]arrow.RecordBatch
	// conv, the converter that emitted recs, goes back to pool only once
	// they are released: their buffers then come back to it (see
	// otlparrow's recycler), and the next push it converts reuses them.
	// Back in the pool earlier, it was taken by a push while its buffers
	// were still in flight and allocated new ones (a tenth of the
	// collector's allocations under the traces load).
	pool *sync.Pool
	conv any
}

func (b *batches) add(t *schema.Table, rec arrow.RecordBatch) error {
	for i, bt := range b.tables {
		if bt == t {
			b.recs[i] = append(b.recs[i], rec)
			return nil
		}
	}
	b.tables = append(b.tables, t)
	b.recs = append(b.recs, []arrow.RecordBatch{rec})
	return nil
}

func (b *batches) release() {
	for _, recs := range b.recs {
		for _, r := range recs {
			r.Release()
		}
	}
	if b.pool != nil {
		b.pool.Put(b.conv)
	}
}

// sendFailure says how far a push got: every batch of the tables before
// table was acknowledged, and acked batches of table.
type sendFailure struct {
	err   error
	table *schema.Table
	acked int
}

// send writes the tables in order and stops at the first failure.
func (e *arcExporter) send(ctx context.Context, b *batches) *sendFailure {
	for i, t := range b.tables {
		acked, err := e.put(ctx, t, b.recs[i])
		if err != nil {
			return &sendFailure{err: err, table: t, acked: acked}
		}
	}
	return nil
}

// put writes the batches of one table on a long-lived DoPut stream of
// that table and returns how many the sidecar acknowledged. A stream from
// the pool that the sidecar ended while it was idle (a restart, a
// shutdown) is replaced by a new one at once (see staleStream).
func (e *arcExporter) put(ctx context.Context, t *schema.Table, recs []arrow.RecordBatch) (int, error) {
	begin := time.Now()
	s := e.pool.take(t, begin)
	acked, err := e.putOnce(ctx, t, recs, s)
	if s != nil && acked == 0 && staleStream(err) && ctx.Err() == nil {
		acked, err = e.putOnce(ctx, t, recs, nil)
	}
	if err == nil && acked != len(recs) {
		err = fmt.Errorf("sidecar acknowledged %d of %d batches of %s", acked, len(recs), t.Name)
	}
	e.record(ctx, t, recs[:acked], time.Since(begin))
	return acked, err
}

// putOnce sends recs on s, or on a new stream when s is nil, and returns
// the stream to the pool only if every batch was acknowledged.
func (e *arcExporter) putOnce(ctx context.Context, t *schema.Table, recs []arrow.RecordBatch, s *putStream) (int, error) {
	if s == nil {
		var err error
		if s, err = openStream(ctx, e.client, e.mem, e.cfg.Database, t); err != nil {
			return 0, err
		}
	}
	acked, err := s.send(ctx, recs)
	if err != nil || !s.healthy() {
		s.close()
		return acked, err
	}
	e.pool.put(s, time.Now())
	return acked, nil
}

func (e *arcExporter) record(ctx context.Context, t *schema.Table, acked []arrow.RecordBatch, took time.Duration) {
	// The push's context may be cancelled by now; measurements must not be.
	ctx = context.WithoutCancel(ctx)
	attrs := e.attrs[t]
	e.tel.ExporterArcPutDuration.Record(ctx, took.Seconds(), attrs)
	if len(acked) == 0 {
		return
	}
	var rows int64
	for _, rec := range acked {
		rows += rec.NumRows()
	}
	e.tel.ExporterArcBatchesSent.Add(ctx, int64(len(acked)), attrs)
	e.tel.ExporterArcRowsSent.Add(ctx, rows, attrs)
}

// classify turns a sidecar error into what exporterhelper acts on: data the
// sidecar refused as invalid is permanent, overload and outages are retried
// (after the server's hint when it sent one).
func classify(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	switch st.Code() {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange, codes.Unimplemented,
		codes.Unauthenticated, codes.PermissionDenied, codes.NotFound, codes.AlreadyExists:
		return consumererror.NewPermanent(err)
	case codes.ResourceExhausted:
		// gRPC refuses a message over the server's size limit with the
		// code of overload; the same batch is refused on every retry, and
		// retrying it forever would hold a queue consumer for good.
		if strings.Contains(st.Message(), "message larger than max") {
			return consumererror.NewPermanent(fmt.Errorf("record batch over the sidecar's message size limit, lower batch_size: %w", err))
		}
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.RetryDelay != nil {
			return exporterhelper.NewThrottleRetry(err, ri.RetryDelay.AsDuration())
		}
	}
	return err
}

// push sends the batches convert emits and, on a retryable failure, hands
// exporterhelper only what was not acknowledged (partial builds that
// request from the tables already sent, the failed one and how many of its
// batches the sidecar acknowledged).
func (e *arcExporter) push(ctx context.Context, signal string, convert func(*batches) error,
	partial func(err error, f *sendFailure, sent []*schema.Table) error,
) (err error) {
	e.runner.run(func() { err = e.pushNow(ctx, signal, convert, partial) })
	return err
}

// pushNow is push on the calling goroutine.
func (e *arcExporter) pushNow(ctx context.Context, signal string, convert func(*batches) error,
	partial func(err error, f *sendFailure, sent []*schema.Table) error,
) error {
	var b batches
	defer b.release()
	if err := convert(&b); err != nil {
		return consumererror.NewPermanent(fmt.Errorf("convert %s: %w", signal, err))
	}
	f := e.send(ctx, &b)
	if f == nil {
		return nil
	}
	err := classify(f.err)
	if consumererror.IsPermanent(err) && !timeRefused(f.err) {
		return err
	}
	i := slices.Index(b.tables, f.table)
	return partial(err, f, b.tables[:i])
}

// timeRefused reports whether the sidecar refused a batch for a row's
// time (before 1970, or over a year ahead): its status names the time
// column in a BadRequest detail.
func timeRefused(err error) bool {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.InvalidArgument {
		return false
	}
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				if v.GetField() == schema.ColTime {
					return true
				}
			}
		}
	}
	return false
}

// withoutRefusedTimes answers a push whose batch the sidecar refused for
// a row's time: drop removes such rows from what is left to send (rest,
// built by partial) and returns how many it removed. Retrying the rest
// stores every other row of the push, which a permanent error would have
// dropped with them. When drop finds none (the sidecar's clock is ahead
// of the collector's), err stays permanent; any other failure's err is
// returned as it is.
func (e *arcExporter) withoutRefusedTimes(err error, f *sendFailure, what string, drop func(latest int64) int) error {
	if !timeRefused(f.err) {
		return err
	}
	n := drop(schema.LatestTime(time.Now()))
	if n == 0 {
		return err
	}
	e.set.Logger.Warn("dropped rows whose time the sidecar refuses; sending the rest again",
		zap.Int(what, n), zap.String("range", schema.TimeRange), zap.Error(f.err))
	return fmt.Errorf("dropped %d %s timed outside the accepted range (%s); the rest is sent again: %w", n, what, schema.TimeRange, f.err)
}

// converted runs convert with a converter from pool, emitting into b,
// which returns the converter to pool when it is released. A converter
// whose conversion failed may hold half-appended rows, so it is dropped
// rather than reused.
func converted[C interface{ Release() }](pool *sync.Pool, b *batches, convert func(C, otlparrow.Emit) error) error {
	c := pool.Get().(C)
	if err := convert(c, b.add); err != nil {
		c.Release()
		return err
	}
	b.pool, b.conv = pool, c
	return nil
}

func (e *arcExporter) pushTraces(ctx context.Context, td ptrace.Traces) error {
	return e.push(ctx, "traces",
		func(b *batches) error {
			return converted(&e.traces, b, func(c *otlparrow.TracesConverter, emit otlparrow.Emit) error { return c.Convert(td, emit) })
		},
		func(err error, f *sendFailure, _ []*schema.Table) error {
			rest := remainingTraces(td, f.acked*e.cfg.BatchSize)
			err = e.withoutRefusedTimes(err, f, "spans", func(latest int64) int { return dropLateSpans(rest, latest) })
			return consumererror.NewTraces(err, rest)
		})
}

func (e *arcExporter) pushLogs(ctx context.Context, ld plog.Logs) error {
	return e.push(ctx, "logs",
		func(b *batches) error {
			return converted(&e.logs, b, func(c *otlparrow.LogsConverter, emit otlparrow.Emit) error { return c.Convert(ld, emit) })
		},
		func(err error, f *sendFailure, sent []*schema.Table) error {
			rest := remainingLogs(ld, sent, f.table, f.acked*e.cfg.BatchSize)
			err = e.withoutRefusedTimes(err, f, "logs", func(latest int64) int { return dropLateLogs(rest, latest) })
			return consumererror.NewLogs(err, rest)
		})
}

func (e *arcExporter) pushMetrics(ctx context.Context, md pmetric.Metrics) error {
	return e.push(ctx, "metrics",
		func(b *batches) error {
			return converted(&e.metrics, b, func(c *otlparrow.MetricsConverter, emit otlparrow.Emit) error { return c.Convert(md, emit) })
		},
		func(err error, f *sendFailure, _ []*schema.Table) error {
			rest := remainingMetrics(md, f.acked*e.cfg.BatchSize)
			err = e.withoutRefusedTimes(err, f, "points", func(latest int64) int { return dropLatePoints(rest, latest) })
			return consumererror.NewMetrics(err, rest)
		})
}
