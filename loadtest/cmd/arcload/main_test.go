package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

	c, err = parseFlags([]string{"-sweep"})
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(c.ResultsDir, "-traces-sweep"), c.ResultsDir)
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFlags(tt.args)
			assert.ErrorContains(t, err, tt.msg)
		})
	}
}
