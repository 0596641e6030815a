package otlparrow

import (
	"iter"

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
	res *resourceCols

	time, start                              *numCol[int64]
	name, desc, unit, mtype, temporality     *strCol
	monotonic                                *boolCol
	value, sum, min, max, zeroThreshold      *numCol[float64]
	valueInt, count, scale, zeroCount, flags *numCol[int64]
	posOffset, negOffset                     *numCol[int64]
	buckets, posBuckets, negBuckets          *listCol[int64]
	bounds, qLevels, qValues                 *listCol[float64]
	exemplars                                *structListCol
	ex                                       *array.StructBuilder
	exTime                                   *array.TimestampBuilder
	exValue                                  *array.Float64Builder
	exValueInt                               *array.Int64Builder
	exTraceID, exSpanID                      *array.StringBuilder
	exAttrs                                  nestedAttrCols
	metadata, attrs                          attrCols

	metric metricVals
	mrun   metricRun
	absent [pmetric.MetricTypeSummary + 1]absentCols // by metric type
}

// metricRun appends the metric columns (name to metadata) per run of a
// metric's points, as resourceCols does for a resource's rows.
type metricRun struct {
	c       *MetricsConverter
	pending int
}

func (r *metricRun) drop() { r.pending = 0 }

func (r *metricRun) fill() {
	n := r.pending
	if n == 0 {
		return
	}
	r.pending = 0
	c, m := r.c, &r.c.metric
	c.name.appendRepeat(m.name, n)
	c.desc.appendRepeat(m.desc, n)
	c.unit.appendRepeat(m.unit, n)
	c.mtype.appendRepeat(m.typeName, n)
	c.temporality.appendRepeat(m.temporality, n)
	c.monotonic.appendRepeat(m.isMonotonic, n)
	m.metaP.appendRepeat(c.metadata, n)
	a := &c.absent[m.typ]
	for _, col := range a.nulls {
		col.appendNullRepeat(n)
	}
	for _, l := range a.empty {
		l.endRepeat(n)
	}
}

// absentCols are the columns a metric type leaves out: null, or an empty
// list. All the points of a metric have its type, so they are appended per
// run of its points, like the metric's own columns: a number point leaves
// out fifteen columns, and a call per column and point was a third of its
// conversion.
type absentCols struct {
	nulls []interface{ appendNullRepeat(n int) }
	empty []interface{ endRepeat(n int) }
}

func (c *MetricsConverter) initAbsent() {
	type nl = interface{ appendNullRepeat(n int) }
	type el = interface{ endRepeat(n int) }
	c.absent[pmetric.MetricTypeGauge] = absentCols{
		nulls: []nl{c.count, c.sum, c.min, c.max, c.scale, c.zeroCount, c.zeroThreshold, c.posOffset, c.negOffset},
		empty: []el{c.buckets, c.bounds, c.posBuckets, c.negBuckets, c.qLevels, c.qValues},
	}
	c.absent[pmetric.MetricTypeSum] = c.absent[pmetric.MetricTypeGauge]
	c.absent[pmetric.MetricTypeHistogram] = absentCols{
		nulls: []nl{c.value, c.valueInt, c.scale, c.zeroCount, c.zeroThreshold, c.posOffset, c.negOffset},
		empty: []el{c.posBuckets, c.negBuckets, c.qLevels, c.qValues},
	}
	c.absent[pmetric.MetricTypeExponentialHistogram] = absentCols{
		nulls: []nl{c.value, c.valueInt},
		empty: []el{c.buckets, c.bounds, c.qLevels, c.qValues},
	}
	c.absent[pmetric.MetricTypeSummary] = absentCols{
		nulls: []nl{c.value, c.valueInt, c.min, c.max, c.scale, c.zeroCount, c.zeroThreshold, c.posOffset, c.negOffset},
		empty: []el{c.buckets, c.bounds, c.posBuckets, c.negBuckets, c.exemplars}, // summaries have no exemplars
	}
}

