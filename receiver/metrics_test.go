package receiver

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/arcflight"
	"github.com/arc-otel/arc-otel/storage/storagetest"
)

func scrapeMetrics(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rr := httptest.NewRecorder()
	m.Handler().ServeHTTP(rr, httptest.NewRequest("GET", PathMetrics, nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rr.Body)
	require.NoError(t, err)
	return fams
}

// value is the value of the series of name whose labels include want.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var sum float64
	for _, m := range fams[name].GetMetric() {
		ok := true
		for _, l := range m.GetLabel() {
			if v, in := want[l.GetName()]; in && v != l.GetValue() {
				ok = false
			}
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

func TestMetricsCountWhatWasStoredAndRefused(t *testing.T) {
	f := newFixture(t)
	a, _ := storagetest.LogBatch(t, "a", t0, t0, t0)
	b, _ := storagetest.LogBatch(t, "b", t0, t0)
	defer a.Release()
	defer b.Release()
	_, err := f.put(t, arcflight.Descriptor("default", "logs"), a, b)
	require.NoError(t, err)
	future, _ := storagetest.LogBatch(t, "late", time.Now().AddDate(5, 0, 0))
	defer future.Release()
	_, err = f.put(t, arcflight.Descriptor("prod", "logs"), future)
	require.Error(t, err)

	logs := map[string]string{"database": "default", "table": "logs"}
	fams := scrapeMetrics(t, f.metrics)
	assert.Equal(t, 5.0, value(fams, "arcstore_rows_received_total", logs))
	assert.Equal(t, 5.0, value(fams, "arcstore_rows_stored_total", logs), "received = stored")
	assert.Zero(t, value(fams, "arcstore_rows_rejected_total", logs))
	assert.Equal(t, 1.0, value(fams, "arcstore_rows_rejected_total", map[string]string{"database": "prod"}))
	assert.Zero(t, value(fams, "arcstore_rows_dropped_total", nil))
	require.NotNil(t, fams["arcstore_rows_dropped_total"], "dropped is visible at 0")
	assert.Equal(t, 2.0, value(fams, "arcstore_ack_duration_seconds", logs), "one latency per stored batch")
	assert.Positive(t, value(fams, "arcstore_wal_fsync_duration_seconds", nil))
	assert.Positive(t, value(fams, "arcstore_bytes_stored_total", logs))
	assert.Positive(t, value(fams, "arcstore_buffer_bytes", nil))
	assert.Positive(t, value(fams, "arcstore_buffer_limit_bytes", nil))
	assert.Positive(t, value(fams, "arcstore_wal_bytes", nil))
	assert.Equal(t, 1.0, value(fams, "arcstore_wal_segments", nil))

	require.NoError(t, f.store.Flush())
	fams = scrapeMetrics(t, f.metrics)
	assert.Equal(t, 1.0, value(fams, "arcstore_files_written_total", logs))
	assert.Positive(t, value(fams, "arcstore_file_bytes_written_total", logs))
	assert.Equal(t, 1.0, value(fams, "arcstore_flushes_total", map[string]string{"result": "ok"}))
	assert.Equal(t, 1.0, value(fams, "arcstore_flush_duration_seconds", nil))
	assert.Zero(t, value(fams, "arcstore_buffer_bytes", nil), "flushed")
}

// The Grafana dashboard only charts metrics the sidecar serves.
func TestDashboardUsesRealMetrics(t *testing.T) {
	f := newFixture(t)
	// Labelled series appear once something happened: a write, a flush, a
	// compaction.
	rec, _ := storagetest.LogBatch(t, "a", t0)
	defer rec.Release()
	_, err := f.put(t, arcflight.Descriptor("default", "logs"), rec)
	require.NoError(t, err)
	require.NoError(t, f.store.Flush())
	_, err = f.store.Compact(context.Background(), 0)
	require.NoError(t, err)
	fams := scrapeMetrics(t, f.metrics)
	data, err := os.ReadFile(filepath.Join("..", "deploy", "grafana", "dashboards", "arc-otel.json"))
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	require.NoError(t, json.Unmarshal(data, &dash))
	require.NotEmpty(t, dash.Panels)
	seen := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, name := range regexp.MustCompile(`arcstore_[a-z_]+`).FindAllString(tg.Expr, -1) {
				name = strings.TrimSuffix(name, "_bucket")
				assert.Contains(t, fams, name, "panel %q charts %s", p.Title, name)
				seen++
			}
		}
	}
	assert.Greater(t, seen, 10)
}
