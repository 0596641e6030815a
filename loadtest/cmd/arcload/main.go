// Command arcload is the load harness: it drives OTLP into otelcol-arc
// (pre-generated requests or telemetrygen), runs the same load against the
// nop-exporter ceiling, checks every acknowledged row is in Parquet once,
// and writes a JSON, Markdown and PNG report. See loadtest/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/arc-otel/arc-otel/loadtest/internal/report"
	"github.com/arc-otel/arc-otel/loadtest/internal/run"
	"github.com/arc-otel/arc-otel/loadtest/internal/stack"
)

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "arcload:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := &run.Runner{Config: cfg, Progress: func(s string) { fmt.Println(s) }}
	rep, err := r.Run(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "arcload:", err)
		os.Exit(1)
	}
	fmt.Print("\n" + summary(rep))
	fmt.Printf("\nreport: %s\n", filepath.Join(cfg.ResultsDir, report.MarkdownFile))
	if !rep.Passed() {
		os.Exit(1)
	}
}

func parseFlags(args []string) (run.Config, error) {
	var c run.Config
	fs := flag.NewFlagSet("arcload", flag.ContinueOnError)
	fs.StringVar(&c.Scenario, "scenario", "traces", "traces, logs, metrics, mixed (OTLP through the collector) or arc-metrics, arc-logs, arc-traces, arc-events, arc-mixed (Arc MessagePack to the sidecar; logs and traces with every row new), arc-logs-cycled, arc-traces-cycled (the payloads up to 2026-11-27), or campaign (the demo story of docs/QUERIES.md)")
	fs.StringVar(&c.Driver, "driver", run.DriverOTLP, "otlp (pre-generated requests, this process) or telemetrygen; arc-* scenarios always use the arc driver")
	fs.Float64Var(&c.Rate, "rate", 0, "target items per second over all signals; 0 sends as fast as answered")
	fs.DurationVar(&c.Duration, "duration", 60*time.Second, "how long to send")
	fs.IntVar(&c.Workers, "workers", 4, "concurrent senders (shared evenly by the scenario's signals)")
	fs.IntVar(&c.Batch, "batch", 1000, "items per request (OTLP export or Arc payload)")
	fs.BoolVar(&c.Ceiling, "ceiling", true, "first run the same load against otelcol-arc with the nop exporter")
	fs.StringVar(&c.Target, "target", "", "OTLP gRPC address of a running collector, or for arc-* the base URL of an Arc-compatible server (Arc itself, for a side-by-side number); empty starts a fresh stack")
	fs.BoolVar(&c.RandomIDs, "random-ids", false, "otlp driver, traces: random trace and span ids on every send, as SDKs make them (by default each worker's span ids repeat from one send to the next, and only a counter in the trace ids changes: zstd compresses those far better than real ids)")
	fs.DurationVar(&c.TimeOffset, "time-offset", 0, "shift the items' timestamps from now (e.g. -2h fills a past hour that compaction can take)")
	fs.StringVar(&c.Token, "token", "", "bearer token for the Arc write API")
	fs.IntVar(&c.Payloads, "payloads", 0, "arc driver: distinct pre-generated batches per measurement, cycled when the run outlasts them; 0 is 8192 (64 for the -cycled scenarios), no more than a -rate run can send; a server that sorts a file by time (Arc) compresses repeated batches away, so bytes per row are only comparable while rows do not repeat")
	fs.IntVar(&c.PayloadMiB, "payload-mib", 2048, "arc driver: most MiB the pre-generated batches of all measurements may hold (gzip bodies; raw ones with -fresh-times); fewer distinct batches are made past it, and the report says how many; 0 is no bound")
	fs.BoolVar(&c.FreshTimes, "fresh-times", false, "arc driver: move each request's timestamps to its send time and gzip it anew (~1 ms of driver CPU per 1000 rows), so cycled batches never repeat a row")
	fs.IntVar(&c.TargetPID, "target-pid", 0, "with -target: the server's process id, to report its CPU seconds (from the load's start) and peak RSS (VmHWM) from /proc")
	fs.StringVar(&c.TargetParquet, "target-parquet", "", "with -target: the root of the Parquet tree the server writes (<dir>/<database>/<table>/**/*.parquet, fresh for the run); after the load wait for -target-settle, then count its rows and bytes with DuckDB")
	fs.BoolVar(&c.TargetStop, "target-stop", false, "with -target-pid: after the load (and -target-settle) stop the server with SIGTERM and wait for it to exit before counting, so what its graceful shutdown flushes counts (as for a started sidecar)")
	fs.DurationVar(&c.TargetSettle, "target-settle", 10*time.Second, "with -target-parquet: the tree is settled once no Parquet file has appeared or changed for this long (make it longer than the server's flush interval)")
	fs.StringVar(&c.CollectorMetrics, "collector-metrics", "", "with -target: the collector's Prometheus endpoint")
	fs.StringVar(&c.SidecarMetrics, "sidecar-metrics", "", "with -target: the sidecar's /metrics URL")
	fs.StringVar(&c.DataDir, "data-dir", "", "with -target: the sidecar's data directory, for the loss check")
	fs.StringVar(&c.Database, "database", "default", "database the rows land in")
	fs.StringVar(&c.BinDir, "bin-dir", "bin", "where arcstore and otelcol-arc are")
	fs.StringVar(&c.Telemetrygen, "telemetrygen", ".tools/telemetrygen", "telemetrygen binary")
	fs.StringVar(&c.DuckDB, "duckdb", ".tools/duckdb", "DuckDB CLI, for the loss check")
	fs.StringVar(&c.ClickHouseHTTP, "clickhouse-http", "", "HTTP interface of the ClickHouse the sidecar's sink writes (http://host:8123): the loss check counts there too")
	fs.IntVar(&c.ClickHousePID, "clickhouse-pid", 0, "the ClickHouse server's process id: its CPU seconds (from the load's start) and peak RSS are reported with the stored phase")
	fs.StringVar(&c.ContribCollector, "contrib-collector", "", "an ocb build with the contrib clickhouseexporter (make contrib-clickhouse): the stored phase runs it in place of our stack, its exporter writing -contrib-clickhouse-addr, and the loss check counts its tables through -clickhouse-http")
	fs.StringVar(&c.ContribClickHouseAddr, "contrib-clickhouse-addr", "", "with -contrib-collector: ClickHouse's native-protocol address (host:port)")
	fs.StringVar(&c.ResultsDir, "out", "", "results folder (default loadtest/results/<time>-<scenario>)")
	fs.DurationVar(&c.Interval, "interval", 5*time.Second, "progress interval")
	fs.IntVar(&c.QueueSize, "queue-size", 100_000, "arc exporter sending queue, items (it blocks when full)")
	fs.StringVar(&c.ExporterExtra, "exporter-yaml", "", "extra arc exporter settings, YAML flow style (e.g. 'sending_queue: {wait_for_result: false, num_consumers: 16}' replaces the queue line)")
	fs.StringVar(&c.CollectorPprof, "collector-pprof", "", "serve our collector's pprof here (host:port), to profile a run")
	fs.StringVar(&c.Transport, "transport", stack.TransportTCP, "how our collector reaches the sidecar: tcp (loopback) or unix (a Unix socket in the run's folder)")
	sidecarArgs := fs.String("sidecar-args", "", "extra arcstore flags, space-separated")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", 5*time.Minute, "longest wait for the collector to empty its queue after the load")
	fs.BoolVar(&c.Sweep.Enabled, "sweep", false, "raise the rate step by step until a limit (see -step-*)")
	fs.Float64Var(&c.Sweep.Start, "sweep-start", 50_000, "sweep: first target rate")
	fs.Float64Var(&c.Sweep.Step, "sweep-step", 50_000, "sweep: rate added per step")
	fs.DurationVar(&c.Sweep.Hold, "sweep-hold", 30*time.Second, "sweep: how long each step lasts")
	fs.DurationVar(&c.Sweep.MaxP99, "sweep-max-p99", 50*time.Millisecond, "sweep: durable-ack p99 past which a step fails")
	fs.IntVar(&c.Sweep.MaxSteps, "sweep-max-steps", 40, "sweep: most steps")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if run.IsArc(c.Scenario) || c.Scenario == run.ScenarioCampaign {
		if !set["driver"] {
			c.Driver = run.DriverArc
			if c.Scenario == run.ScenarioCampaign {
				c.Driver = run.DriverCampaign
			}
		}
		if !set["ceiling"] {
			c.Ceiling = false
		}
	}
	if *sidecarArgs != "" {
		c.SidecarArgs = strings.Fields(*sidecarArgs)
	}
	if c.ResultsDir == "" {
		c.ResultsDir = filepath.Join("loadtest", "results", time.Now().UTC().Format("20060102-150405")+"-"+c.Scenario)
		if c.Sweep.Enabled {
			c.ResultsDir += "-sweep"
		}
	}
	return c, c.Validate()
}

