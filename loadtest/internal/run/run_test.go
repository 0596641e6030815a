package run

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/loadtest/internal/driver"
	"github.com/arc-otel/arc-otel/loadtest/internal/loss"
	"github.com/arc-otel/arc-otel/loadtest/internal/report"
	"github.com/arc-otel/arc-otel/loadtest/internal/scrape"
	"github.com/arc-otel/arc-otel/loadtest/internal/stack"
)

func validConfig() Config {
	return Config{Scenario: "mixed", Driver: DriverOTLP, Rate: 0, Duration: time.Minute, Workers: 4, Batch: 1000, Interval: 5 * time.Second}
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, validConfig().Validate())
	assert.Equal(t, []driver.Signal{driver.Traces, driver.Logs, driver.Metrics}, validConfig().Signals())
	tests := []struct {
		name   string
		change func(*Config)
		msg    string
	}{
		{"unknown scenario", func(c *Config) { c.Scenario = "spans" }, `scenario "spans"`},
		{"unknown driver", func(c *Config) { c.Driver = "k6" }, `driver "k6"`},
		{"negative rate", func(c *Config) { c.Rate = -5 }, "rate -5"},
		{"too few workers for mixed", func(c *Config) { c.Workers = 2 }, "workers 2"},
		{"no batch", func(c *Config) { c.Batch = 0 }, "batch 0"},
		{"running target without its metrics", func(c *Config) { c.Target = "127.0.0.1:4317"; c.Ceiling = false }, "-collector-metrics"},
		{"ceiling against a running target", func(c *Config) { c.Target = "x:1"; c.CollectorMetrics = "http://x/metrics"; c.Ceiling = true }, "ceiling needs a stack"},
		{"target pid without a target", func(c *Config) { c.TargetPID = 42 }, "describe a running -target"},
		{"target parquet without a target", func(c *Config) { c.TargetParquet = "/data" }, "describe a running -target"},
		{"negative payloads", func(c *Config) { c.Scenario = "arc-logs"; c.Driver = DriverArc; c.Payloads = -1 }, "payloads -1"},
		{"negative payload memory", func(c *Config) { c.PayloadMiB = -1 }, "payload memory -1"},
		{"stop without a pid", func(c *Config) {
			c.Target = "http://x"
			c.Scenario = "arc-logs"
			c.Driver = DriverArc
			c.TargetStop = true
		}, "-target-stop needs -target-pid"},
		{"negative target pid", func(c *Config) {
			c.Target = "http://x"
			c.Scenario = "arc-logs"
			c.Driver = DriverArc
			c.TargetPID = -1
		}, "target pid -1"},
		{"two places for the rows", func(c *Config) {
			c.Target, c.CollectorMetrics, c.TargetParquet, c.DataDir, c.TargetSettle = "x:1", "http://x/metrics", "/a", "/b", time.Second
		}, "give one"},
		{"parquet that never settles", func(c *Config) {
			c.Target, c.CollectorMetrics, c.TargetParquet = "x:1", "http://x/metrics", "/a"
		}, "target settle 0s"},
		{"contrib collector without its ClickHouse", func(c *Config) { c.ContribCollector = "otelcol-contrib" }, "-contrib-clickhouse-addr"},
		{"contrib collector with telemetrygen", func(c *Config) {
			c.ContribCollector, c.ContribClickHouseAddr, c.ClickHouseHTTP = "otelcol-contrib", "127.0.0.1:9000", "http://127.0.0.1:8123"
			c.Driver = DriverTelemetrygen
		}, "needs the otlp driver"},
		{"contrib collector at a running target", func(c *Config) {
			c.ContribCollector, c.ContribClickHouseAddr, c.ClickHouseHTTP = "otelcol-contrib", "127.0.0.1:9000", "http://127.0.0.1:8123"
			c.Target, c.CollectorMetrics, c.Ceiling = "x:1", "http://x/metrics", false
		}, "no -target"},
		{"negative clickhouse pid", func(c *Config) { c.ClickHousePID = -1 }, "clickhouse pid -1"},
		{"unknown transport", func(c *Config) { c.Transport = "vsock" }, `transport "vsock": want tcp or unix`},
		{"sweep without a step", func(c *Config) {
			c.Sweep = SweepConfig{Enabled: true, Start: 1, Hold: time.Minute, MaxP99: time.Second}
		}, "sweep start"},
		{"sweep step too short to be steady", func(c *Config) {
			c.Sweep = SweepConfig{Enabled: true, Start: 1, Step: 1, Hold: 5 * time.Second, MaxP99: time.Second}
		}, "sweep hold 5s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.change(&c)
			assert.ErrorContains(t, c.Validate(), tt.msg)
		})
	}
}

