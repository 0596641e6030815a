package otlparrowtest

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func (d *differ) traces(want, got ptrace.Traces) {
	wrs, grs := want.ResourceSpans(), got.ResourceSpans()
	for i := range d.length("resourceSpans", wrs.Len(), grs.Len()) {
		w, g := wrs.At(i), grs.At(i)
		p := fmt.Sprintf("resourceSpans[%d]", i)
		d.resource(p+".resource", w.Resource(), g.Resource())
		check(d, p+".schemaUrl", w.SchemaUrl(), g.SchemaUrl())
		wss, gss := w.ScopeSpans(), g.ScopeSpans()
		for j := range d.length(p+".scopeSpans", wss.Len(), gss.Len()) {
			ws, gs := wss.At(j), gss.At(j)
			sp := fmt.Sprintf("%s.scopeSpans[%d]", p, j)
			d.scope(sp+".scope", ws.Scope(), gs.Scope())
			check(d, sp+".schemaUrl", ws.SchemaUrl(), gs.SchemaUrl())
			for k := range d.length(sp+".spans", ws.Spans().Len(), gs.Spans().Len()) {
				d.span(fmt.Sprintf("%s.spans[%d]", sp, k), ws.Spans().At(k), gs.Spans().At(k))
			}
		}
	}
}

func (d *differ) span(p string, w, g ptrace.Span) {
	check(d, p+".traceId", w.TraceID(), g.TraceID())
	check(d, p+".spanId", w.SpanID(), g.SpanID())
	check(d, p+".parentSpanId", w.ParentSpanID(), g.ParentSpanID())
	check(d, p+".traceState", w.TraceState().AsRaw(), g.TraceState().AsRaw())
	check(d, p+".flags", w.Flags(), g.Flags())
	check(d, p+".name", w.Name(), g.Name())
	check(d, p+".kind", w.Kind(), g.Kind())
	check(d, p+".startTimeUnixNano", w.StartTimestamp(), g.StartTimestamp())
	check(d, p+".endTimeUnixNano", w.EndTimestamp(), g.EndTimestamp())
	d.attrs(p+".attributes", w.Attributes(), g.Attributes())
	check(d, p+".droppedAttributesCount", w.DroppedAttributesCount(), g.DroppedAttributesCount())
	check(d, p+".droppedEventsCount", w.DroppedEventsCount(), g.DroppedEventsCount())
	check(d, p+".droppedLinksCount", w.DroppedLinksCount(), g.DroppedLinksCount())
	check(d, p+".status.code", w.Status().Code(), g.Status().Code())
	check(d, p+".status.message", w.Status().Message(), g.Status().Message())
	for i := range d.length(p+".events", w.Events().Len(), g.Events().Len()) {
		we, ge := w.Events().At(i), g.Events().At(i)
		ep := fmt.Sprintf("%s.events[%d]", p, i)
		check(d, ep+".timeUnixNano", we.Timestamp(), ge.Timestamp())
		check(d, ep+".name", we.Name(), ge.Name())
		d.attrs(ep+".attributes", we.Attributes(), ge.Attributes())
		check(d, ep+".droppedAttributesCount", we.DroppedAttributesCount(), ge.DroppedAttributesCount())
	}
	for i := range d.length(p+".links", w.Links().Len(), g.Links().Len()) {
		wl, gl := w.Links().At(i), g.Links().At(i)
		lp := fmt.Sprintf("%s.links[%d]", p, i)
		check(d, lp+".traceId", wl.TraceID(), gl.TraceID())
		check(d, lp+".spanId", wl.SpanID(), gl.SpanID())
		check(d, lp+".traceState", wl.TraceState().AsRaw(), gl.TraceState().AsRaw())
		check(d, lp+".flags", wl.Flags(), gl.Flags())
		d.attrs(lp+".attributes", wl.Attributes(), gl.Attributes())
		check(d, lp+".droppedAttributesCount", wl.DroppedAttributesCount(), gl.DroppedAttributesCount())
	}
}

