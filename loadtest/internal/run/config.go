// Package run carries out a load run: the ceiling and our stack under the
// same load, live progress, the loss check and the report; or a sweep that
// raises the rate until something gives.
package run

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/arc-otel/arc-otel/loadtest/internal/driver"
	"github.com/arc-otel/arc-otel/loadtest/internal/stack"
)

// Scenarios and the signals they send.
var Scenarios = map[string][]driver.Signal{
	"traces":  {driver.Traces},
	"logs":    {driver.Logs},
	"metrics": {driver.Metrics},
	"mixed":   {driver.Traces, driver.Logs, driver.Metrics},
	// Arc MessagePack batches straight to the sidecar's write API: logs and
	// traces with every row new (driver.ShapeNew), or as up to 2026-11-27
	// (the -cycled ones, driver.ShapeCycled).
	"arc-metrics":       {driver.ArcMetrics},
	"arc-logs":          {driver.ArcLogs},
	"arc-traces":        {driver.ArcTraces},
	"arc-events":        {driver.ArcEvents},
	"arc-mixed":         {driver.ArcMetrics, driver.ArcLogs, driver.ArcTraces, driver.ArcEvents},
	"arc-logs-cycled":   {driver.ArcLogs},
	"arc-traces-cycled": {driver.ArcTraces},
	// The demo story of docs/QUERIES.md, sent once through the collector.
	ScenarioCampaign: {driver.Traces, driver.Logs, driver.Events, driver.Metrics},
}

// ScenarioCampaign sends the 90-minute campaign story instead of a load.
const ScenarioCampaign = "campaign"

// IsArc reports whether a scenario uses the Arc write API.
func IsArc(scenario string) bool { return strings.HasPrefix(scenario, "arc-") }

// cycledSuffix marks the arc scenarios that send the payloads used up to
// 2026-11-27.
const cycledSuffix = "-cycled"

// ArcShape is the generator of an arc scenario's logs and traces.
func (c Config) ArcShape() driver.Shape {
	if strings.HasSuffix(c.Scenario, cycledSuffix) {
		return driver.ShapeCycled
	}
	return driver.ShapeNew
}

// PayloadCount is how many distinct batches per measurement the arc
// driver generates: -payloads, or its shape's default; but no more than
// the run can send at its -rate (a short paced run need not wait for
// thousands), so that below the count no row is sent twice.
func (c Config) PayloadCount() int {
	n := c.Payloads
	if n == 0 {
		n = c.ArcShape().DefaultPayloads()
	}
	if c.Rate > 0 && !c.Sweep.Enabled {
		// The pacer hands out rate/batch slots a second over all workers,
		// and each worker may take one more.
		sends := int(math.Ceil(c.Rate*c.Duration.Seconds()/float64(c.Batch))) + c.Workers
		n = min(n, max(1, sends))
	}
	return n
}

// Drivers.
const (
	DriverOTLP         = "otlp"
	DriverTelemetrygen = "telemetrygen"
	// DriverArc is implied by the arc-* scenarios, DriverCampaign by the
	// campaign scenario.
	DriverArc      = "arc"
	DriverCampaign = "campaign"
)