// metricVals are the columns of the current metric, rendered once for all
// its points.
type metricVals struct {
	name, desc, unit []byte
	meta             rendered
	metaP            packedAttrs
	typ              pmetric.MetricType
	typeName         []byte
	temporality      []byte
	isMonotonic      bool
}

func (v *metricVals) reset(m pmetric.Metric) {
	v.name = schema.AppendValidUTF8(v.name[:0], m.Name())
	v.desc = schema.AppendValidUTF8(v.desc[:0], m.Description())
	v.unit = schema.AppendValidUTF8(v.unit[:0], m.Unit())
	v.meta.reset(m.Metadata())
	v.meta.pack(&v.metaP)
	var typeName, temporality string
	v.isMonotonic = false
	v.typ = m.Type()
	switch v.typ {
	case pmetric.MetricTypeGauge:
		typeName = MetricGauge
	case pmetric.MetricTypeSum:
		typeName = MetricSum
		temporality, v.isMonotonic = temporalityName(m.Sum().AggregationTemporality()), m.Sum().IsMonotonic()
	case pmetric.MetricTypeHistogram:
		typeName, temporality = MetricHistogram, temporalityName(m.Histogram().AggregationTemporality())
	case pmetric.MetricTypeExponentialHistogram:
		typeName, temporality = MetricExpHistogram, temporalityName(m.ExponentialHistogram().AggregationTemporality())
	case pmetric.MetricTypeSummary:
		typeName = MetricSummary
	}
	v.typeName = append(v.typeName[:0], typeName...)
	v.temporality = append(v.temporality[:0], temporality...)
}

// NewMetricsConverter returns a converter that cuts batches of batchSize rows.
func NewMetricsConverter(mem memory.Allocator, batchSize int) *MetricsConverter {
	t := newTable(mem, schema.Metrics, batchSize)
	c := &MetricsConverter{t: t}
	c.res = newResourceCols(&c.converter, t)
	c.mrun.c = c
	t.runs = append(t.runs, &c.mrun)
	c.time, c.start = t.ts("time"), t.ts("start_time")
	c.name, c.desc, c.unit = t.str("metric_name"), t.str("metric_description"), t.str("metric_unit")
	c.mtype, c.temporality, c.monotonic = t.str("metric_type"), t.str("temporality"), t.boolean("is_monotonic")
	c.value, c.valueInt, c.count = t.f64("value"), t.i64("value_int"), t.i64("count")
	c.sum, c.min, c.max = t.f64("sum"), t.f64("min"), t.f64("max")
	c.buckets, c.bounds = t.i64List("bucket_counts"), t.f64List("explicit_bounds")
	c.scale, c.zeroCount, c.zeroThreshold = t.i64("scale"), t.i64("zero_count"), t.f64("zero_threshold")
	c.posOffset, c.posBuckets = t.i64("positive_offset"), t.i64List("positive_bucket_counts")
	c.negOffset, c.negBuckets = t.i64("negative_offset"), t.i64List("negative_bucket_counts")
	c.qLevels, c.qValues = t.f64List("quantile_levels"), t.f64List("quantile_values")
	c.flags = t.i64("flags")
	c.exemplars = t.structList("exemplars")
	f := newStructFields(c.exemplars)
	c.ex = f.s
	c.exTime, c.exValue, c.exValueInt = f.ts("time"), f.f64("value"), f.i64("value_int")
	c.exTraceID, c.exSpanID = f.str("trace_id"), f.str("span_id")
	c.exAttrs = f.attrs("filtered_attributes")
	c.metadata, c.attrs = t.attrs("metric_metadata"), t.attrs("attributes")
	c.initAbsent()
	return c
}

// Release frees the builders.
func (c *MetricsConverter) Release() { c.t.release() }