func (d *differ) logs(want, got plog.Logs) {
	wrl, grl := want.ResourceLogs(), got.ResourceLogs()
	for i := range d.length("resourceLogs", wrl.Len(), grl.Len()) {
		w, g := wrl.At(i), grl.At(i)
		p := fmt.Sprintf("resourceLogs[%d]", i)
		d.resource(p+".resource", w.Resource(), g.Resource())
		check(d, p+".schemaUrl", w.SchemaUrl(), g.SchemaUrl())
		wsl, gsl := w.ScopeLogs(), g.ScopeLogs()
		for j := range d.length(p+".scopeLogs", wsl.Len(), gsl.Len()) {
			ws, gs := wsl.At(j), gsl.At(j)
			sp := fmt.Sprintf("%s.scopeLogs[%d]", p, j)
			d.scope(sp+".scope", ws.Scope(), gs.Scope())
			check(d, sp+".schemaUrl", ws.SchemaUrl(), gs.SchemaUrl())
			for k := range d.length(sp+".logRecords", ws.LogRecords().Len(), gs.LogRecords().Len()) {
				d.logRecord(fmt.Sprintf("%s.logRecords[%d]", sp, k), ws.LogRecords().At(k), gs.LogRecords().At(k))
			}
		}
	}
}

func (d *differ) logRecord(p string, w, g plog.LogRecord) {
	check(d, p+".timeUnixNano", w.Timestamp(), g.Timestamp())
	check(d, p+".observedTimeUnixNano", w.ObservedTimestamp(), g.ObservedTimestamp())
	check(d, p+".severityNumber", w.SeverityNumber(), g.SeverityNumber())
	check(d, p+".severityText", w.SeverityText(), g.SeverityText())
	check(d, p+".eventName", w.EventName(), g.EventName())
	d.value(p+".body", w.Body(), g.Body())
	d.attrs(p+".attributes", w.Attributes(), g.Attributes())
	check(d, p+".droppedAttributesCount", w.DroppedAttributesCount(), g.DroppedAttributesCount())
	check(d, p+".flags", w.Flags(), g.Flags())
	check(d, p+".traceId", w.TraceID(), g.TraceID())
	check(d, p+".spanId", w.SpanID(), g.SpanID())
}

func (d *differ) metrics(want, got pmetric.Metrics) {
	wrm, grm := want.ResourceMetrics(), got.ResourceMetrics()
	for i := range d.length("resourceMetrics", wrm.Len(), grm.Len()) {
		w, g := wrm.At(i), grm.At(i)
		p := fmt.Sprintf("resourceMetrics[%d]", i)
		d.resource(p+".resource", w.Resource(), g.Resource())
		check(d, p+".schemaUrl", w.SchemaUrl(), g.SchemaUrl())
		wsm, gsm := w.ScopeMetrics(), g.ScopeMetrics()
		for j := range d.length(p+".scopeMetrics", wsm.Len(), gsm.Len()) {
			ws, gs := wsm.At(j), gsm.At(j)
			sp := fmt.Sprintf("%s.scopeMetrics[%d]", p, j)
			d.scope(sp+".scope", ws.Scope(), gs.Scope())
			check(d, sp+".schemaUrl", ws.SchemaUrl(), gs.SchemaUrl())
			for k := range d.length(sp+".metrics", ws.Metrics().Len(), gs.Metrics().Len()) {
				d.metric(fmt.Sprintf("%s.metrics[%d]", sp, k), ws.Metrics().At(k), gs.Metrics().At(k))
			}
		}
	}
}