// Config of a run.
type Config struct {
	Scenario string
	Driver   string
	Rate     float64
	Duration time.Duration
	Workers  int
	Batch    int
	// Ceiling runs the nop-exporter collector under the same load first.
	Ceiling bool
	// Target, when set, is the OTLP gRPC address of a running collector
	// (for arc-* scenarios: the base URL of an Arc-compatible server): no
	// stack is started. CollectorMetrics, SidecarMetrics and DataDir
	// then say where to watch and count.
	Target           string
	CollectorMetrics string
	SidecarMetrics   string
	DataDir          string
	Database         string
	// TargetPID is a running target's server process: its CPU and memory
	// are sampled from /proc like a started stack's.
	TargetPID int
	// TargetParquet is the Parquet tree a running target writes
	// (<dir>/<database>/<table>/**/*.parquet): after the load the run
	// waits until no file has appeared or changed for TargetSettle, then
	// counts the rows and bytes there.
	TargetParquet string
	TargetSettle  time.Duration
	// TargetStop stops the TargetPID process with SIGTERM after the load
	// (and the settling), and waits for its exit before counting: what a
	// graceful shutdown flushes counts, as for a started sidecar.
	TargetStop bool
	// Payloads is how many distinct batches the Arc driver pre-generates
	// per measurement and cycles through; 0 is the scenario's default
	// (see PayloadCount).
	Payloads int
	// PayloadMiB bounds the memory those batches hold over all
	// measurements; 0 is no bound.
	PayloadMiB int
	// FreshTimes moves each Arc request's timestamps to its send time.
	FreshTimes bool
	// Token is the bearer token of the Arc write API, if it needs one.
	Token string
	// TimeOffset shifts the sent items' timestamps (otlp and arc drivers).
	TimeOffset time.Duration
	// RandomIDs makes the otlp driver's trace and span ids random on
	// every send.
	RandomIDs bool

	BinDir       string
	Telemetrygen string
	DuckDB       string
	// ClickHouseHTTP, if set, is the HTTP interface of the ClickHouse the
	// sidecar's sink writes (-sidecar-args -clickhouse-addr ...): the loss
	// check counts there too, and with -parquet=false only there.
	ClickHouseHTTP string
	// ClickHousePID is the ClickHouse server's process: its CPU and peak
	// RSS are reported with the phase that stores.
	ClickHousePID int
	// ContribCollector, when set, runs the stored phase on this collector
	// (an ocb build with the contrib clickhouseexporter, loadtest/contrib)
	// in place of ours: its exporter writes the ClickHouse at
	// ContribClickHouseAddr (native protocol), and the loss check counts
	// there through ClickHouseHTTP.
	ContribCollector      string
	ContribClickHouseAddr string
	ResultsDir            string
	Interval              time.Duration
	QueueSize             int
	ExporterExtra         string // YAML added to the arc exporter's settings
	SidecarArgs           []string
	// Transport is how our collector reaches the sidecar: stack.TransportTCP
	// (also when empty) or stack.TransportUnix.
	Transport string
	// CollectorPprof is where our stack's collector serves pprof, if set.
	CollectorPprof string
	DrainTimeout   time.Duration

	Sweep SweepConfig
}

// SweepConfig raises the target step by step.
type SweepConfig struct {
	Enabled bool
	Start   float64
	Step    float64
	Hold    time.Duration
	MaxP99  time.Duration
	// MaxSteps bounds the sweep whatever happens.
	MaxSteps int
}

// Signals of the scenario.
func (c Config) Signals() []driver.Signal { return Scenarios[c.Scenario] }