// Convert appends a row for every data point of md, emitting a batch every
// batchSize rows and the remainder at the end. A metric of no type has no
// points and leaves no row. After an error the converter holds no rows and
// can be reused.
func (c *MetricsConverter) Convert(md pmetric.Metrics, emit Emit) error {
	c.t.start(md.DataPointCount())
	if err := c.convert(md, emit); err != nil {
		c.t.discard()
		return err
	}
	return nil
}

func (c *MetricsConverter) convert(md pmetric.Metrics, emit Emit) error {
	for _, rm := range md.ResourceMetrics().All() {
		c.setResource(rm.Resource(), rm.SchemaUrl())
		for _, sm := range rm.ScopeMetrics().All() {
			c.setScope(sm.Scope(), sm.SchemaUrl())
			for _, m := range sm.Metrics().All() {
				if err := c.appendMetric(m, emit); err != nil {
					return err
				}
			}
		}
	}
	return c.t.flush(emit)
}

// Temporality names of the temporality column.
const (
	TemporalityDelta      = "delta"
	TemporalityCumulative = "cumulative"
)

// temporalityName names delta and cumulative; unspecified (invalid for the
// types that have a temporality) is "", like the types that have none.
func temporalityName(t pmetric.AggregationTemporality) string {
	switch t {
	case pmetric.AggregationTemporalityDelta:
		return TemporalityDelta
	case pmetric.AggregationTemporalityCumulative:
		return TemporalityCumulative
	}
	return ""
}

func (c *MetricsConverter) appendMetric(m pmetric.Metric, emit Emit) error {
	c.mrun.fill()
	c.metric.reset(m)
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return eachPoint(m.Gauge().DataPoints().All(), c.numberPoint, c.t, emit)
	case pmetric.MetricTypeSum:
		return eachPoint(m.Sum().DataPoints().All(), c.numberPoint, c.t, emit)
	case pmetric.MetricTypeHistogram:
		return eachPoint(m.Histogram().DataPoints().All(), c.histogramPoint, c.t, emit)
	case pmetric.MetricTypeExponentialHistogram:
		return eachPoint(m.ExponentialHistogram().DataPoints().All(), c.expHistogramPoint, c.t, emit)
	case pmetric.MetricTypeSummary:
		return eachPoint(m.Summary().DataPoints().All(), c.summaryPoint, c.t, emit)
	}
	return nil
}

// eachPoint appends a row per data point.
func eachPoint[P any](points iter.Seq2[int, P], appendPoint func(P), t *table, emit Emit) error {
	for _, p := range points {
		appendPoint(p)
		if err := t.rowDone(emit); err != nil {
			return err
		}
	}
	return nil
}

// pointCommon appends the columns every data point has.
func (c *MetricsConverter) pointCommon(ts, start pcommon.Timestamp, flags pmetric.DataPointFlags, attrs pcommon.Map) {
	appendTime(c.time, ts)
	appendTime(c.start, start)
	c.mrun.pending++
	c.flags.append(int64(flags))
	c.appendResource(c.res)
	c.appendAttrs(attrs, c.attrs)
}

func (c *MetricsConverter) numberPoint(dp pmetric.NumberDataPoint) {
	c.pointCommon(dp.Timestamp(), dp.StartTimestamp(), dp.Flags(), dp.Attributes())
	typ := dp.ValueType()
	appendNumber(c.value, c.valueInt, typ == pmetric.NumberDataPointValueTypeInt, typ == pmetric.NumberDataPointValueTypeDouble,
		dp.DoubleValue(), dp.IntValue())
	c.appendExemplars(dp.Exemplars())
}

func (c *MetricsConverter) histogramPoint(dp pmetric.HistogramDataPoint) {
	c.pointCommon(dp.Timestamp(), dp.StartTimestamp(), dp.Flags(), dp.Attributes())
	c.count.append(int64(dp.Count()))
	appendOptF64(c.sum, dp.Sum(), dp.HasSum())
	appendOptF64(c.min, dp.Min(), dp.HasMin())
	appendOptF64(c.max, dp.Max(), dp.HasMax())
	appendUints(c.buckets, dp.BucketCounts())
	appendFloats(c.bounds, dp.ExplicitBounds())
	c.appendExemplars(dp.Exemplars())
}

