package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"time"

	"github.com/arc-otel/arc-otel/loadtest/internal/campaign"
	"github.com/arc-otel/arc-otel/loadtest/internal/driver"
	"github.com/arc-otel/arc-otel/loadtest/internal/loss"
	"github.com/arc-otel/arc-otel/loadtest/internal/report"
	"github.com/arc-otel/arc-otel/loadtest/internal/scrape"
	"github.com/arc-otel/arc-otel/loadtest/internal/stack"
)

// Process names in reports.
const (
	procCollector = "otelcol-arc"
	procSidecar   = "arcstore"
	procHarness   = "arcload (driver)"
	procTelgen    = "telemetrygen"
	// procTarget is a running target's server (-target-pid).
	procTarget = "target"
	// procClickHouse is the ClickHouse server (-clickhouse-pid).
	procClickHouse = "clickhouse"
)

// Runner carries out runs; Progress receives the live progress lines.
type Runner struct {
	Config
	Progress  func(string)
	lastSweep *report.Sweep
}

// Run does the whole run and writes the report under Config.Out. The
// report is returned even when the run failed its checks.
func (r *Runner) Run(ctx context.Context) (*report.Report, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	rep := &report.Report{Started: time.Now(), Plan: r.plan(), Machine: machine(), Failures: []string{}}
	if r.Ceiling {
		ph, err := r.phase(ctx, stack.ExportNop)
		if err != nil {
			return nil, fmt.Errorf("ceiling: %w", err)
		}
		rep.Ceiling = ph
	}
	ours := stack.ExportArc
	if r.ContribCollector != "" {
		ours = stack.ExportContribClickHouse
	}
	ph, err := r.phase(ctx, ours)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ours, err)
	}
	rep.Arc = ph
	if rep.Ceiling != nil && rep.Ceiling.Rate > 0 {
		rep.Ratio = rep.Arc.Rate / rep.Ceiling.Rate
	}
	if r.Sweep.Enabled {
		rep.Sweep = r.lastSweep
		// A sweep's own rate mixes every step; its result is the knee.
		rep.Ratio = 0
		if rep.Ceiling != nil && rep.Ceiling.Rate > 0 {
			rep.Ratio = rep.Sweep.Knee / rep.Ceiling.Rate
		}
	}
	rep.Failures = failures(rep)
	if err := rep.Write(r.ResultsDir); err != nil {
		return rep, err
	}
	return rep, nil
}

func (r *Runner) plan() report.Plan {
	return report.Plan{Scenario: r.Scenario, Driver: r.Driver, Rate: r.Rate, Duration: r.Duration.String(),
		Workers: r.Workers, Batch: r.Batch, Sweep: r.Sweep.Enabled}
}

