package stack

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Binary names under Options.BinDir.
const (
	SidecarBin   = "arcstore"
	CollectorBin = "otelcol-arc"
	// ContribBin is the process name of Options.ContribCollector.
	ContribBin = "otelcol-contrib"
)

// Exporters a stack's collector sends to.
const (
	ExportArc = "arc" // through the sidecar to Parquet
	ExportNop = "nop" // the ceiling: the same collector, data dropped
	// SidecarOnly starts no collector: Arc-protocol clients write to the
	// sidecar's HTTP API.
	SidecarOnly = "sidecar"
	// ExportContribClickHouse starts Options.ContribCollector (an ocb
	// build with the contrib clickhouseexporter, loadtest/contrib) instead
	// of ours: OTLP in, rows into the ClickHouse at Options.ClickHouseAddr.
	ExportContribClickHouse = "contrib-clickhouse"
)

// Transports between a stack's collector and its sidecar's Flight
// listener.
const (
	TransportTCP  = "tcp"  // loopback TCP
	TransportUnix = "unix" // a Unix socket, SocketFile in the work directory
)

// SocketFile is the sidecar's Unix socket in the work directory.
const SocketFile = "arcstore.sock"

// Options of a stack.
type Options struct {
	BinDir  string
	WorkDir string // logs, configs and (for arc) the data directory
	Export  string
	// QueueSize is the arc exporter's sending queue in items; full, it
	// blocks the receiver instead of refusing, so backpressure reaches the
	// sender as latency.
	QueueSize int
	// ExporterExtra is one YAML line (flow style) added to the arc
	// exporter's settings, to compare queue settings; one that sets
	// sending_queue replaces the queue line above.
	ExporterExtra string
	SidecarArgs   []string
	// Transport is how the collector reaches the sidecar, TransportTCP
	// when empty.
	Transport string
	// CollectorPprof, when set, serves the collector's pprof extension
	// there, for profiling a run.
	CollectorPprof string
	// ContribCollector, ClickHouseAddr (native protocol, host:port) and
	// ClickHouseDatabase are the collector binary and the server of
	// ExportContribClickHouse.
	ContribCollector   string
	ClickHouseAddr     string
	ClickHouseDatabase string
}

// Stack is a running collector and, exporting to arc, its sidecar.
type Stack struct {
	Collector *Proc
	Sidecar   *Proc // nil for the ceiling
	// OTLP is the collector's OTLP gRPC address.
	OTLP string
	// CollectorMetrics and SidecarMetrics are Prometheus endpoints.
	CollectorMetrics string
	SidecarMetrics   string
	// SidecarURL is the sidecar's HTTP base URL.
	SidecarURL string
	DataDir    string
}

// Start launches the stack and waits until it is ready.
func Start(o Options) (*Stack, error) {
	if o.Export != ExportArc && o.Export != ExportNop && o.Export != SidecarOnly && o.Export != ExportContribClickHouse {
		return nil, fmt.Errorf("export %q: want %s, %s, %s or %s", o.Export, ExportArc, ExportNop, SidecarOnly, ExportContribClickHouse)
	}
	if o.Transport != "" && o.Transport != TransportTCP && o.Transport != TransportUnix {
		return nil, fmt.Errorf("transport %q: want %s or %s", o.Transport, TransportTCP, TransportUnix)
	}
	if err := os.MkdirAll(o.WorkDir, 0o755); err != nil {
		return nil, fmt.Errorf("create work dir: %w", err)
	}
	ports, err := freePorts(6)
	if err != nil {
		return nil, err
	}
	s := &Stack{OTLP: addr(ports[0])}
	var sidecarGRPC string
	if o.Export == ExportArc || o.Export == SidecarOnly {
		s.DataDir = filepath.Join(o.WorkDir, "data")
		if sidecarGRPC, err = grpcTarget(o, ports[1]); err != nil {
			return nil, err
		}
		sidecarHTTP := addr(ports[2])
		args := append([]string{"-data-dir", s.DataDir, "-grpc-addr", sidecarGRPC, "-http-addr", sidecarHTTP}, o.SidecarArgs...)
		if s.Sidecar, err = StartProc(o.WorkDir, SidecarBin, filepath.Join(o.BinDir, SidecarBin), args...); err != nil {
			return nil, err
		}
		s.SidecarURL = "http://" + sidecarHTTP
		s.SidecarMetrics = s.SidecarURL + "/metrics"
		if err := s.Sidecar.WaitHTTP("http://"+sidecarHTTP+"/ready", 30*time.Second); err != nil {
			s.Stop()
			return nil, err
		}
	}
	if o.Export == SidecarOnly {
		s.OTLP = ""
		return s, nil
	}
	cfg := collectorConfig(o, s.OTLP, addr(ports[3]), sidecarGRPC, addr(ports[4]), ports[5])
	cfgPath := filepath.Join(o.WorkDir, "otelcol-"+o.Export+".yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		s.Stop()
		return nil, fmt.Errorf("write collector config: %w", err)
	}
	name, bin := CollectorBin+"-"+o.Export, filepath.Join(o.BinDir, CollectorBin)
	if o.Export == ExportContribClickHouse {
		name, bin = ContribBin, o.ContribCollector
	}
	if s.Collector, err = StartProcEnv(o.WorkDir, name, bin, collectorEnv(), "--config", cfgPath); err != nil {
		s.Stop()
		return nil, err
	}
	s.CollectorMetrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[5])
	if err := s.Collector.WaitHTTP("http://"+addr(ports[4])+"/", 60*time.Second); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Stop ends the collector first, so nothing is sent to a stopped sidecar,
