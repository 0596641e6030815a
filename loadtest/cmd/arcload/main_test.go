package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/loadtest/internal/loss"
	"github.com/arc-otel/arc-otel/loadtest/internal/report"
	"github.com/arc-otel/arc-otel/loadtest/internal/stack"
)

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{"-scenario", "logs", "-rate", "250000", "-duration", "2m", "-sidecar-args", "-flush-interval 5s  -compression snappy"})
	require.NoError(t, err)
	assert.Equal(t, "logs", c.Scenario)
	assert.Equal(t, 250000.0, c.Rate)
	assert.Equal(t, 2*time.Minute, c.Duration)
	assert.Equal(t, 1000, c.Batch, "batch size 1000 by default, as in the reference runs")
	assert.True(t, c.Ceiling, "the ceiling runs by default")
	assert.Equal(t, []string{"-flush-interval", "5s", "-compression", "snappy"}, c.SidecarArgs)
	assert.True(t, strings.HasPrefix(c.ResultsDir, "loadtest/results/"), c.ResultsDir)
	assert.True(t, strings.HasSuffix(c.ResultsDir, "-logs"), c.ResultsDir)

	assert.Equal(t, "tcp", c.Transport, "loopback TCP between collector and sidecar by default")
	c, err = parseFlags([]string{"-transport", "unix"})
	require.NoError(t, err)
	assert.Equal(t, "unix", c.Transport)

	c, err = parseFlags([]string{"-sweep"})
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(c.ResultsDir, "-traces-sweep"), c.ResultsDir)
}

func TestParseFlagsRunningArcTarget(t *testing.T) {
	c, err := parseFlags([]string{"-scenario", "arc-traces", "-target", "http://127.0.0.1:8000", "-target-pid", "4242",
		"-target-parquet", "/tmp/arc/data", "-target-settle", "12s", "-target-stop", "-workers", "8", "-fresh-times"})
	require.NoError(t, err)
	assert.Equal(t, "arc", c.Driver)
	assert.False(t, c.Ceiling)
	assert.Equal(t, 4242, c.TargetPID)
	assert.Equal(t, "/tmp/arc/data", c.TargetParquet)
	assert.Equal(t, 12*time.Second, c.TargetSettle)
	assert.True(t, c.TargetStop)
	assert.True(t, c.FreshTimes)
	assert.Zero(t, c.Payloads, "the scenario's default")
	assert.Equal(t, 8192, c.PayloadCount(), "8192 distinct batches by default, as the independent harness")
	assert.Equal(t, 2048, c.PayloadMiB)

	c, err = parseFlags([]string{"-scenario", "arc-traces-cycled"})
	require.NoError(t, err)
	assert.Equal(t, 64, c.PayloadCount(), "the payloads up to 2026-11-27")
	assert.Equal(t, "arc", c.Driver)

	c, err = parseFlags([]string{"-scenario", "arc-logs"})
	require.NoError(t, err)
	assert.Equal(t, 10*time.Second, c.TargetSettle, "longer than Arc's default 5 s flush age")
}

func TestParseFlagsRejects(t *testing.T) {
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"unknown scenario", []string{"-scenario", "events"}, `scenario "events"`},
		{"stray argument", []string{"traces"}, "unexpected arguments"},
		{"target without metrics", []string{"-target", "127.0.0.1:4317", "-ceiling=false"}, "-collector-metrics"},
		{"mixed with too few workers", []string{"-scenario", "mixed", "-workers", "2"}, "workers 2"},
		{"target pid of a started stack", []string{"-scenario", "arc-logs", "-target-pid", "42"}, "describe a running -target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFlags(tt.args)
			assert.ErrorContains(t, err, tt.msg)
		})
	}
}

// TestSummaryAgreesWithTheReport: the console gives the loss check's
// every count the Markdown report gives, and the same CPU per stored row.
func TestSummaryAgreesWithTheReport(t *testing.T) {
	ph := &report.Phase{Name: "arc", Export: "arc", Rate: 1000, Acked: map[string]int64{"logs": 1000},
		Loss:  []loss.Table{loss.Compute("logs", 1000, 1002, 1002)},
		Procs: map[string]stack.Usage{"arcstore": {CPUSeconds: 0.5, PeakRSSBytes: 297_521_152}}}
	ph.Loss[0].Files, ph.Loss[0].Bytes = 1, 50_100
	rep := &report.Report{Arc: ph, Failures: []string{"arc: table logs lost 0, duplicated 0, unexpected 2 of 1000 acknowledged"}}
	out := summary(rep)
	assert.Contains(t, out, "lost 0 duplicated 0 unexpected 2", "a verdict the console does not explain")
	assert.Contains(t, out, "499.00 µs per stored row")
	assert.Contains(t, rep.Markdown(), "| arcstore: CPU µs per stored row | 499.00 |")
	assert.Contains(t, out, "peak RSS 284 MiB", "283.7 MiB, rounded as the report rounds it")
	assert.Contains(t, rep.Markdown(), "| arcstore: CPU s / peak RSS | 0.5 s / 284 MiB |")
}
