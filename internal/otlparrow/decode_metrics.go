package otlparrow

import (
	"errors"
	"fmt"
	"maps"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/arc-otel/arc-otel/internal/schema"
)

func sameMetric(a, b *schema.MetricPoint) bool {
	return a.MetricName == b.MetricName && a.MetricDescription == b.MetricDescription &&
		a.MetricUnit == b.MetricUnit && a.MetricType == b.MetricType && a.Temporality == b.Temporality &&
		a.IsMonotonic == b.IsMonotonic && maps.Equal(a.MetricMetadata, b.MetricMetadata) &&
		maps.Equal(a.MetricMetadataTypes, b.MetricMetadataTypes)
}

// PointsToMetrics rebuilds metrics from rows of the metrics table.
func PointsToMetrics(rows []schema.MetricPoint) (pmetric.Metrics, error) {
	md := pmetric.NewMetrics()
	var rm pmetric.ResourceMetrics
	var sm pmetric.ScopeMetrics
	var m pmetric.Metric
	for i := range rows {
		r := &rows[i]
		newScope := false
		if i == 0 || !sameResource(&rows[i-1].Resource, &r.Resource) {
			rm = md.ResourceMetrics().AppendEmpty()
			rm.SetSchemaUrl(r.ResourceSchemaURL)
			if err := fillResource(&r.Resource, rm.Resource()); err != nil {
				return md, err
			}
			newScope = true
		}
		if newScope || !sameScope(&rows[i-1].Resource, &r.Resource) {
			sm = rm.ScopeMetrics().AppendEmpty()
			sm.SetSchemaUrl(r.ScopeSchemaURL)
			if err := fillScope(&r.Resource, sm.Scope()); err != nil {
				return md, err
			}
			newScope = true
		}
		if newScope || !sameMetric(&rows[i-1], r) {
			m = sm.Metrics().AppendEmpty()
			if err := fillMetric(r, m); err != nil {
				return md, fmt.Errorf("metric point %d: %w", i, err)
			}
		}
		if err := fillPoint(r, m); err != nil {
			return md, fmt.Errorf("metric point %d: %w", i, err)
		}
	}
	return md, nil
}

// temporalities indexes the temporality column's names by
// pmetric.AggregationTemporality ("" is unspecified).
var temporalities = [...]string{"", TemporalityDelta, TemporalityCumulative}

func fillMetric(r *schema.MetricPoint, m pmetric.Metric) error {
	m.SetName(r.MetricName)
	m.SetDescription(r.MetricDescription)
	m.SetUnit(r.MetricUnit)
	t, err := enumValue("temporality", temporalities[:], r.Temporality)
	if err != nil {
		return err
	}
	temporality := pmetric.AggregationTemporality(t)
	switch r.MetricType {
	case MetricGauge:
		m.SetEmptyGauge()
	case MetricSum:
		s := m.SetEmptySum()
		s.SetAggregationTemporality(temporality)
		s.SetIsMonotonic(r.IsMonotonic)
	case MetricHistogram:
		m.SetEmptyHistogram().SetAggregationTemporality(temporality)
	case MetricExpHistogram:
		m.SetEmptyExponentialHistogram().SetAggregationTemporality(temporality)
	case MetricSummary:
		m.SetEmptySummary()
	default:
		return fmt.Errorf("unknown metric_type %q", r.MetricType)
	}
	return schema.ParseMap(r.MetricMetadata, r.MetricMetadataTypes, m.Metadata())
}

// point is what every data point type has.
type point interface {
	SetTimestamp(pcommon.Timestamp)
	SetStartTimestamp(pcommon.Timestamp)
	Attributes() pcommon.Map
}

func fillCommon(r *schema.MetricPoint, p point) error {
	p.SetTimestamp(otlpTime(r.Time))
	p.SetStartTimestamp(otlpTime(r.StartTime))
	return schema.ParseMap(r.Attributes, r.AttributeTypes, p.Attributes())
}

func fillPoint(r *schema.MetricPoint, m pmetric.Metric) error {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return fillNumber(r, m.Gauge().DataPoints().AppendEmpty())
	case pmetric.MetricTypeSum:
		return fillNumber(r, m.Sum().DataPoints().AppendEmpty())
	case pmetric.MetricTypeHistogram:
		return fillHistogram(r, m.Histogram().DataPoints().AppendEmpty())
	case pmetric.MetricTypeExponentialHistogram:
		return fillExpHistogram(r, m.ExponentialHistogram().DataPoints().AppendEmpty())
	case pmetric.MetricTypeSummary:
		return fillSummary(r, m.Summary().DataPoints().AppendEmpty())
	}
	return nil
}

