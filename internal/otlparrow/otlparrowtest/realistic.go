package otlparrowtest

import (
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The Realistic* functions shape data like a typical instrumented service
// (and like telemetrygen's): a few resources of about ten attributes, and
// records with a handful of semantic-convention attributes. Benchmarks use
// them; the every-field generators above are for correctness.

var services = []string{"api-gateway", "auth-service", "order-service", "payment-service", "inventory-service"}

func realisticResource(r pcommon.Resource, i int) {
	a := r.Attributes()
	a.PutStr("service.name", services[i%len(services)])
	a.PutStr("service.version", "1.4.2")
	a.PutStr("service.instance.id", fmt.Sprintf("instance-%d", i))
	a.PutStr("host.name", fmt.Sprintf("node-%d", i%20))
	a.PutStr("deployment.environment.name", "production")
	a.PutStr("cloud.region", "us-east-1")
	a.PutStr("cloud.provider", "aws")
	a.PutStr("telemetry.sdk.language", "go")
	a.PutStr("telemetry.sdk.name", "opentelemetry")
	a.PutStr("telemetry.sdk.version", "1.46.0")
}

const realisticResources = 4

// RealisticTraces returns n spans.
func RealisticTraces(n int) ptrace.Traces {
	td := ptrace.NewTraces()
	per := (n + realisticResources - 1) / realisticResources
	for r := 0; r < realisticResources && r*per < n; r++ {
		rs := td.ResourceSpans().AppendEmpty()
		realisticResource(rs.Resource(), r)
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp")
		ss.Scope().SetVersion("0.63.0")
		for i := r * per; i < min(n, (r+1)*per); i++ {
			s := ss.Spans().AppendEmpty()
			s.SetTraceID(traceID(i / 4))
			s.SetSpanID(spanID(i))
			if i%4 != 0 {
				s.SetParentSpanID(spanID(i - i%4))
			}
			s.SetName(fmt.Sprintf("GET /api/v1/orders/%d", i%10))
			s.SetKind(ptrace.SpanKindServer)
			s.SetStartTimestamp(ts(time.Duration(i) * time.Microsecond))
			s.SetEndTimestamp(ts(time.Duration(i)*time.Microsecond + 2500*time.Microsecond))
			a := s.Attributes()
			a.PutStr("http.request.method", "GET")
			a.PutStr("http.route", "/api/v1/orders/{id}")
			a.PutStr("url.path", fmt.Sprintf("/api/v1/orders/%d", i))
			a.PutInt("http.response.status_code", 200)
			a.PutStr("server.address", "orders.internal")
			a.PutInt("server.port", 8080)
			a.PutStr("user_agent.original", "Mozilla/5.0 (X11; Linux x86_64)")
			a.PutStr("network.protocol.version", "1.1")
			if i%50 == 0 {
				s.Status().SetCode(ptrace.StatusCodeError)
				ev := s.Events().AppendEmpty()
				ev.SetName("exception")
				ev.SetTimestamp(s.EndTimestamp())
				ev.Attributes().PutStr("exception.type", "TimeoutError")
				ev.Attributes().PutStr("exception.message", "upstream timed out")
			}
		}
	}
	return td
}

// RealisticLogs returns n log records.
func RealisticLogs(n int) plog.Logs {
	ld := plog.NewLogs()
	per := (n + realisticResources - 1) / realisticResources
	for r := 0; r < realisticResources && r*per < n; r++ {
		rl := ld.ResourceLogs().AppendEmpty()
		realisticResource(rl.Resource(), r)
		sl := rl.ScopeLogs().AppendEmpty()
		sl.Scope().SetName("app")
		for i := r * per; i < min(n, (r+1)*per); i++ {
			lr := sl.LogRecords().AppendEmpty()
			lr.SetTimestamp(ts(time.Duration(i) * time.Microsecond))
			lr.SetObservedTimestamp(ts(time.Duration(i) * time.Microsecond))
			lr.SetSeverityNumber(plog.SeverityNumberInfo)
			lr.SetSeverityText("INFO")
			lr.SetTraceID(traceID(i / 4))
			lr.SetSpanID(spanID(i))
			lr.Body().SetStr(fmt.Sprintf("request %d processed in %d ms", i, i%250))
			a := lr.Attributes()
			a.PutStr("http.request.method", "POST")
			a.PutInt("http.response.status_code", 200)
			a.PutStr("request_id", fmt.Sprintf("req-%08x", i))
			a.PutInt("response_time_ms", int64(i%250))
		}
	}
	return ld
}

// RealisticMetrics returns n gauge and sum data points.
func RealisticMetrics(n int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	per := (n + realisticResources - 1) / realisticResources
	names := []string{"system.cpu.utilization", "system.memory.utilization", "system.disk.io", "system.network.io"}
	for r := 0; r < realisticResources && r*per < n; r++ {
		rm := md.ResourceMetrics().AppendEmpty()
		realisticResource(rm.Resource(), r)
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName("hostmetrics")
		left := min(n, (r+1)*per) - r*per
		for k := 0; left > 0; k++ {
			m := sm.Metrics().AppendEmpty()
			m.SetName(names[k%len(names)])
			m.SetUnit("1")
			var dps pmetric.NumberDataPointSlice
			if k%2 == 0 {
				dps = m.SetEmptyGauge().DataPoints()
			} else {
				s := m.SetEmptySum()
				s.SetIsMonotonic(true)
				s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				dps = s.DataPoints()
			}
			for j := 0; j < 100 && left > 0; j++ {
				dp := dps.AppendEmpty()
				dp.SetTimestamp(ts(time.Duration(j) * time.Second))
				dp.SetStartTimestamp(ts(-time.Hour))
				dp.SetDoubleValue(float64(j%100) * 0.73)
				dp.Attributes().PutStr("cpu", fmt.Sprintf("cpu%d", j%8))
				dp.Attributes().PutStr("state", "user")
				left--
			}
		}
	}
	return md
}
