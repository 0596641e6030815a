package upload

import "github.com/prometheus/client_golang/prometheus"

// metrics are the arcstore_upload_* series.
type metrics struct {
	objects                         *prometheus.CounterVec
	bytes, replaced, aborted        prometheus.Counter
	localDeleted                    prometheus.Counter
	duration                        prometheus.Histogram
	backlogPartitions, backlogBytes prometheus.Gauge
	ready                           prometheus.Gauge
}

func newMetrics() *metrics {
	m := &metrics{
		objects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "arcstore_upload_objects_total",
			Help: "Files uploaded to the bucket, by result: ok (verified), refused (the bucket answered no; retried), error (unreachable, credentials; retried)."}, []string{"result"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "arcstore_upload_bytes_total",
			Help: "Bytes of files uploaded and verified."}),
		replaced: prometheus.NewCounter(prometheus.CounterOpts{Name: "arcstore_upload_replaced_objects_total",
			Help: "Objects deleted from the bucket because a later compaction merged their rows (late rows) into a file uploaded since."}),
		aborted: prometheus.NewCounter(prometheus.CounterOpts{Name: "arcstore_upload_aborted_multipart_total",
			Help: "Multipart uploads aborted: failed, or cut off by a crash and aborted on the next start."}),
		localDeleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "arcstore_upload_local_deleted_partitions_total",
			Help: "Local partitions deleted by -local-retention or -retention after every file was verified in the bucket."}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "arcstore_upload_duration_seconds",
			Help: "Upload and verification of one file.", Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}}),
		backlogPartitions: prometheus.NewGauge(prometheus.GaugeOpts{Name: "arcstore_upload_backlog_partitions",
			Help: "Closed partitions with files the bucket lacks (waiting for compaction or upload)."}),
		backlogBytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "arcstore_upload_backlog_bytes",
			Help: "Bytes of closed partitions' files the bucket lacks."}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{Name: "arcstore_upload_ready",
			Help: "1 unless the bucket refused the credentials or does not exist (then /ready fails too)."}),
	}
	for _, r := range []string{"ok", "refused", "error"} {
		m.objects.WithLabelValues(r)
	}
	m.ready.Set(1)
	return m
}

// Collectors are the uploader's metrics, for the sidecar's registry.
func (u *Uploader) Collectors() []prometheus.Collector {
	m := u.metrics
	return []prometheus.Collector{m.objects, m.bytes, m.replaced, m.aborted, m.localDeleted, m.duration, m.backlogPartitions, m.backlogBytes, m.ready}
}
