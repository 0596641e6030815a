package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// sdkSent is what sendWithSDK sent, for the assertions.
type sdkSent struct {
	traceID string // of the request trace: a server span and its child
	linkTo  string // trace the child span links to
}

var sdkResource = resource.NewSchemaless(
	attribute.String("service.name", "e2e-sdk"),
	attribute.String("deployment.environment.name", "test"),
	attribute.String("cloud.region", "eu-west-1"),
	attribute.String("host.name", "e2e-host"),
)

// sendWithSDK sends spans with events and links, logs with map and bytes
// bodies and an event, and metrics of the four types an SDK produces (the
// fifth, summary, only comes from bridges; the raw OTLP test covers it).
func sendWithSDK(t *testing.T, endpoint string) sdkSent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var sent sdkSent

	texp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure())
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(texp), sdktrace.WithResource(sdkResource))
	tracer := tp.Tracer("e2e", trace.WithInstrumentationVersion("1.2.3"))
	_, other := tracer.Start(ctx, "background-job")
	other.End()
	sent.linkTo = other.SpanContext().TraceID().String()
	rctx, server := tracer.Start(ctx, "GET /orders", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", "GET"), attribute.Int("http.response.status_code", 503),
			attribute.StringSlice("tags", []string{"a", "b"})))
	sent.traceID = server.SpanContext().TraceID().String()
	_, child := tracer.Start(rctx, "SELECT orders", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithLinks(trace.Link{SpanContext: other.SpanContext(), Attributes: []attribute.KeyValue{attribute.String("link.kind", "follows")}}))
	child.AddEvent("retry", trace.WithAttributes(attribute.Int("attempt", 2)))
	child.SetStatus(codes.Error, "pool exhausted")
	child.End()
	server.End()
	require.NoError(t, tp.Shutdown(ctx))

	lexp, err := otlploggrpc.New(ctx, otlploggrpc.WithEndpoint(endpoint), otlploggrpc.WithInsecure())
	require.NoError(t, err)
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewSimpleProcessor(lexp)), sdklog.WithResource(sdkResource))
	logger := lp.Logger("e2e")
	emit := func(body attribute.Value, sev otellog.Severity, event string) {
		var r otellog.Record
		r.SetTimestamp(time.Now())
		r.SetBody(body)
		r.SetSeverity(sev)
		r.SetEventName(event)
		r.AddAttributes(attribute.String("user", "bob"))
		logger.Emit(ctx, r)
	}
	emit(attribute.MapValue(attribute.String("order", "o-1"), attribute.Int("items", 3)), otellog.SeverityError, "")
	emit(attribute.ByteSliceValue([]byte{0xff, 0x00, 0x01}), otellog.SeverityInfo, "")
	emit(attribute.MapValue(attribute.String("campaign", "black-friday")), otellog.SeverityInfo, "marketing_campaign_started")
	require.NoError(t, lp.Shutdown(ctx))

	mexp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(endpoint), otlpmetricgrpc.WithInsecure())
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(sdkResource),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp, sdkmetric.WithInterval(time.Hour))),
		sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Name: "e2e.latency.exp"},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 20}})))
	meter := mp.Meter("e2e")
	counter, _ := meter.Int64Counter("e2e.requests")
	counter.Add(ctx, 7, metric.WithAttributes(attribute.String("route", "/orders")))
	updown, _ := meter.Float64UpDownCounter("e2e.inflight")
	updown.Add(ctx, -2.5)
	gauge, _ := meter.Int64Gauge("e2e.temperature")
	gauge.Record(ctx, 42)
	hist, _ := meter.Float64Histogram("e2e.latency")
	exp, _ := meter.Float64Histogram("e2e.latency.exp")
	for _, v := range []float64{1, 20, 300} {
		hist.Record(ctx, v)
		exp.Record(ctx, v)
	}
	require.NoError(t, mp.Shutdown(ctx))
	return sent
}