func (d *differ) metric(p string, w, g pmetric.Metric) {
	check(d, p+".name", w.Name(), g.Name())
	check(d, p+".description", w.Description(), g.Description())
	check(d, p+".unit", w.Unit(), g.Unit())
	d.attrs(p+".metadata", w.Metadata(), g.Metadata())
	check(d, p+".type", w.Type(), g.Type())
	if w.Type() != g.Type() {
		return
	}
	switch w.Type() {
	case pmetric.MetricTypeGauge:
		d.numberPoints(p+".gauge", w.Gauge().DataPoints(), g.Gauge().DataPoints())
	case pmetric.MetricTypeSum:
		check(d, p+".sum.aggregationTemporality", w.Sum().AggregationTemporality(), g.Sum().AggregationTemporality())
		check(d, p+".sum.isMonotonic", w.Sum().IsMonotonic(), g.Sum().IsMonotonic())
		d.numberPoints(p+".sum", w.Sum().DataPoints(), g.Sum().DataPoints())
	case pmetric.MetricTypeHistogram:
		check(d, p+".histogram.aggregationTemporality", w.Histogram().AggregationTemporality(), g.Histogram().AggregationTemporality())
		wp, gp := w.Histogram().DataPoints(), g.Histogram().DataPoints()
		for i := range d.length(p+".histogram.dataPoints", wp.Len(), gp.Len()) {
			d.histogramPoint(fmt.Sprintf("%s.histogram.dataPoints[%d]", p, i), wp.At(i), gp.At(i))
		}
	case pmetric.MetricTypeExponentialHistogram:
		wh, gh := w.ExponentialHistogram(), g.ExponentialHistogram()
		check(d, p+".exponentialHistogram.aggregationTemporality", wh.AggregationTemporality(), gh.AggregationTemporality())
		for i := range d.length(p+".exponentialHistogram.dataPoints", wh.DataPoints().Len(), gh.DataPoints().Len()) {
			d.expHistogramPoint(fmt.Sprintf("%s.exponentialHistogram.dataPoints[%d]", p, i), wh.DataPoints().At(i), gh.DataPoints().At(i))
		}
	case pmetric.MetricTypeSummary:
		wp, gp := w.Summary().DataPoints(), g.Summary().DataPoints()
		for i := range d.length(p+".summary.dataPoints", wp.Len(), gp.Len()) {
			d.summaryPoint(fmt.Sprintf("%s.summary.dataPoints[%d]", p, i), wp.At(i), gp.At(i))
		}
	}
}

// pointTimes is what every data point type has.
type pointTimes interface {
	Timestamp() pcommon.Timestamp
	StartTimestamp() pcommon.Timestamp
	Flags() pmetric.DataPointFlags
}

func (d *differ) pointCommon(p string, w, g pointTimes) {
	check(d, p+".timeUnixNano", w.Timestamp(), g.Timestamp())
	check(d, p+".startTimeUnixNano", w.StartTimestamp(), g.StartTimestamp())
	check(d, p+".flags", w.Flags(), g.Flags())
}

func (d *differ) numberPoints(p string, w, g pmetric.NumberDataPointSlice) {
	for i := range d.length(p+".dataPoints", w.Len(), g.Len()) {
		wp, gp := w.At(i), g.At(i)
		pp := fmt.Sprintf("%s.dataPoints[%d]", p, i)
		d.pointCommon(pp, wp, gp)
		d.attrs(pp+".attributes", wp.Attributes(), gp.Attributes())
		check(d, pp+".valueType", wp.ValueType(), gp.ValueType())
		d.float(pp+".asDouble", wp.DoubleValue(), gp.DoubleValue())
		check(d, pp+".asInt", wp.IntValue(), gp.IntValue())
		d.exemplars(pp+".exemplars", wp.Exemplars(), gp.Exemplars())
	}
}

// optional is a histogram's sum, min or max.
func (d *differ) optional(p string, wHas, gHas bool, w, g float64) {
	check(d, p+".set", wHas, gHas)
	d.float(p, w, g)
}

