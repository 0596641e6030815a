package iceberg

import "github.com/prometheus/client_golang/prometheus"

// Results of a commit, the label of arcstore_iceberg_commits_total.
const (
	resultOK       = "ok"
	resultConflict = "conflict" // another committer moved the table first; retried
	resultError    = "error"    // catalog or storage unreachable, or refused; retried
)

// metrics are the arcstore_iceberg_* series.
type metrics struct {
	commits       *prometheus.CounterVec
	lag           prometheus.Gauge
	files         prometheus.Gauge
	refused       prometheus.Gauge
	lastCommitted prometheus.Gauge
}

func newMetrics() *metrics {
	m := &metrics{
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "arcstore_iceberg_commits_total",
			Help: "Iceberg commits (files added or removed, columns added, snapshots expired), by result: ok, conflict (another committer was first; retried), error (retried)."}, []string{"result"}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{Name: "arcstore_iceberg_lag_seconds",
			Help: "Age of the oldest file that belongs in a table and is not in it yet (0 when every table is current)."}),
		files: prometheus.NewGauge(prometheus.GaugeOpts{Name: "arcstore_iceberg_files",
			Help: "Data files the tables hold, after the last pass."}),
		refused: prometheus.NewGauge(prometheus.GaugeOpts{Name: "arcstore_iceberg_refused_files",
			Help: "Parquet files no table takes: a column's type conflicts with the table's, or nanosecond timestamps (logged once each)."}),
		lastCommitted: prometheus.NewGauge(prometheus.GaugeOpts{Name: "arcstore_iceberg_last_pass_timestamp_seconds",
			Help: "When a pass last brought every table up to date (Unix time)."}),
	}
	for _, r := range []string{resultOK, resultConflict, resultError} {
		m.commits.WithLabelValues(r)
	}
	return m
}

// Collectors are the committer's metrics, for the sidecar's registry.
func (c *Committer) Collectors() []prometheus.Collector {
	m := c.metrics
	return []prometheus.Collector{m.commits, m.lag, m.files, m.refused, m.lastCommitted}
}
