package otlparrow_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/schema"
)

func TestSpansRegroupByConsecutiveResourceAndScope(t *testing.T) {
	res := func(svc, url, scope string) schema.Resource {
		return schema.Resource{
			ServiceName: svc, ResourceAttributes: map[string]string{"service.name": svc}, ResourceSchemaURL: url, ScopeName: scope,
		}
	}
	tests := []struct {
		name string
		rows []schema.Resource
		want [][]int // spans per scope, per resource
	}{
		{"one resource, one scope", []schema.Resource{res("a", "", "s"), res("a", "", "s")}, [][]int{{2}}},
		{"scope changes", []schema.Resource{res("a", "", "s"), res("a", "", "t"), res("a", "", "t")}, [][]int{{1, 2}}},
		{"schema URL alone makes a new resource", []schema.Resource{res("a", "u1", "s"), res("a", "u2", "s")}, [][]int{{1}, {1}}},
		{"equal but not consecutive", []schema.Resource{res("a", "", "s"), res("b", "", "s"), res("a", "", "s")}, [][]int{{1}, {1}, {1}}},
		{"same scope name under a new resource", []schema.Resource{res("a", "", "s"), res("b", "", "s")}, [][]int{{1}, {1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := make([]schema.Span, len(tt.rows))
			for i, r := range tt.rows {
				rows[i].Resource = r
			}
			td, err := otlparrow.SpansToTraces(rows)
			require.NoError(t, err)
			var got [][]int
			for _, rs := range td.ResourceSpans().All() {
				var scopes []int
				for _, ss := range rs.ScopeSpans().All() {
					scopes = append(scopes, ss.Spans().Len())
				}
				got = append(got, scopes)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestPointsRegroupByMetricIdentity(t *testing.T) {
	point := func(name, typ, temporality string) schema.MetricPoint {
		return schema.MetricPoint{MetricName: name, MetricType: typ, Temporality: temporality}
	}
	md, err := otlparrow.PointsToMetrics([]schema.MetricPoint{
		point("a", "sum", "delta"), point("a", "sum", "delta"), point("a", "sum", "cumulative"),
		point("a", "gauge", ""), point("b", "gauge", ""), point("b", "gauge", ""),
	})
	require.NoError(t, err)
	ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	var got []int
	for _, m := range ms.All() {
		if m.Type() == pmetric.MetricTypeSum {
			got = append(got, m.Sum().DataPoints().Len())
		} else {
			got = append(got, m.Gauge().DataPoints().Len())
		}
	}
	assert.Equal(t, []int{2, 1, 1, 2}, got)
}

func TestReverseRejectsBadRows(t *testing.T) {
	tests := []struct {
		name string
		run  func() error
	}{
		{"trace id not hex", func() error {
			_, err := otlparrow.SpansToTraces([]schema.Span{{TraceID: "zz000000000000000000000000000000"}})
			return err
		}},
		{"span id of the wrong length", func() error {
			_, err := otlparrow.SpansToTraces([]schema.Span{{SpanID: "abcd"}})
			return err
		}},
		{"unknown span kind", func() error {
			_, err := otlparrow.SpansToTraces([]schema.Span{{SpanKind: "sideways"}})
			return err
		}},
		{"unknown type tag", func() error {
			_, err := otlparrow.SpansToTraces([]schema.Span{{
				Attributes: map[string]string{"k": "v"}, AttributeTypes: map[string]string{"k": "complex"},
			}})
			return err
		}},
		{"int tag on a non-number", func() error {
			_, err := otlparrow.LogRecordsToLogs([]schema.LogRecord{{
				Attributes: map[string]string{"k": "x"}, AttributeTypes: map[string]string{"k": "int"},
			}})
			return err
		}},
		{"map body without body_json", func() error {
			_, err := otlparrow.LogRecordsToLogs([]schema.LogRecord{{BodyType: "map", Message: "{}"}})
			return err
		}},
		{"unknown metric type", func() error {
			_, err := otlparrow.PointsToMetrics([]schema.MetricPoint{{MetricType: "meter"}})
			return err
		}},
		{"unknown temporality", func() error {
			_, err := otlparrow.PointsToMetrics([]schema.MetricPoint{{MetricType: "sum", Temporality: "sometimes"}})
			return err
		}},
		{"quantile levels without values", func() error {
			_, err := otlparrow.PointsToMetrics([]schema.MetricPoint{{MetricType: "summary", QuantileLevels: []float64{0.5}}})
			return err
		}},
		{"exemplar span id not hex", func() error {
			_, err := otlparrow.PointsToMetrics([]schema.MetricPoint{{MetricType: "gauge", Exemplars: []schema.Exemplar{{SpanID: "xxxxxxxxxxxxxxxx"}}}})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Error(t, tt.run()) })
	}
}
