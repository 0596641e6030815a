// Package campaign generates the specification's demo story as OTLP: 90
// minutes of an online shop seen through traces, logs, metrics and events.
// Baseline traffic for 30 minutes; a marketing campaign starts and traffic
// quadruples; the gateway autoscales; the order database's connection pool
// runs out and requests fail for 10 minutes; it recovers; the campaign ends
// and traffic returns to baseline. docs/QUERIES.md asks questions of it.
package campaign

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Story times, as offsets from its start.
const (
	Length          = 90 * time.Minute
	CampaignStart   = 30 * time.Minute
	AutoscaleAt     = 35 * time.Minute
	PoolExhausted   = 40 * time.Minute
	PoolRecovered   = 50 * time.Minute
	CampaignEnd     = 60 * time.Minute
	baselinePerMin  = 20
	campaignPerMin  = 80
	poolSize        = 100
	gatewayBaseline = 2
	gatewayScaled   = 6
)

// Event names, as OTel log records' event_name (the events table's
// event_type).
const (
	EventCampaignStarted = "marketing_campaign_started"
	EventAutoscale       = "autoscale_triggered"
	EventAlert           = "alert_triggered"
	EventAlertResolved   = "alert_resolved"
	EventCampaignEnded   = "marketing_campaign_ended"
)

// Story is the generated telemetry, in per-minute batches.
type Story struct {
	Start   time.Time
	Traces  []ptrace.Traces
	Logs    []plog.Logs // includes the events
	Metrics []pmetric.Metrics
	// Counts of rows per table the story makes.
	Spans, LogRecords, Events, Points int
}

// Generate builds the story starting at start, deterministically for seed.
func Generate(start time.Time, seed uint64) *Story {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), s: &Story{Start: start}}
	for m := time.Duration(0); m < Length; m += time.Minute {
		g.minute(start, m)
	}
	return g.s
}

type gen struct {
	r *rand.Rand
	s *Story
}

func inAlert(m time.Duration) bool    { return m >= PoolExhausted && m < PoolRecovered }
func inCampaign(m time.Duration) bool { return m >= CampaignStart && m < CampaignEnd }

func (g *gen) minute(start time.Time, m time.Duration) {
	td, ld, md := ptrace.NewTraces(), plog.NewLogs(), pmetric.NewMetrics()
	requests := baselinePerMin
	if inCampaign(m) {
		requests = campaignPerMin
	}
	logs := newLogSink(ld)
	for i := 0; i < requests; i++ {
		at := start.Add(m + time.Duration(g.r.Int64N(int64(time.Minute))))
		g.request(td, logs, at, m)
	}
	g.events(logs, start, m)
	g.metrics(md, start.Add(m+59*time.Second), m, requests)
	g.s.Traces = append(g.s.Traces, td)
	g.s.Logs = append(g.s.Logs, ld)
	g.s.Metrics = append(g.s.Metrics, md)
}

func (g *gen) id16() (id pcommon.TraceID) {
	binary.BigEndian.PutUint64(id[:8], g.r.Uint64())
	binary.BigEndian.PutUint64(id[8:], g.r.Uint64())
	return id
}

func (g *gen) id8() (id pcommon.SpanID) {
	binary.BigEndian.PutUint64(id[:], g.r.Uint64())
	return id
}

// scopeSpans returns the span slice of a service in td, creating it.
func scopeSpans(td ptrace.Traces, service string) ptrace.SpanSlice {
	for i := range td.ResourceSpans().Len() {
		rs := td.ResourceSpans().At(i)
		if v, _ := rs.Resource().Attributes().Get("service.name"); v.Str() == service {
			return rs.ScopeSpans().At(0).Spans()
		}
	}
	rs := td.ResourceSpans().AppendEmpty()
	resource(rs.Resource(), service)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("shop")
	return ss.Spans()
}

func resource(r pcommon.Resource, service string) {
	a := r.Attributes()
	a.PutStr("service.name", service)
	a.PutStr("deployment.environment.name", "production")
	a.PutStr("cloud.region", "us-east-1")
}