func fillHistogram(r *schema.MetricPoint, dp pmetric.HistogramDataPoint) error {
	dp.SetFlags(pmetric.DataPointFlags(r.Flags))
	dp.SetCount(uint64(deref(r.Count)))
	setOpt(r.Sum, dp.SetSum)
	setOpt(r.Min, dp.SetMin)
	setOpt(r.Max, dp.SetMax)
	appendCounts(dp.BucketCounts(), r.BucketCounts)
	dp.ExplicitBounds().FromRaw(r.ExplicitBounds)
	if err := fillExemplars(r.Exemplars, dp.Exemplars()); err != nil {
		return err
	}
	return fillCommon(r, dp)
}

func fillExpHistogram(r *schema.MetricPoint, dp pmetric.ExponentialHistogramDataPoint) error {
	dp.SetFlags(pmetric.DataPointFlags(r.Flags))
	dp.SetCount(uint64(deref(r.Count)))
	setOpt(r.Sum, dp.SetSum)
	setOpt(r.Min, dp.SetMin)
	setOpt(r.Max, dp.SetMax)
	dp.SetScale(int32(deref(r.Scale)))
	dp.SetZeroCount(uint64(deref(r.ZeroCount)))
	dp.SetZeroThreshold(deref(r.ZeroThreshold))
	dp.Positive().SetOffset(int32(deref(r.PositiveOffset)))
	appendCounts(dp.Positive().BucketCounts(), r.PositiveBucketCounts)
	dp.Negative().SetOffset(int32(deref(r.NegativeOffset)))
	appendCounts(dp.Negative().BucketCounts(), r.NegativeBucketCounts)
	if err := fillExemplars(r.Exemplars, dp.Exemplars()); err != nil {
		return err
	}
	return fillCommon(r, dp)
}

func fillSummary(r *schema.MetricPoint, dp pmetric.SummaryDataPoint) error {
	if len(r.QuantileLevels) != len(r.QuantileValues) {
		return fmt.Errorf("%d quantile levels but %d values", len(r.QuantileLevels), len(r.QuantileValues))
	}
	dp.SetFlags(pmetric.DataPointFlags(r.Flags))
	dp.SetCount(uint64(deref(r.Count)))
	dp.SetSum(deref(r.Sum))
	for i, q := range r.QuantileLevels {
		qv := dp.QuantileValues().AppendEmpty()
		qv.SetQuantile(q)
		qv.SetValue(r.QuantileValues[i])
	}
	return fillCommon(r, dp)
}

// appendCounts appends counts stored as INT64 (see rows.go) to an OTLP
// uint64 list.
func appendCounts(dst pcommon.UInt64Slice, counts []int64) {
	dst.EnsureCapacity(len(counts))
	for _, c := range counts {
		dst.Append(uint64(c))
	}
}

func fillNumber(r *schema.MetricPoint, dp pmetric.NumberDataPoint) error {
	dp.SetFlags(pmetric.DataPointFlags(r.Flags))
	switch {
	case r.ValueInt != nil:
		dp.SetIntValue(*r.ValueInt)
	case r.Value != nil:
		dp.SetDoubleValue(*r.Value)
	}
	if err := fillExemplars(r.Exemplars, dp.Exemplars()); err != nil {
		return err
	}
	return fillCommon(r, dp)
}

func fillExemplars(rows []schema.Exemplar, exs pmetric.ExemplarSlice) error {
	exs.EnsureCapacity(len(rows))
	for _, e := range rows {
		ex := exs.AppendEmpty()
		ex.SetTimestamp(otlpTime(e.Time))
		switch {
		case e.ValueInt != nil: // value holds it too, converted
			ex.SetIntValue(*e.ValueInt)
		case e.Value != nil:
			ex.SetDoubleValue(*e.Value)
		}
		err := errors.Join(
			setTraceID(e.TraceID, ex.SetTraceID),
			setSpanID(e.SpanID, ex.SetSpanID),
			schema.ParseMap(e.FilteredAttributes, e.FilteredAttributeTypes, ex.FilteredAttributes()),
		)
		if err != nil {
			return err
		}
	}
	return nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func setOpt(p *float64, set func(float64)) {
	if p != nil {
		set(*p)
	}
}