func TestParseScenarios(t *testing.T) {
	got, err := ParseScenarios("traces, logs,mixed")
	require.NoError(t, err)
	assert.Equal(t, []string{"traces", "logs", "mixed"}, got)
	_, err = ParseScenarios("traces,events")
	assert.ErrorContains(t, err, `scenario "events"`)
}

func TestJudgeStep(t *testing.T) {
	r := &Runner{Config: Config{Interval: 5 * time.Second, Sweep: SweepConfig{MaxP99: 50 * time.Millisecond}}}
	steady := func(rate, durable, queue float64, cpu map[string]float64) []report.Sample {
		return []report.Sample{
			{Rate: rate / 2, Durable: durable, CPU: cpu, QueueItems: 10}, // the ramp: ignored
			{Rate: rate, Durable: durable, CPU: cpu, QueueItems: 10 + queue/2},
			{Rate: rate, Durable: durable, CPU: cpu, QueueItems: 10 + queue},
		}
	}
	cpu := map[string]float64{"arcstore": 1.1, "otelcol-arc": 0.7}
	tests := []struct {
		name    string
		rate    float64
		errs    int64
		queue   float64
		durable float64
		passed  bool
		why     string
	}{
		{name: "on target", rate: 99_000, passed: true},
		{name: "under 95 percent", rate: 90_000, why: "achieved 90.0 % of the target"},
		{name: "errors fail a step", rate: 100_000, errs: 3, why: "3 errors"},
		{name: "a growing queue fails a step", rate: 100_000, queue: 300, why: "exporter queue grew by 30 % of its capacity"},
		{name: "durable rate under target", rate: 100_000, durable: 80_000, why: "durable rate 80.0 % of the target"},
	}
	end := point{collector: parse(t, "# TYPE otelcol_exporter_queue_capacity gauge\notelcol_exporter_queue_capacity{exporter=\"arc\",data_type=\"traces\"} 1000\n")}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := r.judge(steady(tt.rate, tt.durable, tt.queue, cpu), point{}, end, 100_000, tt.errs)
			assert.Equal(t, tt.passed, st.Passed)
			assert.Equal(t, tt.why, st.Why)
			assert.InDelta(t, tt.rate, st.Rate, 1e-6, "the ramp interval is not averaged in")
			assert.InDelta(t, 1.1, st.CPU["arcstore"], 1e-9)
			assert.True(t, math.IsNaN(float64(st.AckLatency.P99)), "no sidecar histogram, no latency")
		})
	}
}

func parse(t *testing.T, text string) scrape.Snapshot {
	t.Helper()
	snap, err := scrape.Parse(strings.NewReader(text))
	require.NoError(t, err)
	return snap
}

func TestSaturated(t *testing.T) {
	tests := []struct {
		name string
		step report.Step
		want string
	}{
		{name: "busiest process", step: report.Step{CPU: map[string]float64{"arcstore": 1.2, "otelcol-arc": 0.6}, FsyncP99: report.Float(math.NaN())},
			want: "CPU: 1.80 cores in use; busiest arcstore (1.20 cores)"},
		{name: "queue and fsync first", step: report.Step{QueueFill: 0.9, FsyncP99: 35, CPU: map[string]float64{"arcstore": 0.3}},
			want: "the arc exporter's sending queue (90 % full): the export path behind the collector is slower than intake; WAL fsync (p99 35.0 ms); CPU: 0.30 cores in use; busiest arcstore (0.30 cores)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, saturated(tt.step))
		})
	}
}

