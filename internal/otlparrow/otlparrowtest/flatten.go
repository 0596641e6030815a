package otlparrowtest

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The Assert*SameRecords functions compare data whose records may come back
// in another order or regrouped, as they do when several exporter streams
// interleave in the sidecar: each span, log record or data point is compared
// together with its resource, scope (and metric), as a multiset.

// AssertTracesSameRecords compares the spans of want and got as multisets.
func AssertTracesSameRecords(t testing.TB, want, got ptrace.Traces) {
	t.Helper()
	assert.Equal(t, flattenTraces(t, want), flattenTraces(t, got))
}

func flattenTraces(t testing.TB, td ptrace.Traces) []string {
	var out []string
	var m ptrace.JSONMarshaler
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				one := ptrace.NewTraces()
				ors := one.ResourceSpans().AppendEmpty()
				rs.Resource().CopyTo(ors.Resource())
				ors.SetSchemaUrl(rs.SchemaUrl())
				oss := ors.ScopeSpans().AppendEmpty()
				ss.Scope().CopyTo(oss.Scope())
				oss.SetSchemaUrl(ss.SchemaUrl())
				s.CopyTo(oss.Spans().AppendEmpty())
				b, err := m.MarshalTraces(one)
				require.NoError(t, err)
				out = append(out, canonicalString(t, b))
			}
		}
	}
	sort.Strings(out)
	return out
}

// AssertLogsSameRecords compares the log records of want and got as
// multisets.
func AssertLogsSameRecords(t testing.TB, want, got plog.Logs) {
	t.Helper()
	assert.Equal(t, flattenLogs(t, want), flattenLogs(t, got))
}

func flattenLogs(t testing.TB, ld plog.Logs) []string {
	var out []string
	var m plog.JSONMarshaler
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				one := plog.NewLogs()
				orl := one.ResourceLogs().AppendEmpty()
				rl.Resource().CopyTo(orl.Resource())
				orl.SetSchemaUrl(rl.SchemaUrl())
				osl := orl.ScopeLogs().AppendEmpty()
				sl.Scope().CopyTo(osl.Scope())
				osl.SetSchemaUrl(sl.SchemaUrl())
				lr.CopyTo(osl.LogRecords().AppendEmpty())
				b, err := m.MarshalLogs(one)
				require.NoError(t, err)
				out = append(out, canonicalString(t, b))
			}
		}
	}
	sort.Strings(out)
	return out
}

// AssertMetricsSameRecords compares the data points of want and got as
// multisets.
func AssertMetricsSameRecords(t testing.TB, want, got pmetric.Metrics) {
	t.Helper()
	assert.Equal(t, flattenMetrics(t, want), flattenMetrics(t, got))
}

func flattenMetrics(t testing.TB, md pmetric.Metrics) []string {
	var out []string
	var m pmetric.JSONMarshaler
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, metric := range sm.Metrics().All() {
				for i := range pointCount(metric) {
					one := pmetric.NewMetrics()
					orm := one.ResourceMetrics().AppendEmpty()
					rm.Resource().CopyTo(orm.Resource())
					orm.SetSchemaUrl(rm.SchemaUrl())
					osm := orm.ScopeMetrics().AppendEmpty()
					sm.Scope().CopyTo(osm.Scope())
					osm.SetSchemaUrl(sm.SchemaUrl())
					om := osm.Metrics().AppendEmpty()
					metric.CopyTo(om)
					keepPoint(om, i)
					b, err := m.MarshalMetrics(one)
					require.NoError(t, err)
					out = append(out, canonicalString(t, b))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func canonicalString(t testing.TB, b []byte) string {
	c, err := json.Marshal(canonical(t, b))
	require.NoError(t, err)
	return string(c)
}

func pointCount(m pmetric.Metric) int {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints().Len()
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints().Len()
	case pmetric.MetricTypeHistogram:
		return m.Histogram().DataPoints().Len()
	case pmetric.MetricTypeExponentialHistogram:
		return m.ExponentialHistogram().DataPoints().Len()
	case pmetric.MetricTypeSummary:
		return m.Summary().DataPoints().Len()
	}
	return 0
}

// keepPoint removes every data point of m but the i-th.
func keepPoint(m pmetric.Metric, i int) {
	n := -1
	drop := func() bool { n++; return n != i }
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		m.Gauge().DataPoints().RemoveIf(func(pmetric.NumberDataPoint) bool { return drop() })
	case pmetric.MetricTypeSum:
		m.Sum().DataPoints().RemoveIf(func(pmetric.NumberDataPoint) bool { return drop() })
	case pmetric.MetricTypeHistogram:
		m.Histogram().DataPoints().RemoveIf(func(pmetric.HistogramDataPoint) bool { return drop() })
	case pmetric.MetricTypeExponentialHistogram:
		m.ExponentialHistogram().DataPoints().RemoveIf(func(pmetric.ExponentialHistogramDataPoint) bool { return drop() })
	case pmetric.MetricTypeSummary:
		m.Summary().DataPoints().RemoveIf(func(pmetric.SummaryDataPoint) bool { return drop() })
	}
}