func machine() report.Machine {
	m := report.Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// failures lists what makes the run fail: loss, duplicates, errors.
func failures(rep *report.Report) []string {
	out := []string{}
	for _, ph := range []*report.Phase{rep.Ceiling, rep.Arc} {
		if ph == nil {
			continue
		}
		for _, t := range ph.Loss {
			if !t.OK() {
				out = append(out, fmt.Sprintf("%s: table %s lost %d, duplicated %d, unexpected %d of %d acknowledged",
					ph.Name, t.Table, t.Lost, t.Duplicated, t.Unexpected, t.Expected))
			}
		}
		if ph.Rejected > 0 {
			out = append(out, fmt.Sprintf("%s: %d items rejected by the collector", ph.Name, ph.Rejected))
		}
		if ph.Errors > 0 && rep.Sweep == nil {
			out = append(out, fmt.Sprintf("%s: %d failed requests (retried)", ph.Name, ph.Errors))
		}
	}
	return out
}

// start brings up the stack of a phase, or describes the running target.
func (r *Runner) start(export, workDir string) (*target, error) {
	name := "arc"
	if export == stack.ExportNop {
		name = "ceiling (nop exporter)"
	}
	if IsArc(r.Scenario) {
		name = "arc (sidecar write API)"
	}
	if export == stack.ExportContribClickHouse {
		name = "contrib clickhouseexporter"
	}
	if r.Target != "" {
		t := &target{name: name, export: export, exporter: stack.ExportArc, otlp: r.Target, url: r.Target, collectorMetrics: r.CollectorMetrics,
			sidecarMetrics: r.SidecarMetrics, dataDir: r.DataDir, procs: map[string]*stack.Proc{}, pids: map[string]int{}}
		if IsArc(r.Scenario) {
			t.name = "target " + r.Target
		}
		if r.TargetPID > 0 {
			t.pids[procTarget] = r.TargetPID
		}
		if r.TargetParquet != "" {
			t.dataDir, t.settle = r.TargetParquet, r.TargetSettle
		}
		return t, nil
	}
	mode := export
	if IsArc(r.Scenario) {
		mode = stack.SidecarOnly
	}
	opts := stack.Options{BinDir: r.BinDir, WorkDir: workDir, Export: mode, QueueSize: r.QueueSize, ExporterExtra: r.ExporterExtra, SidecarArgs: r.SidecarArgs,
		Transport: r.Transport, ContribCollector: r.ContribCollector, ClickHouseAddr: r.ContribClickHouseAddr, ClickHouseDatabase: r.database()}
	if export == stack.ExportArc {
		opts.CollectorPprof = r.CollectorPprof
	}
	st, err := stack.Start(opts)
	if err != nil {
		return nil, err
	}
	t := &target{name: name, export: export, exporter: stack.ExportArc, otlp: st.OTLP, url: st.SidecarURL, collectorMetrics: st.CollectorMetrics,
		sidecarMetrics: st.SidecarMetrics, dataDir: st.DataDir, stack: st, procs: map[string]*stack.Proc{}, pids: map[string]int{}}
	if export == stack.ExportContribClickHouse {
		t.exporter = stack.ContribExporter
		t.procs[stack.ContribBin] = st.Collector
	} else if st.Collector != nil {
		t.procs[procCollector] = st.Collector
	}
	if r.ClickHousePID > 0 && export != stack.ExportNop {
		t.pids[procClickHouse] = r.ClickHousePID
	}
	if st.Sidecar != nil {
		t.procs[procSidecar] = st.Sidecar
	}
	return t, nil
}

func (r *Runner) progress(line string) {
	if r.Progress != nil {
		r.Progress(line)
	}
}

// load is one driver run at one rate for one duration.
type load struct {
	otlp *driver.OTLP
	arc  *driver.Arc
	camp *driver.Campaign
	tg   *driver.Telemetrygen
	rec  *driver.Recorder
}

func (r *Runner) newLoad(tgt *target, workDir string) (*load, error) {
	p := driver.Plan{Signals: r.Signals(), Rate: r.Rate, Duration: r.Duration, Workers: r.Workers, Batch: r.Batch, Endpoint: tgt.otlp, TimeOffset: r.TimeOffset, RandomIDs: r.RandomIDs}
	if r.Driver == DriverCampaign {
		rec := driver.NewRecorder()
		// The story ends ten minutes ago, whole minutes, so its hours are
		// settled partitions and its times pass the sidecar's checks.
		start := time.Now().Add(-campaign.Length - 10*time.Minute).Truncate(time.Minute)
		return &load{camp: &driver.Campaign{Endpoint: tgt.otlp, Story: campaign.Generate(start, 1), Recorder: rec}, rec: rec}, nil
	}
	if r.Driver == DriverArc {
		rec := driver.NewRecorder()
		p.Endpoint = tgt.url
		d := &driver.Arc{Plan: p, Recorder: rec, Database: r.Database, Token: r.Token, Shape: r.ArcShape(),
			Payloads: r.PayloadCount(), MemoryBudget: int64(r.PayloadMiB) << 20, Fresh: r.FreshTimes}
		// Before the clock starts: thousands of payloads take seconds.
		start := time.Now()
		if err := d.Prepare(); err != nil {
			return nil, err
		}
		for _, s := range p.Signals {
			size := d.Sizes[s]
			r.progress(fmt.Sprintf("%s: %d distinct batches of %d rows (%s shape, %.0f MiB gzip) generated in %.1f s",
				s, size.Distinct, size.Rows, r.ArcShape(), float64(size.Distinct*size.Gzip)/(1<<20), time.Since(start).Seconds()))
		}
		return &load{arc: d, rec: rec}, nil
	}
	if r.Driver == DriverOTLP {
		rec := driver.NewRecorder()
		d := driver.NewOTLP(p, rec)
		// Before the clock starts, as the Arc driver's payloads.
		start := time.Now()
		if err := d.Prepare(); err != nil {
			return nil, err
		}
		r.progress(fmt.Sprintf("%d workers' requests of %d items marshalled in %.1f s", r.Workers, r.Batch, time.Since(start).Seconds()))
		return &load{otlp: d, rec: rec}, nil
	}
	f, err := os.OpenFile(filepath.Join(workDir, "telemetrygen.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open telemetrygen log: %w", err)
	}
	return &load{tg: &driver.Telemetrygen{Plan: p, Bin: r.Telemetrygen, Log: f}}, nil
}

func (l *load) run(ctx context.Context, rate float64, d time.Duration) error {
	if l.camp != nil {
		return l.camp.Run(ctx)
	}
	if l.arc != nil {
		l.arc.Plan.Rate, l.arc.Plan.Duration = rate, d
		return l.arc.Run(ctx)
	}
	if l.otlp != nil {
		l.otlp.Plan.Rate, l.otlp.Plan.Duration = rate, d
		return l.otlp.Run(ctx)
	}
	l.tg.Plan.Rate, l.tg.Plan.Duration = rate, d
	return l.tg.Run(ctx)
}

// phase runs the load (or the sweep) against one stack and checks it.
func (r *Runner) phase(ctx context.Context, export string) (*report.Phase, error) {
	workDir := filepath.Join(r.ResultsDir, export)
	tgt, err := r.start(export, workDir)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped && tgt.stack != nil {
			tgt.stack.Stop()
		}
	}()
	l, err := r.newLoad(tgt, workDir)
	if err != nil {
		return nil, err
	}
	self := ""
	if l.rec != nil {
		self = procHarness
	}
	w, err := newWatcher(tgt, r.Signals(), l.rec, self, r.Progress)
	if err != nil {
		return nil, err
	}
	ph := &report.Phase{Name: tgt.name, Export: export, Target: r.Rate, Procs: map[string]stack.Usage{}}
	sendStart := time.Now()
	if r.Sweep.Enabled && export != stack.ExportNop {
		err = r.sweep(ctx, l, w, ph)
	} else {
		err = r.steady(ctx, l, w, ph, r.Rate, r.Duration)
	}
	if err != nil {
		return nil, err
	}
	ph.SendS = time.Since(sendStart).Seconds()
	if l.arc != nil {
		ph.Payload = map[string]report.PayloadSize{}
		for s, size := range l.arc.Sizes {
			ph.Payload[s.Table()] = report.PayloadSize(size)
		}
	}
	if export != stack.ExportNop && tgt.collectorMetrics != "" {
		drainStart := time.Now()
		if err := r.drain(w, ph); err != nil {
			return nil, err
		}
		if r.ClickHouseHTTP != "" && tgt.sidecarMetrics != "" {
			// ClickHouse rows count as stored once the sink has them.
			if err := waitSinks(tgt.sidecarMetrics, r.DrainTimeout); err != nil {
				return nil, err
			}
		}
		ph.DrainS = time.Since(drainStart).Seconds()
	}
	last, err := w.read()
	if err != nil {
		return nil, err
	}
	ph.AckLatency = ackPercentiles(last.sidecar, w.first.sidecar)
	r.counts(l, w, last, ph)
	if export == stack.ExportArc && l.rec != nil && last.collector.Has(metricPutDuration) {
		ph.Breakdown = breakdown(last, w.first, l.rec.Total().Latencies)
	}
	if tgt.stack != nil {
		flushStart := time.Now()
		stopErr := tgt.stack.Stop()
		stopped = true
		ph.FlushS = time.Since(flushStart).Seconds()
		if stopErr != nil {
			return nil, stopErr
		}
		stackUsage(tgt, w.first, ph)
	}
	if l.rec != nil {
		// The harness outlives phases: its CPU is counted from the phase's
		// start (its peak RSS is the process's).
		u, _ := stack.SelfUsage()
		u.CPUSeconds -= w.first.usage[procHarness].CPUSeconds
		ph.Procs[procHarness] = u
	} else {
		ph.Procs[procTelgen] = l.tg.Usage
	}
	if export != stack.ExportNop {
		if err := r.finishTarget(tgt, ph); err != nil {
			return nil, err
		}
		if err := r.checkLoss(tgt, l, ph); err != nil {
			return nil, err
		}
		// A running target's usage is read once its Parquet has settled,
		// so the flush after the load counts (as a stack's shutdown does).
		if err := targetUsage(tgt, w.first, ph); err != nil {
			return nil, err
		}
		ph.Rate = float64(found(ph)) / (ph.SendS + ph.DrainS)
	} else {
		ph.Rate = float64(ph.Items()) / ph.SendS
	}
	if ph.Target > 0 {
		ph.Achievement = float64(ph.Items()) / ph.SendS / ph.Target
	}
	return ph, nil
}