// request is one checkout: gateway → order-service → (inventory,
// payment, the orders database).
func (g *gen) request(td ptrace.Traces, logs *logSink, at time.Time, m time.Duration) {
	traceID := g.id16()
	base := time.Duration(40+g.r.IntN(60)) * time.Millisecond
	if inCampaign(m) {
		base += time.Duration(60+g.r.IntN(120)) * time.Millisecond
	}
	failed := inAlert(m) && g.r.IntN(100) < 35
	dbWait := time.Duration(2+g.r.IntN(8)) * time.Millisecond
	if inAlert(m) {
		dbWait = time.Duration(800+g.r.IntN(2200)) * time.Millisecond
	}
	total := base + dbWait + 30*time.Millisecond
	status := int64(201)
	if failed {
		status = 503
	}
	root := g.span(scopeSpans(td, "api-gateway"), traceID, pcommon.SpanID{}, "POST /api/orders", ptrace.SpanKindServer, at, total, failed, status)
	root.Attributes().PutStr("http.request.method", "POST")
	order := g.span(scopeSpans(td, "order-service"), traceID, root.SpanID(), "CreateOrder", ptrace.SpanKindServer,
		at.Add(5*time.Millisecond), total-10*time.Millisecond, failed, status)
	inv := g.span(scopeSpans(td, "inventory-service"), traceID, order.SpanID(), "ReserveStock", ptrace.SpanKindServer,
		at.Add(8*time.Millisecond), base/3, false, 200)
	db := g.span(scopeSpans(td, "order-service"), traceID, order.SpanID(), "INSERT orders", ptrace.SpanKindClient,
		at.Add(10*time.Millisecond+base/3), dbWait, failed, 0)
	db.Attributes().PutStr("db.system.name", "postgresql")
	db.Attributes().PutStr("service.peer.name", "orders-db")
	g.s.Spans += 4
	_ = inv
	if !failed {
		g.span(scopeSpans(td, "payment-service"), traceID, order.SpanID(), "ChargeCard", ptrace.SpanKindServer,
			at.Add(12*time.Millisecond+base/3+dbWait), base/2, false, 200)
		g.s.Spans++
		logs.add("order-service", at.Add(total), plog.SeverityNumberInfo, "order created", traceID, order.SpanID(), "")
	} else {
		logs.add("order-service", at.Add(total), plog.SeverityNumberError,
			fmt.Sprintf("connection pool exhausted: %d/%d connections in use, waited %s", poolSize, poolSize, dbWait.Round(time.Millisecond)),
			traceID, db.SpanID(), "")
	}
	g.s.LogRecords++
	if inCampaign(m) && total > 300*time.Millisecond && !failed {
		logs.add("api-gateway", at.Add(total), plog.SeverityNumberWarn, "slow request: "+total.Round(time.Millisecond).String(), traceID, root.SpanID(), "")
		g.s.LogRecords++
	}
}

func (g *gen) span(spans ptrace.SpanSlice, traceID pcommon.TraceID, parent pcommon.SpanID, name string, kind ptrace.SpanKind,
	start time.Time, d time.Duration, failed bool, status int64) ptrace.Span {
	sp := spans.AppendEmpty()
	sp.SetTraceID(traceID)
	sp.SetSpanID(g.id8())
	sp.SetParentSpanID(parent)
	sp.SetName(name)
	sp.SetKind(kind)
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(d)))
	if status != 0 {
		sp.Attributes().PutInt("http.response.status_code", status)
	}
	if failed {
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage("connection pool exhausted")
	}
	return sp
}