func TestFailures(t *testing.T) {
	rep := &report.Report{Arc: &report.Phase{Name: "arc", Loss: []loss.Table{
		loss.Compute("traces", 100, 100, 100),
		loss.Compute("logs", 100, 102, 100),
	}, Errors: 2}}
	assert.Equal(t, []string{
		"arc: table logs lost 0, duplicated 2, unexpected 0 of 100 acknowledged",
		"arc: 2 failed requests (retried)",
	}, failures(rep))
	rep.Arc.Loss, rep.Arc.Errors = rep.Arc.Loss[:1], 0
	assert.Empty(t, failures(rep))
}

func TestArcScenarioShapes(t *testing.T) {
	for _, tt := range []struct {
		scenario string
		shape    driver.Shape
		signals  []driver.Signal
	}{
		{"arc-logs", driver.ShapeNew, []driver.Signal{driver.ArcLogs}},
		{"arc-traces", driver.ShapeNew, []driver.Signal{driver.ArcTraces}},
		{"arc-mixed", driver.ShapeNew, []driver.Signal{driver.ArcMetrics, driver.ArcLogs, driver.ArcTraces, driver.ArcEvents}},
		{"arc-logs-cycled", driver.ShapeCycled, []driver.Signal{driver.ArcLogs}},
		{"arc-traces-cycled", driver.ShapeCycled, []driver.Signal{driver.ArcTraces}},
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			c := Config{Scenario: tt.scenario, Driver: DriverArc, Duration: time.Minute, Workers: 8, Batch: 1000, Interval: 5 * time.Second}
			require.NoError(t, c.Validate())
			assert.True(t, IsArc(tt.scenario))
			assert.Equal(t, tt.shape, c.ArcShape())
			assert.Equal(t, tt.signals, c.Signals())
		})
	}
}

func TestPayloadCount(t *testing.T) {
	base := Config{Scenario: "arc-logs", Driver: DriverArc, Duration: time.Minute, Workers: 8, Batch: 1000, Interval: 5 * time.Second}
	for _, tt := range []struct {
		name   string
		change func(*Config)
		want   int
	}{
		{"the new shape's default", func(*Config) {}, 8192},
		{"the cycled shape's default", func(c *Config) { c.Scenario = "arc-logs-cycled" }, 64},
		{"asked for", func(c *Config) { c.Payloads = 1024 }, 1024},
		// 20 000 rows/s for 3 s in batches of 1000: 60 sends, 8 more for the workers.
		{"no more than a paced run sends", func(c *Config) { c.Rate, c.Duration = 20_000, 3*time.Second }, 68},
		{"a fast paced run gets them all", func(c *Config) { c.Rate = 1_000_000 }, 8192},
		{"a sweep's steps change the rate", func(c *Config) {
			c.Rate, c.Duration, c.Sweep = 20_000, 3*time.Second, SweepConfig{Enabled: true}
		}, 8192},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.change(&c)
			assert.Equal(t, tt.want, c.PayloadCount())
		})
	}
}

func TestConfigAcceptsARunningArcTarget(t *testing.T) {
	c := Config{Scenario: "arc-traces", Driver: DriverArc, Duration: time.Minute, Workers: 8, Batch: 1000, Interval: 5 * time.Second, Payloads: 64,
		Target: "http://127.0.0.1:8000", TargetPID: 1234, TargetParquet: "/tmp/arc/data", TargetSettle: 10 * time.Second}
	assert.NoError(t, c.Validate())
}

// fakeClock advances only when slept on.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time        { return c.t }
func (c *fakeClock) sleep(d time.Duration) { c.t = c.t.Add(d) }

func TestSettle(t *testing.T) {
	tests := []struct {
		name    string
		states  []int // what the probe sees on successive calls; the last repeats
		quiet   time.Duration
		timeout time.Duration
		last    time.Duration
		err     string
	}{
		{name: "nothing changes", states: []int{5}, quiet: 3 * time.Second, timeout: time.Minute, last: 0},
		{name: "a late flush restarts the wait", states: []int{1, 1, 2, 2, 2, 3}, quiet: 3 * time.Second, timeout: time.Minute, last: 5 * time.Second},
		{name: "never holds still", states: []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, quiet: 3 * time.Second, timeout: 8 * time.Second,
			err: "still changed 8s after the load"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC)}
			calls := 0
			probe := func() (any, error) {
				v := tt.states[min(calls, len(tt.states)-1)]
				calls++
				return []int{v}, nil
			}
			last, err := settle(probe, tt.quiet, tt.timeout, clock.now, clock.sleep)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.last, last)
		})
	}
}

