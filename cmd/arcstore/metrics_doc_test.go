package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/receiver"
	"github.com/arc-otel/arc-otel/storage"
)

// docSink is a sink that makes the per-sink metrics appear.
type docSink struct{}

func (docSink) Name() string                                   { return "clickhouse" }
func (docSink) Write(context.Context, storage.SinkWrite) error { return nil }
func (docSink) Close() error                                   { return nil }

// TestMetricsDocumented checks the metrics table of docs/OPERATIONS.md
// against what the sidecar registers with every component on (a sink,
// -s3-bucket, -iceberg): each arcstore_ metric has a row, with its labels,
// and each row names a metric that exists.
func TestMetricsDocumented(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	quiet := slog.New(slog.DiscardHandler)
	metrics := receiver.NewMetrics()
	store, err := storage.Open(storage.Options{DataDir: t.TempDir(), Logger: quiet, Observer: metrics, Sinks: []storage.Sink{docSink{}}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	metrics.WatchStore(store)
	c, err := parseFlags([]string{"-data-dir", t.TempDir(), "-s3-bucket", "b", "-iceberg"})
	require.NoError(t, err)
	committer, err := newCommitter(c, quiet)
	require.NoError(t, err)
	t.Cleanup(committer.Stop)
	uploader, err := newUploader(c, quiet, nil)
	require.NoError(t, err)
	metrics.Register(committer.Collectors()...)
	metrics.Register(uploader.Collectors()...)

	registered := map[string]string{} // name: its labels, sorted, comma-separated
	descs := make(chan *prometheus.Desc)
	go func() {
		metrics.Describe(descs)
		close(descs)
	}()
	fields := regexp.MustCompile(`^Desc\{fqName: "([^"]+)".*constLabels: \{([^}]*)\}, variableLabels: \{([^}]*)\}\}$`)
	for d := range descs {
		m := fields.FindStringSubmatch(d.String())
		require.NotNil(t, m, "a descriptor: %s", d)
		if !strings.HasPrefix(m[1], "arcstore_") {
			continue // the Go runtime's and the process's
		}
		var labels []string
		for _, l := range strings.Split(m[2], ",") {
			if name, _, ok := strings.Cut(l, "="); ok {
				labels = append(labels, name)
			}
		}
		if m[3] != "" {
			labels = append(labels, strings.Split(m[3], ",")...)
		}
		slices.Sort(labels)
		registered[m[1]] = strings.Join(labels, ",")
	}
	require.Greater(t, len(registered), 40, "the sidecar's metrics: %v", registered)

	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "OPERATIONS.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "\n## Metrics\n")
	require.True(t, ok, "docs/OPERATIONS.md has a Metrics section")
	section, _, _ = strings.Cut(section, "\n## ")
	documented := map[string]string{}
	for _, m := range regexp.MustCompile("`(arcstore_[a-z_]+)(?:\\{([a-z_,]*)\\})?`").FindAllStringSubmatch(section, -1) {
		labels := strings.Split(m[2], ",")
		slices.Sort(labels)
		documented[m[1]] = strings.Join(labels, ",")
	}
	for name, labels := range registered {
		got, ok := documented[name]
		if assert.True(t, ok, "docs/OPERATIONS.md#metrics lists %s", name) {
			assert.Equal(t, labels, got, "the labels of %s in docs/OPERATIONS.md#metrics", name)
		}
	}
	for name := range documented {
		assert.Contains(t, registered, name, "docs/OPERATIONS.md#metrics lists %s, which the sidecar does not serve", name)
	}
}