// found is the items the run stored: counted in Parquet, or in ClickHouse
// when that is the only storage (each item counted once either way).
func found(ph *report.Phase) int64 {
	var parquet, clickhouse int64
	for _, t := range ph.Loss {
		if strings.HasPrefix(t.Table, clickhousePrefix) {
			clickhouse += t.Found
		} else {
			parquet += t.Found
		}
	}
	if parquet == 0 {
		return clickhouse
	}
	return parquet
}

// steady runs the load once at one rate, sampling every interval.
func (r *Runner) steady(ctx context.Context, l *load, w *watcher, ph *report.Phase, rate float64, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- l.run(ctx, rate, d) }()
	tick := time.NewTicker(r.Interval)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			s, serr := w.sample(rate)
			if serr == nil {
				ph.Samples = append(ph.Samples, s)
			}
			return errors.Join(err, serr)
		case <-tick.C:
			s, err := w.sample(rate)
			if err != nil {
				return err
			}
			ph.Samples = append(ph.Samples, s)
		}
	}
}

// drain waits until the arc exporter has had every accepted item
// acknowledged by the sidecar, sampling as it goes.
func (r *Runner) drain(w *watcher, ph *report.Phase) error {
	deadline := time.Now().Add(r.DrainTimeout)
	for {
		snap, err := scrape.Fetch(w.tgt.collectorMetrics)
		if err != nil {
			return err
		}
		pending := 0.0
		for _, s := range r.Signals() {
			pending += accepted(snap, s) - accepted(w.first.collector, s) - (doneBy(snap, s, w.tgt.exporter) - doneBy(w.first.collector, s, w.tgt.exporter))
		}
		if pending <= 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the collector's %s exporter still had %.0f items not sent %s after the load", w.tgt.exporter, pending, r.DrainTimeout)
		}
		time.Sleep(200 * time.Millisecond)
		if time.Since(w.prev.at) >= r.Interval {
			s, err := w.sample(0)
			if err != nil {
				return err
			}
			ph.Samples = append(ph.Samples, s)
		}
	}
}