func summary(rep *report.Report) string {
	var b strings.Builder
	for _, ph := range []*report.Phase{rep.Ceiling, rep.Arc} {
		if ph == nil {
			continue
		}
		fmt.Fprintf(&b, "%-24s %10.0f items/s  acked %d  errors %d  request p50 %.1f p99 %.1f ms", ph.Name, ph.Rate, ph.Items(), ph.Errors, ph.Latency.P50, ph.Latency.P99)
		if ph.Throttled > 0 {
			fmt.Fprintf(&b, "  pushed back %d", ph.Throttled)
		}
		if ph.Export == "arc" && !math.IsNaN(float64(ph.AckLatency.P50)) {
			fmt.Fprintf(&b, "  durable-ack p50 %.1f p99 %.1f ms", ph.AckLatency.P50, ph.AckLatency.P99)
		}
		b.WriteString("\n")
		if bd := ph.Breakdown; bd != nil {
			fmt.Fprintf(&b, "  request mean = collector + Flight transfer + durable ack: %s ms; WAL commit %.2f ms, %.2f batches each\n", bd.Split(), bd.CommitMS, bd.GroupBatches)
		}
		for _, table := range slices.Sorted(maps.Keys(ph.Payload)) {
			p := ph.Payload[table]
			fmt.Fprintf(&b, "  payloads %-8s %d distinct batches of %d rows, each row sent %.2f times on average\n", table, p.Distinct, p.Rows, p.Repeats(ph.Acked[table]))
		}
		for _, t := range ph.Loss {
			fmt.Fprintf(&b, "  loss check %-8s expected %d found %d lost %d duplicated %d unexpected %d", t.Table, t.Expected, t.Found, t.Lost, t.Duplicated, t.Unexpected)
			if t.BytesPerRow() > 0 {
				fmt.Fprintf(&b, "  %d files, %.1f bytes per row", t.Files, t.BytesPerRow())
			}
			b.WriteString("\n")
		}
		if n, _ := ph.Stored(); n > 0 {
			for _, name := range slices.Sorted(maps.Keys(ph.Procs)) {
				u := ph.Procs[name]
				fmt.Fprintf(&b, "  %-18s %6.1f CPU s  %7.2f µs per stored row  peak RSS %.0f MiB\n", name, u.CPUSeconds, 1e6*u.CPUSeconds/float64(n), float64(u.PeakRSSBytes)/(1<<20))
			}
		}
	}
	if rep.Ratio > 0 {
		fmt.Fprintf(&b, "arc / ceiling: %.1f %%\n", 100*rep.Ratio)
	}
	if rep.Sweep != nil {
		fmt.Fprintf(&b, "sweep knee: %.0f items/s; saturated first: %s\n", rep.Sweep.Knee, rep.Sweep.Saturated)
	}
	if rep.Passed() {
		b.WriteString("PASS\n")
	} else {
		b.WriteString("FAIL:\n  " + strings.Join(rep.Failures, "\n  ") + "\n")
	}
	return b.String()
}
