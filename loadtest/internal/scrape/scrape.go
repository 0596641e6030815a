// Package scrape reads Prometheus text endpoints (the collector's and the
// sidecar's) and turns histogram buckets into quantiles.
package scrape

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Snapshot is one scrape: metric families by name.
type Snapshot map[string]*dto.MetricFamily

var client = &http.Client{Timeout: 5 * time.Second}

// Fetch scrapes url.
func Fetch(url string) (Snapshot, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: status %s", url, resp.Status)
	}
	snap, err := Parse(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", url, err)
	}
	return snap, nil
}

// Parse reads the Prometheus text format.
func Parse(r io.Reader) (Snapshot, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

// matches reports whether m carries every label of want.
func matches(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			found++
		}
	}
	return found == len(want)
}

// Sum adds the values of every series of a counter, gauge or untyped metric
// whose labels include match. A missing metric sums to 0.
func (s Snapshot) Sum(name string, match map[string]string) float64 {
	var sum float64
	for _, m := range s[name].GetMetric() {
		if !matches(m, match) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Untyped != nil:
			sum += m.Untyped.GetValue()
		}
	}
	return sum
}

// Max is the largest value among the series of a counter, gauge or untyped
// metric whose labels include match; 0 when there is none.
func (s Snapshot) Max(name string, match map[string]string) float64 {
	var top float64
	for _, m := range s[name].GetMetric() {
		if !matches(m, match) {
			continue
		}
		switch {
		case m.Counter != nil:
			top = max(top, m.Counter.GetValue())
		case m.Gauge != nil:
			top = max(top, m.Gauge.GetValue())
		case m.Untyped != nil:
			top = max(top, m.Untyped.GetValue())
		}
	}
	return top
}

// Has reports whether the snapshot has the metric.
func (s Snapshot) Has(name string) bool { return s[name] != nil }

// Hist is a cumulative histogram: Counts[i] observations were at most
// Bounds[i]; Count includes those above the last bound.
type Hist struct {
	Bounds []float64
	Counts []float64
	Count  float64
	Sum    float64
}

// Histogram merges every series of name whose labels include match. The
// series must share bucket bounds, as series of one metric do.
func (s Snapshot) Histogram(name string, match map[string]string) Hist {
	var h Hist
	for _, m := range s[name].GetMetric() {
		if m.Histogram == nil || !matches(m, match) {
			continue
		}
		buckets := m.Histogram.GetBucket()
		if h.Bounds == nil {
			for _, b := range buckets {
				if math.IsInf(b.GetUpperBound(), 1) {
					continue
				}
				h.Bounds = append(h.Bounds, b.GetUpperBound())
			}
			h.Counts = make([]float64, len(h.Bounds))
		}
		for i, b := range buckets {
			if i < len(h.Counts) && b.GetUpperBound() == h.Bounds[i] {
				h.Counts[i] += float64(b.GetCumulativeCount())
			}
		}
		h.Count += float64(m.Histogram.GetSampleCount())
		h.Sum += m.Histogram.GetSampleSum()
	}
	return h
}

// Sub returns the observations made between prev and h.
func (h Hist) Sub(prev Hist) Hist {
	out := Hist{Bounds: h.Bounds, Counts: make([]float64, len(h.Counts)), Count: h.Count - prev.Count, Sum: h.Sum - prev.Sum}
	for i := range h.Counts {
		out.Counts[i] = h.Counts[i]
		if i < len(prev.Counts) {
			out.Counts[i] -= prev.Counts[i]
		}
	}
	return out
}

// Quantile estimates the q-quantile the way Prometheus' histogram_quantile
// does: linear within the bucket that holds it. Past the last bound it
// answers the last bound (the true value is only known to be above it). NaN
// when the histogram is empty.
func (h Hist) Quantile(q float64) float64 {
	if h.Count <= 0 || len(h.Bounds) == 0 {
		return math.NaN()
	}
	rank := q * h.Count
	lower, below := 0.0, 0.0
	for i, upper := range h.Bounds {
		if h.Counts[i] >= rank {
			inBucket := h.Counts[i] - below
			if inBucket <= 0 {
				return upper
			}
			return lower + (upper-lower)*(rank-below)/inBucket
		}
		lower, below = upper, h.Counts[i]
	}
	return h.Bounds[len(h.Bounds)-1]
}