// then the sidecar, which flushes every buffered row to Parquet on SIGTERM.
func (s *Stack) Stop() error {
	var errs []error
	if s.Collector != nil {
		errs = append(errs, s.Collector.Stop(30*time.Second))
	}
	if s.Sidecar != nil {
		errs = append(errs, s.Sidecar.Stop(2*time.Minute))
	}
	return errors.Join(errs...)
}

func collectorConfig(o Options, otlpGRPC, otlpHTTP, sidecar, health string, metricsPort int) string {
	exporter, name := "nop: {}", o.Export
	switch o.Export {
	case ExportContribClickHouse:
		exporter, name = contribExporter(o), ContribExporter
	case ExportArc:
		queueYAML := fmt.Sprintf("sending_queue: {enabled: true, queue_size: %d, block_on_overflow: true}", queueSize(o))
		if strings.Contains(o.ExporterExtra, "sending_queue:") {
			queueYAML = ""
		}
		exporter = fmt.Sprintf(`arc:
    endpoint: %q
    tls: {insecure: true}
    %s
    retry_on_failure: {enabled: true, initial_interval: 50ms, max_interval: 1s, max_elapsed_time: 0s}
    %s`, sidecar, queueYAML, o.ExporterExtra)
	}
	pprofExt, pprofName := "", ""
	if o.CollectorPprof != "" {
		pprofExt, pprofName = fmt.Sprintf("\n  pprof: {endpoint: %q}", o.CollectorPprof), ", pprof"
	}
	return fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc: {endpoint: %q, max_recv_msg_size_mib: 64}
      http: {endpoint: %q}
processors:
  memory_limiter: {check_interval: 1s, limit_mib: 2048, spike_limit_mib: 512}
exporters:
  %s
extensions:
  health_check: {endpoint: %q}%[7]s
service:
  extensions: [health_check%[8]s]
  telemetry:
    logs: {level: warn}
    metrics:
      level: normal
      readers:
        - pull:
            exporter:
              prometheus: {host: "127.0.0.1", port: %[5]d, without_units: true, without_type_suffix: true}
  pipelines:
    traces: {receivers: [otlp], processors: [memory_limiter], exporters: [%[6]s]}
    logs: {receivers: [otlp], processors: [memory_limiter], exporters: [%[6]s]}
    metrics: {receivers: [otlp], processors: [memory_limiter], exporters: [%[6]s]}
`, otlpGRPC, otlpHTTP, exporter, health, metricsPort, name, pprofExt, pprofName)
}

// grpcTarget is the sidecar's -grpc-addr, which is also the exporter's
// endpoint: a loopback port, or a Unix socket in the work directory.
func grpcTarget(o Options, port int) (string, error) {
	if o.Transport != TransportUnix {
		return addr(port), nil
	}
	dir, err := filepath.Abs(o.WorkDir)
	if err != nil {
		return "", fmt.Errorf("socket path: %w", err)
	}
	return "unix://" + filepath.Join(dir, SocketFile), nil
}

// queueSize is the exporter's sending queue in items.
func queueSize(o Options) int {
	if o.QueueSize <= 0 {
		return 100_000
	}
	return o.QueueSize
}

// collectorGOGC is the collector's GC target as make run and the image set
// it (COLLECTOR_GOGC in the Makefile), unless $GOGC sets one for the run.
const collectorGOGC = "400"

func collectorEnv() []string {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return nil
	}
	return []string{"GOGC=" + collectorGOGC}
}

func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