func TestSettleStopsOnProbeError(t *testing.T) {
	clock := &fakeClock{}
	_, err := settle(func() (any, error) { return nil, errors.New("disk gone") }, time.Second, time.Minute, clock.now, clock.sleep)
	assert.ErrorContains(t, err, "disk gone")
}

// TestTargetProcessWatched: a running target's process is sampled by pid
// and reported with its CPU since the phase's start.
func TestTargetProcessWatched(t *testing.T) {
	// Use some CPU first, so counting from the phase's start shows.
	for u, err := stack.SelfUsage(); u.CPUSeconds < 0.02; u, err = stack.SelfUsage() {
		require.NoError(t, err)
	}
	tgt := &target{name: "target", pids: map[string]int{procTarget: os.Getpid()}}
	w, err := newWatcher(tgt, []driver.Signal{driver.ArcLogs}, driver.NewRecorder(), "", func(string) {})
	require.NoError(t, err)
	require.Contains(t, w.first.usage, procTarget)
	assert.Positive(t, w.first.usage[procTarget].PeakRSSBytes)
	s, err := w.sample(0)
	require.NoError(t, err)
	assert.Contains(t, s.CPU, procTarget)

	ph := &report.Phase{Procs: map[string]stack.Usage{}}
	require.NoError(t, targetUsage(tgt, w.first, ph))
	u := ph.Procs[procTarget]
	whole, err := stack.SelfUsage()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, u.CPUSeconds, 0.0)
	assert.Less(t, u.CPUSeconds, whole.CPUSeconds, "counted from the phase's start, not the process's")
	assert.Positive(t, u.PeakRSSBytes)

	gone := &target{pids: map[string]int{procTarget: 1 << 30}}
	assert.ErrorContains(t, targetUsage(gone, point{}, ph), "target process")
}

func TestConfigAcceptsTheContribCollector(t *testing.T) {
	c := validConfig()
	c.ContribCollector, c.ContribClickHouseAddr, c.ClickHouseHTTP, c.ClickHousePID = "otelcol-contrib", "127.0.0.1:9000", "http://127.0.0.1:8123", 42
	assert.NoError(t, c.Validate())
}

// TestStackProcessCountedFromThePhasesStart: a started process's CPU
// before the phase's first point (its start-up) is not the load's; what it
// uses after, up to its exit, is.
func TestStackProcessCountedFromThePhasesStart(t *testing.T) {
	dir := t.TempDir()
	stopBurning := filepath.Join(dir, "stop")
	// Busy until the file appears (its start-up), then idle until SIGTERM.
	p, err := stack.StartProc(dir, "burner", "sh", "-c", `while [ ! -e "$1" ]; do :; done; exec sleep 60`, "sh", stopBurning)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Stop(5 * time.Second) })
	for u, err := p.Usage(); u.CPUSeconds < 0.3; u, err = p.Usage() {
		require.NoError(t, err)
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, os.WriteFile(stopBurning, nil, 0o644))
	time.Sleep(100 * time.Millisecond) // the loop's last test

	tgt := &target{name: "stack", procs: map[string]*stack.Proc{procSidecar: p}}
	w, err := newWatcher(tgt, []driver.Signal{driver.Logs}, driver.NewRecorder(), "", func(string) {})
	require.NoError(t, err)
	require.GreaterOrEqual(t, w.first.usage[procSidecar].CPUSeconds, 0.3)
	// SIGTERM ends the sleep: its exit status says so.
	require.ErrorContains(t, p.Stop(5*time.Second), "terminated")

	ph := &report.Phase{Procs: map[string]stack.Usage{}}
	stackUsage(tgt, w.first, ph)
	u := ph.Procs[procSidecar]
	whole, err := p.Usage()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, whole.CPUSeconds, 0.3, "the kernel's account after exit")
	assert.Less(t, u.CPUSeconds, 0.15, "counted from the phase's start, not the process's")
	assert.GreaterOrEqual(t, u.CPUSeconds, 0.0)
	assert.Positive(t, u.PeakRSSBytes, "peak RSS is the process's")
}
