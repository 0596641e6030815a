package otlparrow

import (
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// Metric type names of the metric_type column.
const (
	MetricGauge        = "gauge"
	MetricSum          = "sum"
	MetricHistogram    = "histogram"
	MetricExpHistogram = "exponential_histogram"
	MetricSummary      = "summary"
)

// MetricsConverter turns metrics into record batches of the metrics table:
// one row per data point.
type MetricsConverter struct {
	converter
	t   *table
	res resourceCols

	time, start                              *array.TimestampBuilder
	name, desc, unit, mtype, temporality     *array.StringBuilder
	monotonic                                *array.BooleanBuilder
	value, sum, min, max, zeroThreshold      *array.Float64Builder
	valueInt, count, scale, zeroCount, flags *array.Int64Builder
	posOffset, negOffset                     *array.Int64Builder
	buckets, bounds, posBuckets, negBuckets  *array.ListBuilder
	qLevels, qValues                         *array.ListBuilder
	exemplars                                *array.ListBuilder
	ex                                       *array.StructBuilder
	exTime                                   *array.TimestampBuilder
	exValue                                  *array.Float64Builder
	exValueInt                               *array.Int64Builder
	exTraceID, exSpanID                      *array.StringBuilder
	exAttrs, metadata, attrs                 attrCols

	// per metric
	metricMeta  rendered
	typeName    string
	temporal    string
	isMonotonic bool
}

// NewMetricsConverter returns a converter that cuts batches of batchSize rows.
func NewMetricsConverter(mem memory.Allocator, batchSize int) *MetricsConverter {
	t := newTable(mem, schema.Metrics, batchSize)
	c := &MetricsConverter{converter: converter{mem: mem, batchSize: batchSize}, t: t, res: newResourceCols(t)}
	c.time, c.start = t.ts("time"), t.ts("start_time")
	c.name, c.desc, c.unit = t.str("metric_name"), t.str("metric_description"), t.str("metric_unit")
	c.mtype, c.temporality, c.monotonic = t.str("metric_type"), t.str("temporality"), t.boolean("is_monotonic")
	c.value, c.valueInt, c.count = t.f64("value"), t.i64("value_int"), t.i64("count")
	c.sum, c.min, c.max = t.f64("sum"), t.f64("min"), t.f64("max")
	c.buckets, c.bounds = t.field("bucket_counts").(*array.ListBuilder), t.field("explicit_bounds").(*array.ListBuilder)
	c.scale, c.zeroCount, c.zeroThreshold = t.i64("scale"), t.i64("zero_count"), t.f64("zero_threshold")
	c.posOffset, c.posBuckets = t.i64("positive_offset"), t.field("positive_bucket_counts").(*array.ListBuilder)
	c.negOffset, c.negBuckets = t.i64("negative_offset"), t.field("negative_bucket_counts").(*array.ListBuilder)
	c.qLevels, c.qValues = t.field("quantile_levels").(*array.ListBuilder), t.field("quantile_values").(*array.ListBuilder)
	c.flags = t.i64("flags")
	c.exemplars = t.field("exemplars").(*array.ListBuilder)
	c.ex = c.exemplars.ValueBuilder().(*array.StructBuilder)
	c.exTime = c.ex.FieldBuilder(0).(*array.TimestampBuilder)
	c.exValue = c.ex.FieldBuilder(1).(*array.Float64Builder)
	c.exValueInt = c.ex.FieldBuilder(2).(*array.Int64Builder)
	c.exTraceID, c.exSpanID = c.ex.FieldBuilder(3).(*array.StringBuilder), c.ex.FieldBuilder(4).(*array.StringBuilder)
	c.exAttrs = newAttrCols(c.ex.FieldBuilder(5).(*array.MapBuilder), c.ex.FieldBuilder(6).(*array.MapBuilder))
	c.metadata, c.attrs = t.attrs("metric_metadata"), t.attrs("attributes")
	return c
}

// Release frees the builders.
func (c *MetricsConverter) Release() { c.t.release() }

// Convert appends every data point of md.
func (c *MetricsConverter) Convert(md pmetric.Metrics, emit Emit) error {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		rm := rms.At(i)
		c.setResource(rm.Resource(), rm.SchemaUrl())
		sms := rm.ScopeMetrics()
		for j := range sms.Len() {
			sm := sms.At(j)
			c.setScope(sm.Scope(), sm.SchemaUrl())
			ms := sm.Metrics()
			for k := range ms.Len() {
				if err := c.appendMetric(ms.At(k), emit); err != nil {
					return err
				}
			}
		}
	}
	return c.t.flush(emit)
}