func (c *MetricsConverter) expHistogramPoint(dp pmetric.ExponentialHistogramDataPoint) {
	c.pointCommon(dp.Timestamp(), dp.StartTimestamp(), dp.Flags(), dp.Attributes())
	c.count.append(int64(dp.Count()))
	appendOptF64(c.sum, dp.Sum(), dp.HasSum())
	appendOptF64(c.min, dp.Min(), dp.HasMin())
	appendOptF64(c.max, dp.Max(), dp.HasMax())
	c.scale.append(int64(dp.Scale()))
	c.zeroCount.append(int64(dp.ZeroCount()))
	c.zeroThreshold.append(dp.ZeroThreshold())
	c.posOffset.append(int64(dp.Positive().Offset()))
	appendUints(c.posBuckets, dp.Positive().BucketCounts())
	c.negOffset.append(int64(dp.Negative().Offset()))
	appendUints(c.negBuckets, dp.Negative().BucketCounts())
	c.appendExemplars(dp.Exemplars())
}

func (c *MetricsConverter) summaryPoint(dp pmetric.SummaryDataPoint) {
	c.pointCommon(dp.Timestamp(), dp.StartTimestamp(), dp.Flags(), dp.Attributes())
	c.count.append(int64(dp.Count()))
	c.sum.append(dp.Sum())
	for _, q := range dp.QuantileValues().All() {
		c.qLevels.elems.append(q.Quantile())
		c.qValues.elems.append(q.Value())
	}
	c.qLevels.end()
	c.qValues.end()
}

func appendUints(l *listCol[int64], s pcommon.UInt64Slice) {
	for _, v := range s.All() {
		l.elems.append(int64(v))
	}
	l.end()
}

func appendFloats(l *listCol[float64], s pcommon.Float64Slice) {
	for _, v := range s.All() {
		l.elems.append(v)
	}
	l.end()
}

func (c *MetricsConverter) appendExemplars(exs pmetric.ExemplarSlice) {
	for _, ex := range exs.All() {
		c.ex.Append(true)
		appendNestedTime(c.exTime, ex.Timestamp())
		appendExemplarValue(c.exValue, c.exValueInt, ex)
		c.appendTraceID(c.exTraceID, ex.TraceID())
		c.appendSpanID(c.exSpanID, ex.SpanID())
		c.nested.reset(ex.FilteredAttributes())
		c.nested.appendToNested(c.exAttrs)
	}
	c.exemplars.end()
}

// appendNumber appends a number point's or an exemplar's value: a double
// in value; an int in value_int and, converted, in value, so that value
// answers queries whatever the type; nothing set, null in both.
func appendNumber(value *numCol[float64], valueInt *numCol[int64], isInt, isDouble bool, d float64, i int64) {
	switch {
	case isInt:
		value.append(float64(i))
		valueInt.append(i)
	case isDouble:
		value.append(d)
		valueInt.appendNull()
	default:
		value.appendNull()
		valueInt.appendNull()
	}
}

// appendExemplarValue is appendNumber for the builders of the exemplars
// list.
func appendExemplarValue(value *array.Float64Builder, valueInt *array.Int64Builder, ex pmetric.Exemplar) {
	switch ex.ValueType() {
	case pmetric.ExemplarValueTypeInt:
		value.Append(float64(ex.IntValue()))
		valueInt.Append(ex.IntValue())
	case pmetric.ExemplarValueTypeDouble:
		value.Append(ex.DoubleValue())
		valueInt.AppendNull()
	default:
		value.AppendNull()
		valueInt.AppendNull()
	}
}