// counts fills in what was acknowledged and accepted.
func (r *Runner) counts(l *load, w *watcher, last point, ph *report.Phase) {
	ph.Acked, ph.Accepted = map[string]int64{}, map[string]int64{}
	for _, s := range r.Signals() {
		// The collector counts events among log records.
		if last.collector != nil && s != driver.Events {
			ph.Accepted[s.Table()] = int64(accepted(last.collector, s) - accepted(w.first.collector, s))
		}
	}
	if l.rec != nil {
		tot := l.rec.Total()
		for s, n := range tot.Acked {
			ph.Acked[s.Table()] = n
		}
		ph.Errors, ph.Rejected, ph.Throttled = tot.Errors, tot.Rejected, tot.Throttled
		ph.Latency = report.Exact(tot.Latencies)
		return
	}
	// telemetrygen cannot say what it sent; what the collector accepted
	// is what was acknowledged.
	for k, v := range ph.Accepted {
		ph.Acked[k] = v
	}
	for _, s := range r.Signals() {
		ph.Errors += int64(refused(last.collector, s) - refused(w.first.collector, s))
	}
	ph.Latency = report.Exact(nil) // telemetrygen does not report its own
}

// identity names an item of table for the loss check.
func (r *Runner) identity(l *load, s driver.Signal) (loss.Identity, string) {
	if l.otlp != nil {
		lo, hi := l.otlp.IDRange()
		col := fmt.Sprintf("attributes['%s']", driver.IDAttribute)
		return loss.Identity(col), fmt.Sprintf("%s BETWEEN '%s' AND '%s'", col, lo, hi)
	}
	if s == driver.Traces {
		return "trace_id || span_id", ""
	}
	return "", ""
}

// inDoubt is the SQL condition naming, in column col, the ids of the
// requests the driver had not acknowledged in whole, and how many of their
// items were acknowledged per table; "" and nil without such requests, or
// with more than the driver keeps (then said in the progress).
func (r *Runner) inDoubt(l *load, col string) (string, map[string]int64) {
	if l.otlp == nil {
		return "", nil
	}
	spans, ok := l.otlp.InDoubt()
	if !ok {
		r.progress("too many refused requests to name in the loss check: rows they left may stand in for lost ones")
		return "", nil
	}
	if len(spans) == 0 {
		return "", nil
	}
	acked := map[string]int64{}
	conds := make([]string, len(spans))
	for i, sp := range spans {
		acked[sp.Signal.Table()] += sp.Acked
		conds[i] = fmt.Sprintf("%s BETWEEN '%s' AND '%s'", col, sp.Lo, sp.Hi)
	}
	return "(" + strings.Join(conds, " OR ") + ")", acked
}