func (d *differ) histogramPoint(p string, w, g pmetric.HistogramDataPoint) {
	d.pointCommon(p, w, g)
	d.attrs(p+".attributes", w.Attributes(), g.Attributes())
	check(d, p+".count", w.Count(), g.Count())
	d.optional(p+".sum", w.HasSum(), g.HasSum(), w.Sum(), g.Sum())
	d.optional(p+".min", w.HasMin(), g.HasMin(), w.Min(), g.Min())
	d.optional(p+".max", w.HasMax(), g.HasMax(), w.Max(), g.Max())
	d.raw(p+".bucketCounts", toAny(w.BucketCounts().AsRaw()), toAny(g.BucketCounts().AsRaw()))
	d.raw(p+".explicitBounds", toAny(w.ExplicitBounds().AsRaw()), toAny(g.ExplicitBounds().AsRaw()))
	d.exemplars(p+".exemplars", w.Exemplars(), g.Exemplars())
}

func (d *differ) expHistogramPoint(p string, w, g pmetric.ExponentialHistogramDataPoint) {
	d.pointCommon(p, w, g)
	d.attrs(p+".attributes", w.Attributes(), g.Attributes())
	check(d, p+".count", w.Count(), g.Count())
	d.optional(p+".sum", w.HasSum(), g.HasSum(), w.Sum(), g.Sum())
	d.optional(p+".min", w.HasMin(), g.HasMin(), w.Min(), g.Min())
	d.optional(p+".max", w.HasMax(), g.HasMax(), w.Max(), g.Max())
	check(d, p+".scale", w.Scale(), g.Scale())
	check(d, p+".zeroCount", w.ZeroCount(), g.ZeroCount())
	d.float(p+".zeroThreshold", w.ZeroThreshold(), g.ZeroThreshold())
	check(d, p+".positive.offset", w.Positive().Offset(), g.Positive().Offset())
	d.raw(p+".positive.bucketCounts", toAny(w.Positive().BucketCounts().AsRaw()), toAny(g.Positive().BucketCounts().AsRaw()))
	check(d, p+".negative.offset", w.Negative().Offset(), g.Negative().Offset())
	d.raw(p+".negative.bucketCounts", toAny(w.Negative().BucketCounts().AsRaw()), toAny(g.Negative().BucketCounts().AsRaw()))
	d.exemplars(p+".exemplars", w.Exemplars(), g.Exemplars())
}

func (d *differ) summaryPoint(p string, w, g pmetric.SummaryDataPoint) {
	d.pointCommon(p, w, g)
	d.attrs(p+".attributes", w.Attributes(), g.Attributes())
	check(d, p+".count", w.Count(), g.Count())
	d.float(p+".sum", w.Sum(), g.Sum())
	wq, gq := w.QuantileValues(), g.QuantileValues()
	for i := range d.length(p+".quantileValues", wq.Len(), gq.Len()) {
		qp := fmt.Sprintf("%s.quantileValues[%d]", p, i)
		d.float(qp+".quantile", wq.At(i).Quantile(), gq.At(i).Quantile())
		d.float(qp+".value", wq.At(i).Value(), gq.At(i).Value())
	}
}

func (d *differ) exemplars(p string, w, g pmetric.ExemplarSlice) {
	for i := range d.length(p, w.Len(), g.Len()) {
		we, ge := w.At(i), g.At(i)
		ep := fmt.Sprintf("%s[%d]", p, i)
		check(d, ep+".timeUnixNano", we.Timestamp(), ge.Timestamp())
		check(d, ep+".valueType", we.ValueType(), ge.ValueType())
		d.float(ep+".asDouble", we.DoubleValue(), ge.DoubleValue())
		check(d, ep+".asInt", we.IntValue(), ge.IntValue())
		check(d, ep+".traceId", we.TraceID(), ge.TraceID())
		check(d, ep+".spanId", we.SpanID(), ge.SpanID())
		d.attrs(ep+".filteredAttributes", we.FilteredAttributes(), ge.FilteredAttributes())
	}
}

func toAny[T any](s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
