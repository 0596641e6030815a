package arcexporter

import (
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// The functions below return what a retry must still send after a push
// failed part way. Rows reach batches in traversal order and batches are
// cut every batch_size rows per table, so the first acked*batch_size rows of
// the failed table are durable in the sidecar: sending them again would
// duplicate them.

func remainingTraces(td ptrace.Traces, skip int) ptrace.Traces {
	out := ptrace.NewTraces()
	td.CopyTo(out)
	seen := 0
	out.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
			ss.Spans().RemoveIf(func(ptrace.Span) bool {
				seen++
				return seen <= skip
			})
			return ss.Spans().Len() == 0
		})
		return rs.ScopeSpans().Len() == 0
	})
	return out
}

// remainingLogs drops the records of the tables in done, and the first skip
// records of table.
func remainingLogs(ld plog.Logs, done []*schema.Table, table *schema.Table, skip int) plog.Logs {
	out := plog.NewLogs()
	ld.CopyTo(out)
	seen := 0
	out.ResourceLogs().RemoveIf(func(rl plog.ResourceLogs) bool {
		rl.ScopeLogs().RemoveIf(func(sl plog.ScopeLogs) bool {
			sl.LogRecords().RemoveIf(func(lr plog.LogRecord) bool {
				t := schema.Logs
				if lr.EventName() != "" {
					t = schema.Events
				}
				if slices.Contains(done, t) {
					return true
				}
				if t != table {
					return false
				}
				seen++
				return seen <= skip
			})
			return sl.LogRecords().Len() == 0
		})
		return rl.ScopeLogs().Len() == 0
	})
	return out
}

func remainingMetrics(md pmetric.Metrics, skip int) pmetric.Metrics {
	out := pmetric.NewMetrics()
	md.CopyTo(out)
	seen := 0
	drop := func() bool {
		seen++
		return seen <= skip
	}
	out.ResourceMetrics().RemoveIf(func(rm pmetric.ResourceMetrics) bool {
		rm.ScopeMetrics().RemoveIf(func(sm pmetric.ScopeMetrics) bool {
			sm.Metrics().RemoveIf(func(m pmetric.Metric) bool {
				return dropPoints(m, drop) == 0
			})
			return sm.Metrics().Len() == 0
		})
		return rm.ScopeMetrics().Len() == 0
	})
	return out
}

// dropPoints removes the points drop says to and returns how many are left.
func dropPoints(m pmetric.Metric, drop func() bool) int {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		m.Gauge().DataPoints().RemoveIf(func(pmetric.NumberDataPoint) bool { return drop() })
		return m.Gauge().DataPoints().Len()
	case pmetric.MetricTypeSum:
		m.Sum().DataPoints().RemoveIf(func(pmetric.NumberDataPoint) bool { return drop() })
		return m.Sum().DataPoints().Len()
	case pmetric.MetricTypeHistogram:
		m.Histogram().DataPoints().RemoveIf(func(pmetric.HistogramDataPoint) bool { return drop() })
		return m.Histogram().DataPoints().Len()
	case pmetric.MetricTypeExponentialHistogram:
		m.ExponentialHistogram().DataPoints().RemoveIf(func(pmetric.ExponentialHistogramDataPoint) bool { return drop() })
		return m.ExponentialHistogram().DataPoints().Len()
	case pmetric.MetricTypeSummary:
		m.Summary().DataPoints().RemoveIf(func(pmetric.SummaryDataPoint) bool { return drop() })
		return m.Summary().DataPoints().Len()
	}
	return 0
}

// The functions below remove the rows whose time the sidecar refuses
// (after latest; OTLP times cannot be before 1970) and return how many
// they removed. A row's time is the one the converter stores in the time
// column: a span's start, a log's time or else its observed time, a
// point's time.

func lateTime(ts pcommon.Timestamp, latest int64) bool {
	return schema.TimestampFromUnixNano(uint64(ts)) > latest
}

func dropLateSpans(td ptrace.Traces, latest int64) int {
	n := td.SpanCount()
	td.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
			ss.Spans().RemoveIf(func(s ptrace.Span) bool { return lateTime(s.StartTimestamp(), latest) })
			return ss.Spans().Len() == 0
		})
		return rs.ScopeSpans().Len() == 0
	})
	return n - td.SpanCount()
}

func dropLateLogs(ld plog.Logs, latest int64) int {
	n := ld.LogRecordCount()
	ld.ResourceLogs().RemoveIf(func(rl plog.ResourceLogs) bool {
		rl.ScopeLogs().RemoveIf(func(sl plog.ScopeLogs) bool {
			sl.LogRecords().RemoveIf(func(lr plog.LogRecord) bool {
				ts := lr.Timestamp()
				if ts == 0 {
					ts = lr.ObservedTimestamp()
				}
				return lateTime(ts, latest)
			})
			return sl.LogRecords().Len() == 0
		})
		return rl.ScopeLogs().Len() == 0
	})
	return n - ld.LogRecordCount()
}

func dropLatePoints(md pmetric.Metrics, latest int64) int {
	n := md.DataPointCount()
	md.ResourceMetrics().RemoveIf(func(rm pmetric.ResourceMetrics) bool {
		rm.ScopeMetrics().RemoveIf(func(sm pmetric.ScopeMetrics) bool {
			sm.Metrics().RemoveIf(func(m pmetric.Metric) bool {
				return dropLate(m, latest) == 0
			})
			return sm.Metrics().Len() == 0
		})
		return rm.ScopeMetrics().Len() == 0
	})
	return n - md.DataPointCount()
}

// dropLate removes a metric's late points and returns how many are left.
func dropLate(m pmetric.Metric, latest int64) int {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		m.Gauge().DataPoints().RemoveIf(func(p pmetric.NumberDataPoint) bool { return lateTime(p.Timestamp(), latest) })
		return m.Gauge().DataPoints().Len()
	case pmetric.MetricTypeSum:
		m.Sum().DataPoints().RemoveIf(func(p pmetric.NumberDataPoint) bool { return lateTime(p.Timestamp(), latest) })
		return m.Sum().DataPoints().Len()
	case pmetric.MetricTypeHistogram:
		m.Histogram().DataPoints().RemoveIf(func(p pmetric.HistogramDataPoint) bool { return lateTime(p.Timestamp(), latest) })
		return m.Histogram().DataPoints().Len()
	case pmetric.MetricTypeExponentialHistogram:
		m.ExponentialHistogram().DataPoints().RemoveIf(func(p pmetric.ExponentialHistogramDataPoint) bool { return lateTime(p.Timestamp(), latest) })
		return m.ExponentialHistogram().DataPoints().Len()
	case pmetric.MetricTypeSummary:
		m.Summary().DataPoints().RemoveIf(func(p pmetric.SummaryDataPoint) bool { return lateTime(p.Timestamp(), latest) })
		return m.Summary().DataPoints().Len()
	}
	return 0
}