func (r *Runner) checkLoss(tgt *target, l *load, ph *report.Phase) error {
	if tgt.export == stack.ExportContribClickHouse {
		return r.checkContribLoss(l, ph)
	}
	if tgt.dataDir == "" {
		r.Progress("no data directory to count rows in (-data-dir): loss check skipped")
		return nil
	}
	db := r.database()
	if tgt.stack == nil && tgt.settle == 0 && tgt.final == nil {
		if l.otlp == nil {
			// Neither telemetrygen nor the Arc driver marks its rows.
			r.Progress("telemetrygen against a running sidecar: its rows cannot be told from earlier ones; loss check skipped")
			return nil
		}
		if err := waitFlushed(tgt.sidecarMetrics, r.DrainTimeout); err != nil {
			return err
		}
	}
	engine := loss.Engine{DuckDB: r.DuckDB}
	for _, s := range r.Signals() {
		id, where := r.identity(l, s)
		doubt, doubtAcked := r.inDoubt(l, string(id))
		if r.parquetOn() {
			found, distinct, inDoubt, err := engine.CountInDoubt(tgt.dataDir, db, s.Table(), id, where, doubt)
			if err != nil {
				return fmt.Errorf("count %s: %w", s.Table(), err)
			}
			t := loss.ComputeInDoubt(s.Table(), ph.Acked[s.Table()], found, distinct, doubtAcked[s.Table()], inDoubt)
			disk, err := loss.Files(tgt.dataDir, db, s.Table())
			if err != nil {
				return err
			}
			t.Files, t.Bytes = disk.Files, disk.Bytes
			ph.Loss = append(ph.Loss, t)
		}
		if r.ClickHouseHTTP != "" {
			found, distinct, inDoubt, err := loss.ClickHouse{URL: r.ClickHouseHTTP}.CountInDoubt(db, s.Table(), id, where, doubt)
			if err != nil {
				return fmt.Errorf("count %s in clickhouse: %w", s.Table(), err)
			}
			ph.Loss = append(ph.Loss, loss.ComputeInDoubt(clickhousePrefix+s.Table(), ph.Acked[s.Table()], found, distinct, doubtAcked[s.Table()], inDoubt))
		}
	}
	return nil
}

// checkContribLoss counts the contrib exporter's rows in its own tables,
// and their parts' bytes on disk (with the tables it fills alongside, such
// as the trace id lookup).
func (r *Runner) checkContribLoss(l *load, ph *report.Phase) error {
	// The exporter counts a batch as sent once its INSERT returned: with
	// the server's wait_for_async_insert (on by default) that is after the
	// rows are in a part, so the count needs no flush first.
	ch := loss.ClickHouse{URL: r.ClickHouseHTTP}
	for _, s := range r.Signals() {
		ct := stack.ContribTables[s.Table()]
		lo, hi := l.otlp.IDRange()
		col := fmt.Sprintf("%s['%s']", ct.Attributes, driver.IDAttribute)
		doubt, doubtAcked := r.inDoubt(l, col)
		found, distinct, inDoubt, err := ch.CountInDoubt(r.database(), ct.Table, loss.Identity(col), fmt.Sprintf("%s BETWEEN '%s' AND '%s'", col, lo, hi), doubt)
		if err != nil {
			return fmt.Errorf("count %s in clickhouse: %w", ct.Table, err)
		}
		t := loss.ComputeInDoubt(clickhousePrefix+ct.Table, ph.Acked[s.Table()], found, distinct, doubtAcked[s.Table()], inDoubt)
		if t.Files, t.Bytes, err = ch.Parts(r.database(), ct.Table); err != nil {
			return err
		}
		ph.Loss = append(ph.Loss, t)
	}
	return nil
}

// clickhousePrefix marks the loss checks made in ClickHouse.
const clickhousePrefix = "clickhouse:"

// parquetOn is false when the sidecar writes ClickHouse only.
func (r *Runner) parquetOn() bool {
	for _, a := range r.SidecarArgs {
		if a == "-parquet=false" || a == "--parquet=false" {
			return false
		}
	}
	return true
}