// events are the story's turning points, as log records with an event name.
func (g *gen) events(logs *logSink, start time.Time, m time.Duration) {
	type ev struct {
		at                 time.Duration
		name, service, msg string
		category, severity string
	}
	for _, e := range []ev{
		{CampaignStart, EventCampaignStarted, "marketing", "Black Friday campaign email sent to 2M users", "business", "info"},
		{AutoscaleAt, EventAutoscale, "api-gateway", fmt.Sprintf("scaled api-gateway from %d to %d instances", gatewayBaseline, gatewayScaled), "infrastructure", "info"},
		{PoolExhausted, EventAlert, "orders-db", "database connection pool exhausted", "infrastructure", "critical"},
		{PoolRecovered, EventAlertResolved, "orders-db", "database connection pool back under 80 %", "infrastructure", "info"},
		{CampaignEnd, EventCampaignEnded, "marketing", "Black Friday campaign ended", "business", "info"},
	} {
		if e.at != m {
			continue
		}
		lr := logs.add(e.service, start.Add(e.at), plog.SeverityNumberInfo, e.msg, pcommon.TraceID{}, pcommon.SpanID{}, e.name)
		lr.Attributes().PutStr("event.category", e.category)
		lr.Attributes().PutStr("event.severity", e.severity)
		g.s.Events++
	}
}

func (g *gen) metrics(md pmetric.Metrics, at time.Time, m time.Duration, requests int) {
	instances := gatewayBaseline
	if m >= AutoscaleAt && inCampaign(m) {
		instances = gatewayScaled
	}
	ts := pcommon.NewTimestampFromTime(at)
	for i := 0; i < instances; i++ {
		rm := md.ResourceMetrics().AppendEmpty()
		resource(rm.Resource(), "api-gateway")
		rm.Resource().Attributes().PutStr("host.name", fmt.Sprintf("gateway-%d", i+1))
		ms := rm.ScopeMetrics().AppendEmpty().Metrics()
		cpu := 20 + g.r.Float64()*15
		switch {
		case inCampaign(m) && m < AutoscaleAt:
			cpu = 88 + g.r.Float64()*10 // two instances carry four times the load
		case inCampaign(m):
			cpu = 45 + g.r.Float64()*20
		}
		gauge(ms, "system.cpu.utilization", "%", ts, cpu)
		sum := ms.AppendEmpty()
		sum.SetName("http.server.requests")
		sum.SetUnit("{request}")
		s := sum.SetEmptySum()
		s.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
		s.SetIsMonotonic(true)
		dp := s.DataPoints().AppendEmpty()
		dp.SetStartTimestamp(pcommon.NewTimestampFromTime(at.Add(-time.Minute)))
		dp.SetTimestamp(ts)
		dp.SetIntValue(int64(requests / instances))
		g.s.Points += 2
	}
	rm := md.ResourceMetrics().AppendEmpty()
	resource(rm.Resource(), "order-service")
	used := float64(10 + g.r.IntN(20))
	switch {
	case inAlert(m):
		used = poolSize
	case inCampaign(m):
		used = float64(50 + g.r.IntN(25))
	}
	gauge(rm.ScopeMetrics().AppendEmpty().Metrics(), "db.client.connection.count", "{connection}", ts, used)
	g.s.Points++
}

func gauge(ms pmetric.MetricSlice, name, unit string, ts pcommon.Timestamp, v float64) {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(ts)
	dp.SetDoubleValue(v)
}

// logSink groups log records by service.
type logSink struct {
	ld  plog.Logs
	ofs map[string]plog.LogRecordSlice
}

func newLogSink(ld plog.Logs) *logSink {
	return &logSink{ld: ld, ofs: map[string]plog.LogRecordSlice{}}
}

func (l *logSink) add(service string, at time.Time, sev plog.SeverityNumber, msg string, traceID pcommon.TraceID, spanID pcommon.SpanID, event string) plog.LogRecord {
	recs, ok := l.ofs[service]
	if !ok {
		rl := l.ld.ResourceLogs().AppendEmpty()
		resource(rl.Resource(), service)
		sl := rl.ScopeLogs().AppendEmpty()
		sl.Scope().SetName("shop")
		recs = sl.LogRecords()
		l.ofs[service] = recs
	}
	lr := recs.AppendEmpty()
	lr.SetTimestamp(pcommon.NewTimestampFromTime(at))
	lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(at))
	lr.SetSeverityNumber(sev)
	lr.Body().SetStr(msg)
	lr.SetTraceID(traceID)
	lr.SetSpanID(spanID)
	lr.SetEventName(event)
	return lr
}
