package scrape

import (
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const exposition = `# TYPE otelcol_receiver_accepted_spans counter
otelcol_receiver_accepted_spans{receiver="otlp",transport="grpc"} 1500
otelcol_receiver_accepted_spans{receiver="otlp",transport="http"} 500
# TYPE otelcol_exporter_queue_size gauge
otelcol_exporter_queue_size{exporter="arc"} 42
otelcol_exporter_queue_size{exporter="debug"} 7
# TYPE arcstore_ack_duration_seconds histogram
arcstore_ack_duration_seconds_bucket{table="traces",le="0.001"} 10
arcstore_ack_duration_seconds_bucket{table="traces",le="0.01"} 90
arcstore_ack_duration_seconds_bucket{table="traces",le="0.1"} 100
arcstore_ack_duration_seconds_bucket{table="traces",le="+Inf"} 100
arcstore_ack_duration_seconds_sum{table="traces"} 0.5
arcstore_ack_duration_seconds_count{table="traces"} 100
arcstore_ack_duration_seconds_bucket{table="logs",le="0.001"} 100
arcstore_ack_duration_seconds_bucket{table="logs",le="0.01"} 100
arcstore_ack_duration_seconds_bucket{table="logs",le="0.1"} 100
arcstore_ack_duration_seconds_bucket{table="logs",le="+Inf"} 100
arcstore_ack_duration_seconds_sum{table="logs"} 0.05
arcstore_ack_duration_seconds_count{table="logs"} 100
`

func TestFetchSumAndHistogram(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(exposition)) }))
	defer srv.Close()
	snap, err := Fetch(srv.URL)
	require.NoError(t, err)

	assert.Equal(t, 2000.0, snap.Sum("otelcol_receiver_accepted_spans", nil))
	assert.Equal(t, 500.0, snap.Sum("otelcol_receiver_accepted_spans", map[string]string{"transport": "http"}))
	assert.Equal(t, 42.0, snap.Sum("otelcol_exporter_queue_size", map[string]string{"exporter": "arc"}))
	assert.Zero(t, snap.Sum("no_such_metric", nil))

	traces := snap.Histogram("arcstore_ack_duration_seconds", map[string]string{"table": "traces"})
	assert.Equal(t, []float64{0.001, 0.01, 0.1}, traces.Bounds)
	assert.Equal(t, []float64{10, 90, 100}, traces.Counts)
	all := snap.Histogram("arcstore_ack_duration_seconds", nil)
	assert.Equal(t, []float64{110, 190, 200}, all.Counts, "series merge bucket by bucket")
	assert.Equal(t, 200.0, all.Count)
}

func TestFetchErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, err := Fetch(srv.URL)
	assert.ErrorContains(t, err, "404")
}

func TestQuantile(t *testing.T) {
	h := Hist{Bounds: []float64{1, 2, 4}, Counts: []float64{50, 90, 100}, Count: 100}
	tests := []struct {
		name string
		q    float64
		want float64
	}{
		{name: "median at the first bucket's top", q: 0.5, want: 1},
		{name: "interpolated in the first bucket", q: 0.25, want: 0.5},
		{name: "interpolated in the second bucket", q: 0.7, want: 1.5},
		{name: "p99 in the last bucket", q: 0.99, want: 3.8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.InDelta(t, tt.want, h.Quantile(tt.q), 1e-9)
		})
	}
	over := Hist{Bounds: []float64{1, 2}, Counts: []float64{0, 0}, Count: 10}
	assert.Equal(t, 2.0, over.Quantile(0.5), "past the last bound answers the last bound")
	assert.True(t, math.IsNaN(Hist{}.Quantile(0.5)), "empty is NaN")
}

func TestSub(t *testing.T) {
	before := Hist{Bounds: []float64{1, 2}, Counts: []float64{5, 8}, Count: 10, Sum: 9}
	after := Hist{Bounds: []float64{1, 2}, Counts: []float64{7, 18}, Count: 22, Sum: 30}
	d := after.Sub(before)
	assert.Equal(t, []float64{2, 10}, d.Counts)
	assert.Equal(t, 12.0, d.Count)
	assert.Equal(t, 21.0, d.Sum)
	assert.Equal(t, after.Counts, after.Sub(Hist{}).Counts, "subtracting nothing (no earlier scrape) keeps all")
}

// TestQuantileOfKnownDistributions observes known values into a real
// Prometheus histogram split over two series, scrapes it, and checks that
// each estimate falls in the bucket that holds the true quantile (all a
// histogram can tell), exactly on it where the values are uniform.
func TestQuantileOfKnownDistributions(t *testing.T) {
	bounds := []float64{0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1}
	repeat := func(v float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	var uniform []float64
	for i := 1; i <= 1000; i++ {
		uniform = append(uniform, float64(i)*0.0001) // 0.1 to 100 ms
	}
	tests := []struct {
		name   string
		values []float64
		exact  map[float64]float64 // where interpolation is exact
	}{
		{name: "uniform", values: uniform, exact: map[float64]float64{0.5: 0.05, 0.95: 0.095, 0.99: 0.099}},
		{name: "one value", values: repeat(0.003, 500)},
		{name: "a slow tenth", values: append(repeat(0.0005, 900), repeat(0.08, 100)...)},
		{name: "a slow thousandth", values: append(repeat(0.0015, 999), 0.04)},
		{name: "past the last bound", values: append(repeat(0.003, 90), repeat(0.5, 10)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lat_seconds", Buckets: bounds}, []string{"table"})
			reg.MustRegister(h)
			for i, v := range tt.values {
				h.WithLabelValues([]string{"a", "b"}[i%2]).Observe(v)
			}
			srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
			defer srv.Close()
			snap, err := Fetch(srv.URL)
			require.NoError(t, err)
			got := snap.Histogram("lat_seconds", nil).Sub(Hist{})
			require.Equal(t, float64(len(tt.values)), got.Count)

			sorted := slices.Clone(tt.values)
			slices.Sort(sorted)
			for _, q := range []float64{0.5, 0.95, 0.99, 0.999} {
				truth := sorted[int(math.Ceil(q*float64(len(sorted))))-1]
				est := got.Quantile(q)
				if want, ok := tt.exact[q]; ok {
					assert.InDelta(t, want, est, 1e-9, "q %v", q)
				}
				if truth > bounds[len(bounds)-1] {
					assert.Equal(t, bounds[len(bounds)-1], est, "q %v past the last bound answers it", q)
					continue
				}
				i, _ := slices.BinarySearch(bounds, truth) // the bucket holding truth
				lower := 0.0
				if i > 0 {
					lower = bounds[i-1]
				}
				assert.True(t, est > lower && est <= bounds[i], "q %v: estimate %v outside the bucket (%v, %v] of the true %v", q, est, lower, bounds[i], truth)
			}
		})
	}
}
