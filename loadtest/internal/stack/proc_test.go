package stack

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseUsage(t *testing.T) {
	// A command name with a space and a parenthesis, as /proc allows.
	stat := []byte("1234 (my (proc) x) S 1 1234 1234 0 -1 4194560 500 0 0 0 250 50 0 0 20 0 8 0 100 1000000 2000 18446744073709551615")
	status := []byte("Name:\tmy\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t8\n")
	u, err := parseUsage(stat, status, 100)
	require.NoError(t, err)
	assert.Equal(t, 3.0, u.CPUSeconds, "utime 250 + stime 50 ticks at 100 Hz")
	assert.Equal(t, int64(100<<20), u.RSSBytes)
	assert.Equal(t, int64(200<<20), u.PeakRSSBytes)

	_, err = parseUsage([]byte("garbage"), status, 100)
	assert.Error(t, err)
}

func TestReadUsageOfThisProcess(t *testing.T) {
	u, err := ReadUsage(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, u.RSSBytes)
	assert.GreaterOrEqual(t, u.PeakRSSBytes, u.RSSBytes)
}

func TestCollectorConfigExports(t *testing.T) {
	arc := collectorConfig(Options{Export: ExportArc, QueueSize: 5000}, "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4", 5)
	assert.Contains(t, arc, `endpoint: "127.0.0.1:3"`)
	assert.Contains(t, arc, "queue_size: 5000, block_on_overflow: true")
	assert.Contains(t, arc, "exporters: [arc]")
	nop := collectorConfig(Options{Export: ExportNop}, "127.0.0.1:1", "127.0.0.1:2", "", "127.0.0.1:4", 5)
	assert.Contains(t, nop, "nop: {}")
	assert.Contains(t, nop, "exporters: [nop]")
	assert.Contains(t, nop, "processors: [memory_limiter]", "the ceiling runs the same processors")
}