// waitSinks waits until the sidecar's sinks have every closed WAL segment;
// the open one follows at the sidecar's stop.
func waitSinks(metrics string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		snap, err := scrape.Fetch(metrics)
		if err != nil {
			return err
		}
		if snap.Sum("arcstore_sink_lag_segments", nil) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the sidecar's sinks were still behind %s after the load", timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitFlushed waits until a running sidecar has written everything it
// acknowledged to Parquet.
func waitFlushed(metrics string, timeout time.Duration) error {
	if metrics == "" {
		return errors.New("counting rows in a running sidecar's data needs -sidecar-metrics, to know when it has flushed")
	}
	deadline := time.Now().Add(timeout)
	for {
		snap, err := scrape.Fetch(metrics)
		if err != nil {
			return err
		}
		if snap.Sum("arcstore_buffer_bytes", nil) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the sidecar did not flush within %s", timeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (r *Runner) database() string {
	if r.Database == "" {
		return "default"
	}
	return r.Database
}

// finishTarget lets a running target write what it buffered before its
// rows are counted: it waits until the target's Parquet files hold still
// and, with -target-stop, stops it gracefully (as a started sidecar is
// stopped). FlushS is the time this took: until the last file changed,
// plus the shutdown.
func (r *Runner) finishTarget(tgt *target, ph *report.Phase) error {
	if tgt.stack != nil {
		return nil
	}
	if tgt.settle > 0 {
		// A server that flushes on its own schedule: wait until its
		// files stop changing.
		r.Progress(fmt.Sprintf("waiting for %s's Parquet to settle (no change for %s)", tgt.name, tgt.settle))
		probe := func() (any, error) { return r.disk(tgt.dataDir, r.database()) }
		last, err := settle(probe, tgt.settle, r.DrainTimeout, time.Now, time.Sleep)
		if err != nil {
			return err
		}
		ph.FlushS = last.Seconds()
	}
	if r.TargetStop {
		r.Progress(fmt.Sprintf("stopping %s (SIGTERM to %d) so it writes what it still holds", tgt.name, r.TargetPID))
		start := time.Now()
		u, err := stack.Terminate(r.TargetPID, r.DrainTimeout)
		if err != nil {
			return fmt.Errorf("stop the target: %w", err)
		}
		ph.FlushS += time.Since(start).Seconds()
		tgt.final = map[string]stack.Usage{procTarget: u}
	}
	return nil
}

// disk is the state of the run's tables on disk: it changes whenever a
// file appears, goes or grows.
func (r *Runner) disk(dataDir, db string) ([]loss.Disk, error) {
	var out []loss.Disk
	for _, s := range r.Signals() {
		d, err := loss.Files(dataDir, db, s.Table())
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// settle polls probe every second until its answer has not changed for
// quiet, and returns how long after the start the last change was seen.
// It fails after timeout.
func settle(probe func() (any, error), quiet, timeout time.Duration, now func() time.Time, sleep func(time.Duration)) (time.Duration, error) {
	start := now()
	prev, err := probe()
	if err != nil {
		return 0, err
	}
	changed := start
	for {
		sleep(time.Second)
		cur, err := probe()
		if err != nil {
			return 0, err
		}
		t := now()
		if !reflect.DeepEqual(cur, prev) {
			prev, changed = cur, t
		}
		if t.Sub(changed) >= quiet {
			return changed.Sub(start), nil
		}
		if t.Sub(start) >= timeout {
			return 0, fmt.Errorf("the target's Parquet still changed %s after the load", timeout)
		}
	}
}

// stackUsage adds the processes of a stopped stack: CPU seconds since the
// phase's start, as for a running target (their start-up is no part of the
// load), peak RSS since their own start.
func stackUsage(tgt *target, first point, ph *report.Phase) {
	for name, p := range tgt.procs {
		if u, err := p.Usage(); err == nil {
			u.CPUSeconds -= first.usage[name].CPUSeconds
			ph.Procs[name] = u
		}
	}
}

// targetUsage adds a running target's process: CPU seconds since the
// phase's start, peak RSS since its own start.
func targetUsage(tgt *target, first point, ph *report.Phase) error {
	for name, pid := range tgt.pids {
		u, ok := tgt.final[name]
		if !ok {
			var err error
			if u, err = stack.ReadUsage(pid); err != nil {
				return fmt.Errorf("target process %d: %w", pid, err)
			}
		}
		u.CPUSeconds -= first.usage[name].CPUSeconds
		ph.Procs[name] = u
	}
	return nil
}