func temporalityName(t pmetric.AggregationTemporality) string {
	switch t {
	case pmetric.AggregationTemporalityDelta:
		return "delta"
	case pmetric.AggregationTemporalityCumulative:
		return "cumulative"
	}
	return "unspecified"
}

func (c *MetricsConverter) appendMetric(m pmetric.Metric, emit Emit) error {
	c.metricMeta.reset(m.Metadata())
	c.temporal, c.isMonotonic = "", false
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		c.typeName = MetricGauge
		return c.numberPoints(m, m.Gauge().DataPoints(), emit)
	case pmetric.MetricTypeSum:
		c.typeName = MetricSum
		c.temporal, c.isMonotonic = temporalityName(m.Sum().AggregationTemporality()), m.Sum().IsMonotonic()
		return c.numberPoints(m, m.Sum().DataPoints(), emit)
	case pmetric.MetricTypeHistogram:
		c.typeName, c.temporal = MetricHistogram, temporalityName(m.Histogram().AggregationTemporality())
		dps := m.Histogram().DataPoints()
		for i := range dps.Len() {
			if err := c.histogramPoint(m, dps.At(i), emit); err != nil {
				return err
			}
		}
	case pmetric.MetricTypeExponentialHistogram:
		c.typeName, c.temporal = MetricExpHistogram, temporalityName(m.ExponentialHistogram().AggregationTemporality())
		dps := m.ExponentialHistogram().DataPoints()
		for i := range dps.Len() {
			if err := c.expHistogramPoint(m, dps.At(i), emit); err != nil {
				return err
			}
		}
	case pmetric.MetricTypeSummary:
		c.typeName = MetricSummary
		dps := m.Summary().DataPoints()
		for i := range dps.Len() {
			if err := c.summaryPoint(m, dps.At(i), emit); err != nil {
				return err
			}
		}
	}
	return nil
}

// pointCommon appends the columns every data point has.
func (c *MetricsConverter) pointCommon(m pmetric.Metric, ts, start pcommon.Timestamp, flags pmetric.DataPointFlags, attrs pcommon.Map) {
	appendTime(c.time, ts)
	appendTime(c.start, start)
	c.appendStr(c.name, m.Name())
	c.appendStr(c.desc, m.Description())
	c.appendStr(c.unit, m.Unit())
	c.mtype.Append(c.typeName)
	c.temporality.Append(c.temporal)
	c.monotonic.Append(c.isMonotonic)
	c.flags.Append(int64(flags))
	c.metricMeta.appendTo(c.metadata)
	c.appendResource(c.res)
	c.appendAttrs(c.attrs, attrs, &c.rec)
}

// nulls appends null to each builder: the columns a metric type leaves out.
func nulls(bs ...array.Builder) {
	for _, b := range bs {
		b.AppendNull()
	}
}

// empty appends an empty list to each list builder.
func empty(ls ...*array.ListBuilder) {
	for _, l := range ls {
		l.Append(true)
	}
}

func (c *MetricsConverter) numberPoints(m pmetric.Metric, dps pmetric.NumberDataPointSlice, emit Emit) error {
	for i := range dps.Len() {
		dp := dps.At(i)
		c.pointCommon(m, dp.Timestamp(), dp.StartTimestamp(), dp.Flags(), dp.Attributes())
		if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
			c.value.Append(float64(dp.IntValue()))
			c.valueInt.Append(dp.IntValue())
		} else {
			c.value.Append(dp.DoubleValue())
			c.valueInt.AppendNull()
		}
		nulls(c.count, c.sum, c.min, c.max, c.scale, c.zeroCount, c.zeroThreshold, c.posOffset, c.negOffset)
		empty(c.buckets, c.bounds, c.posBuckets, c.negBuckets, c.qLevels, c.qValues)
		c.appendExemplars(dp.Exemplars())
		if err := c.t.rowDone(emit); err != nil {
			return err
		}
	}
	return nil
}

func appendOptF64(b *array.Float64Builder, v float64, ok bool) {
	if ok {
		b.Append(v)
	} else {
		b.AppendNull()
	}
}