// Validate joins everything wrong with the config.
func (c Config) Validate() error {
	var errs []error
	if _, ok := Scenarios[c.Scenario]; !ok {
		errs = append(errs, fmt.Errorf("scenario %q: want one of %s", c.Scenario, scenarioNames()))
	}
	switch {
	case IsArc(c.Scenario) && c.Driver != DriverArc:
		errs = append(errs, fmt.Errorf("scenario %s sends with the %s driver, not %q", c.Scenario, DriverArc, c.Driver))
	case c.Scenario == ScenarioCampaign && c.Driver != DriverCampaign:
		errs = append(errs, fmt.Errorf("scenario %s sends with the %s driver, not %q", c.Scenario, DriverCampaign, c.Driver))
	case !IsArc(c.Scenario) && c.Scenario != ScenarioCampaign && c.Driver != DriverOTLP && c.Driver != DriverTelemetrygen:
		errs = append(errs, fmt.Errorf("driver %q: want %s or %s", c.Driver, DriverOTLP, DriverTelemetrygen))
	}
	if IsArc(c.Scenario) && c.Ceiling {
		errs = append(errs, errors.New("arc-* scenarios have no nop ceiling: compare with Arc itself by pointing -target at it"))
	}
	if c.Transport != "" && c.Transport != stack.TransportTCP && c.Transport != stack.TransportUnix {
		errs = append(errs, fmt.Errorf("transport %q: want %s or %s", c.Transport, stack.TransportTCP, stack.TransportUnix))
	}
	if c.Rate < 0 {
		errs = append(errs, fmt.Errorf("rate %v: must be 0 (unlimited) or positive", c.Rate))
	}
	if c.Duration <= 0 && !c.Sweep.Enabled {
		errs = append(errs, fmt.Errorf("duration %v: must be positive", c.Duration))
	}
	if c.Workers < len(c.Signals()) {
		errs = append(errs, fmt.Errorf("workers %d: need at least one per signal", c.Workers))
	}
	if c.Payloads < 0 {
		errs = append(errs, fmt.Errorf("payloads %d: must be 0 (the scenario's default) or positive", c.Payloads))
	}
	if c.PayloadMiB < 0 {
		errs = append(errs, fmt.Errorf("payload memory %d MiB: must be 0 (no bound) or positive", c.PayloadMiB))
	}
	if c.Batch <= 0 {
		errs = append(errs, fmt.Errorf("batch %d: must be positive", c.Batch))
	}
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf("interval %v: must be positive", c.Interval))
	}
	if c.Target != "" && c.CollectorMetrics == "" && !IsArc(c.Scenario) {
		errs = append(errs, errors.New("a running target needs -collector-metrics (its Prometheus endpoint)"))
	}
	if c.Target == "" && (c.TargetPID != 0 || c.TargetParquet != "") {
		errs = append(errs, errors.New("-target-pid and -target-parquet describe a running -target; a started stack is measured already"))
	}
	if c.TargetStop && c.TargetPID <= 0 {
		errs = append(errs, errors.New("-target-stop needs -target-pid: the process to stop"))
	}
	if c.TargetPID < 0 {
		errs = append(errs, fmt.Errorf("target pid %d: must be positive", c.TargetPID))
	}
	if c.TargetParquet != "" && c.DataDir != "" {
		errs = append(errs, errors.New("-target-parquet and -data-dir both say where the rows are: give one"))
	}
	if c.TargetParquet != "" && c.TargetSettle <= 0 {
		errs = append(errs, fmt.Errorf("target settle %v: must be positive", c.TargetSettle))
	}
	if c.ContribCollector != "" {
		switch {
		case c.Driver != DriverOTLP:
			errs = append(errs, fmt.Errorf("-contrib-collector needs the %s driver: the loss check finds its rows by their ids", DriverOTLP))
		case c.Target != "":
			errs = append(errs, errors.New("-contrib-collector starts its own collector: no -target"))
		case c.ContribClickHouseAddr == "" || c.ClickHouseHTTP == "":
			errs = append(errs, errors.New("-contrib-collector needs -contrib-clickhouse-addr (its exporter's native endpoint) and -clickhouse-http (to count its rows)"))
		case c.Sweep.Enabled:
			errs = append(errs, errors.New("-contrib-collector runs one steady load, not a sweep"))
		}
	}
	if c.ClickHousePID < 0 {
		errs = append(errs, fmt.Errorf("clickhouse pid %d: must be positive", c.ClickHousePID))
	}
	if c.Target != "" && c.Ceiling {
		errs = append(errs, errors.New("the ceiling needs a stack of its own: use -ceiling=false with -target"))
	}
	if s := c.Sweep; s.Enabled {
		if s.Start <= 0 || s.Step <= 0 {
			errs = append(errs, fmt.Errorf("sweep start %v and step %v: must be positive", s.Start, s.Step))
		}
		if s.Hold < 2*c.Interval {
			errs = append(errs, fmt.Errorf("sweep hold %v: at least two intervals (%v) so a step has a steady part", s.Hold, 2*c.Interval))
		}
		if s.MaxP99 <= 0 {
			errs = append(errs, fmt.Errorf("sweep max p99 %v: must be positive", s.MaxP99))
		}
	}
	return errors.Join(errs...)
}

// ParseScenarios reads a comma-separated list of scenario names.
func ParseScenarios(s string) ([]string, error) {
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if _, ok := Scenarios[name]; !ok {
			return nil, fmt.Errorf("scenario %q: want one of %s", name, scenarioNames())
		}
		out = append(out, name)
	}
	return out, nil
}

func scenarioNames() string {
	names := make([]string, 0, len(Scenarios))
	for n := range Scenarios {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