func (c *MetricsConverter) histogramPoint(m pmetric.Metric, dp pmetric.HistogramDataPoint, emit Emit) error {
	c.pointCommon(m, dp.Timestamp(), dp.StartTimestamp(), dp.Flags(), dp.Attributes())
	nulls(c.value, c.valueInt)
	c.count.Append(int64(dp.Count()))
	appendOptF64(c.sum, dp.Sum(), dp.HasSum())
	appendOptF64(c.min, dp.Min(), dp.HasMin())
	appendOptF64(c.max, dp.Max(), dp.HasMax())
	appendUints(c.buckets, dp.BucketCounts())
	appendFloats(c.bounds, dp.ExplicitBounds())
	nulls(c.scale, c.zeroCount, c.zeroThreshold, c.posOffset, c.negOffset)
	empty(c.posBuckets, c.negBuckets, c.qLevels, c.qValues)
	c.appendExemplars(dp.Exemplars())
	return c.t.rowDone(emit)
}

func (c *MetricsConverter) expHistogramPoint(m pmetric.Metric, dp pmetric.ExponentialHistogramDataPoint, emit Emit) error {
	c.pointCommon(m, dp.Timestamp(), dp.StartTimestamp(), dp.Flags(), dp.Attributes())
	nulls(c.value, c.valueInt)
	c.count.Append(int64(dp.Count()))
	appendOptF64(c.sum, dp.Sum(), dp.HasSum())
	appendOptF64(c.min, dp.Min(), dp.HasMin())
	appendOptF64(c.max, dp.Max(), dp.HasMax())
	empty(c.buckets, c.bounds)
	c.scale.Append(int64(dp.Scale()))
	c.zeroCount.Append(int64(dp.ZeroCount()))
	c.zeroThreshold.Append(dp.ZeroThreshold())
	c.posOffset.Append(int64(dp.Positive().Offset()))
	appendUints(c.posBuckets, dp.Positive().BucketCounts())
	c.negOffset.Append(int64(dp.Negative().Offset()))
	appendUints(c.negBuckets, dp.Negative().BucketCounts())
	empty(c.qLevels, c.qValues)
	c.appendExemplars(dp.Exemplars())
	return c.t.rowDone(emit)
}

func (c *MetricsConverter) summaryPoint(m pmetric.Metric, dp pmetric.SummaryDataPoint, emit Emit) error {
	c.pointCommon(m, dp.Timestamp(), dp.StartTimestamp(), dp.Flags(), dp.Attributes())
	nulls(c.value, c.valueInt)
	c.count.Append(int64(dp.Count()))
	c.sum.Append(dp.Sum())
	nulls(c.min, c.max, c.scale, c.zeroCount, c.zeroThreshold, c.posOffset, c.negOffset)
	empty(c.buckets, c.bounds, c.posBuckets, c.negBuckets)
	qs := dp.QuantileValues()
	c.qLevels.Append(true)
	c.qValues.Append(true)
	lv, vv := c.qLevels.ValueBuilder().(*array.Float64Builder), c.qValues.ValueBuilder().(*array.Float64Builder)
	for i := range qs.Len() {
		lv.Append(qs.At(i).Quantile())
		vv.Append(qs.At(i).Value())
	}
	c.exemplars.Append(true) // summaries have no exemplars
	return c.t.rowDone(emit)
}

func appendUints(l *array.ListBuilder, s pcommon.UInt64Slice) {
	l.Append(true)
	vb := l.ValueBuilder().(*array.Int64Builder)
	for i := range s.Len() {
		vb.Append(int64(s.At(i)))
	}
}

func appendFloats(l *array.ListBuilder, s pcommon.Float64Slice) {
	l.Append(true)
	vb := l.ValueBuilder().(*array.Float64Builder)
	for i := range s.Len() {
		vb.Append(s.At(i))
	}
}

func (c *MetricsConverter) appendExemplars(exs pmetric.ExemplarSlice) {
	c.exemplars.Append(true)
	for i := range exs.Len() {
		ex := exs.At(i)
		c.ex.Append(true)
		appendTime(c.exTime, ex.Timestamp())
		if ex.ValueType() == pmetric.ExemplarValueTypeInt {
			c.exValue.AppendNull()
			c.exValueInt.Append(ex.IntValue())
		} else {
			c.exValue.Append(ex.DoubleValue())
			c.exValueInt.AppendNull()
		}
		c.appendTraceID(c.exTraceID, ex.TraceID())
		c.appendSpanID(c.exSpanID, ex.SpanID())
		c.appendAttrs(c.exAttrs, ex.FilteredAttributes(), &c.nested)
	}
}
