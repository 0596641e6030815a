package driver

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/vmihailenco/msgpack/v5"
)

// Arc measurements in the shapes of the specification's Arc load tests.
const (
	ArcMetrics Signal = "system_metrics"
	ArcLogs    Signal = "application_logs"
	ArcTraces  Signal = "distributed_traces"
	ArcEvents  Signal = "system_events"
)

// ArcPath is Arc's MessagePack write endpoint.
const ArcPath = "/api/v1/write/msgpack"

// Arc posts pre-generated, gzip-compressed (level 1) MessagePack columnar
// batches to an Arc-compatible write API: the sidecar, or Arc itself for a
// side-by-side number. The workers of a measurement take turns through its
// distinct payloads, cycling when the run outlasts them; the API has no
// retry semantics, so repeated payloads are new rows, and the loss check
// compares counts.
type Arc struct {
	Plan     Plan // Endpoint is the base URL, e.g. http://127.0.0.1:8000
	Recorder *Recorder
	Token    string
	Database string
	// Shape picks the generators of logs and traces (ShapeNew if empty).
	Shape Shape
	// Payloads is how many distinct batches per measurement are generated
	// before the clock starts.
	Payloads int
	// MemoryBudget bounds the bytes the pre-generated batches of all
	// measurements hold (gzip bodies, raw ones with Fresh): past it fewer
	// distinct batches are made, and Sizes says how many. 0: no bound.
	MemoryBudget int64
	// Fresh moves each request's timestamps to its send time (gzipping
	// every request anew), so cycled batches never repeat a row.
	Fresh bool
	// Sizes is the mean size of one batch per measurement and how many
	// distinct ones there are, known once Run has generated the payloads.
	Sizes  map[Signal]PayloadSize
	client *http.Client
	bodies map[Signal][][]byte // from Prepare, for the next Run
	fresh  map[Signal][]*freshBody
}

// PayloadSize is the weight of one batch: MessagePack bytes before and
// after gzip, and how many distinct batches the run cycled through.
type PayloadSize struct {
	Rows     int `json:"rows"`
	Raw      int `json:"raw_bytes"`
	Gzip     int `json:"gzip_bytes"`
	Distinct int `json:"distinct_batches"`
}

// Prepare generates the payloads, so that a caller can do it before its
// clock starts (Run does it otherwise). A Run uses them once: the next
// generates fresh ones, with fresh timestamps.
func (d *Arc) Prepare() error {
	now := time.Now().Add(d.Plan.TimeOffset)
	seed := rand.Uint64()
	d.bodies = map[Signal][][]byte{}
	d.fresh = map[Signal][]*freshBody{}
	d.Sizes = map[Signal]PayloadSize{}
	for _, s := range d.Plan.Signals {
		kept, size, err := d.generate(s, now, seed)
		if err != nil {
			return err
		}
		d.Sizes[s] = size
		if !d.Fresh {
			d.bodies[s] = kept
			continue
		}
		// Only the templates are kept: each send gzips anew.
		for _, raw := range kept {
			fb, err := newFreshBody(raw, d.Plan.Batch, timeUnit(s), now)
			if err != nil {
				return err
			}
			d.fresh[s] = append(d.fresh[s], fb)
		}
	}
	return nil
}

// generate makes the distinct batches of one measurement on every core:
// the first tells their weight, the memory budget how many fit. It keeps
// the gzip bodies, or with Fresh the raw ones.
func (d *Arc) generate(s Signal, now time.Time, seed uint64) ([][]byte, PayloadSize, error) {
	kept := func(raw, gz []byte) []byte {
		if d.Fresh {
			return raw
		}
		return gz
	}
	raw, gz, err := d.payload(s, now, seed, 0)
	if err != nil {
		return nil, PayloadSize{}, err
	}
	n := max(1, d.Payloads)
	if d.MemoryBudget > 0 {
		share := d.MemoryBudget / int64(len(d.Plan.Signals))
		n = int(min(int64(n), max(1, share/int64(len(kept(raw, gz))))))
	}
	out := make([][]byte, n)
	raws, gzs := make([]int, n), make([]int, n)
	out[0], raws[0], gzs[0] = kept(raw, gz), len(raw), len(gz)
	var next atomic.Int64
	next.Store(1)
	errs := make([]error, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				raw, gz, err := d.payload(s, now, seed, i)
				if err != nil {
					errs[w] = err
					return
				}
				out[i], raws[i], gzs[i] = kept(raw, gz), len(raw), len(gz)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, PayloadSize{}, err
	}
	size := PayloadSize{Rows: d.Plan.Batch, Distinct: n}
	for i := range n {
		size.Raw += raws[i]
		size.Gzip += gzs[i]
	}
	size.Raw /= n
	size.Gzip /= n
	return out, size, nil
}

// payload is batch i of a measurement, raw and gzipped. The cycled shape's
// batches are the same in every run, as they always were; the new shape's
// are drawn from the run's seed.
func (d *Arc) payload(s Signal, now time.Time, seed uint64, i int) (raw, gz []byte, err error) {
	r := rand.New(rand.NewPCG(uint64(i), uint64(len(s))))
	if d.Shape != ShapeCycled {
		r = rand.New(rand.NewPCG(seed+uint64(len(s)), uint64(i)))
	}
	if raw, err = arcRaw(d.Shape, s, d.Plan.Batch, now, r); err != nil {
		return nil, nil, err
	}
	gz, err = gzip1(raw)
	return raw, gz, err
}

// Run sends until the plan's duration has passed or ctx ends.
func (d *Arc) Run(ctx context.Context) error {
	if err := d.Plan.Validate(); err != nil {
		return err
	}
	if d.bodies == nil {
		if err := d.Prepare(); err != nil {
			return err
		}
	}
	bodies, fresh := d.bodies, d.fresh
	d.bodies, d.fresh = nil, nil
	d.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: d.Plan.Workers}}
	pace := newPacer(d.Plan.Rate, d.Plan.Batch, time.Now())
	ctx, cancel := context.WithTimeout(ctx, d.Plan.Duration)
	defer cancel()
	var wg sync.WaitGroup
	for w := 0; w < d.Plan.Workers; w++ {
		s := d.Plan.Signals[w%len(d.Plan.Signals)]
		first, stride := payloadTurn(w, d.Plan.Workers, len(d.Plan.Signals))
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			var scratch []byte
			n := d.Sizes[s].Distinct
			for i := first; pace.wait(ctx); i += stride {
				var body []byte
				if !d.Fresh {
					body = bodies[s][i%n]
				} else {
					var err error
					if scratch, err = fresh[s][i%n].at(time.Now().Add(d.Plan.TimeOffset), &buf, scratch); err != nil {
						d.Recorder.Failure(d.Plan.Batch)
						continue
					}
					body = buf.Bytes()
				}
				d.send(ctx, s, body)
			}
		}()
	}
	wg.Wait()
	return nil
}

// payloadTurn is where worker w of workers starts in its signal's
// payloads and how far it steps: the workers of one signal take turns
// (rank r of k sends r, r+k, r+2k, ...), so each payload goes out once per
// cycle. Workers that all stepped by one from their own index sent every
// batch k times within milliseconds, and the servers' compressors folded
// the copies: bytes per row looked smaller than for rows never seen.
func payloadTurn(w, workers, signals int) (first, stride int) {
	peers := (workers - w%signals + signals - 1) / signals
	return w / signals, peers
}

// send posts body until it is answered for good, or until ctx ends while
// the server keeps pushing back or is unreachable (a request under way
// is not cut short: its rows may be kept).
func (d *Arc) send(ctx context.Context, s Signal, body []byte) {
	backoff := 10 * time.Millisecond
	for ctx.Err() == nil {
		start := time.Now()
		code, retryAfter, err := d.post(body)
		switch {
		case err == nil && code == http.StatusNoContent:
			d.Recorder.Success(s, d.Plan.Batch, 0, time.Since(start))
			return
		case err == nil && (code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable):
			// Back-pressure, not a failure: the server asks to come back.
			d.Recorder.Throttled()
			sleep(ctx, max(backoff, retryAfter))
			backoff = min(2*backoff, time.Second)
		case err != nil:
			d.Recorder.Failure(0)
			sleep(ctx, backoff)
			backoff = min(2*backoff, time.Second)
		default:
			d.Recorder.Failure(d.Plan.Batch)
			return
		}
	}
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (d *Arc) post(body []byte) (int, time.Duration, error) {
	req, err := http.NewRequest(http.MethodPost, d.Plan.Endpoint+ArcPath, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/msgpack")
	req.Header.Set("Content-Encoding", "gzip")
	if d.Token != "" {
		req.Header.Set("Authorization", "Bearer "+d.Token)
	}
	if d.Database != "" {
		req.Header.Set("x-arc-database", d.Database)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	return resp.StatusCode, time.Duration(secs) * time.Second, nil
}

// ArcPayload builds one gzip-compressed batch of n rows of a measurement.
func ArcPayload(shape Shape, s Signal, n int, now time.Time, r *rand.Rand) ([]byte, error) {
	raw, err := arcRaw(shape, s, n, now, r)
	if err != nil {
		return nil, err
	}
	return gzip1(raw)
}

// arcRaw is one batch as uncompressed MessagePack columns.
func arcRaw(shape Shape, s Signal, n int, now time.Time, r *rand.Rand) ([]byte, error) {
	switch {
	case shape != ShapeCycled && s == ArcLogs:
		return encodeColumns(s, newLogColumns(n, now, r))
	case shape != ShapeCycled && s == ArcTraces:
		return encodeColumns(s, newTraceColumns(n, now, r))
	}
	cols, err := arcColumns(s, n, now, r)
	if err != nil {
		return nil, err
	}
	raw, err := msgpack.Marshal(map[string]any{"m": string(s), "columns": cols})
	if err != nil {
		return nil, fmt.Errorf("encode %s payload: %w", s, err)
	}
	return raw, nil
}

// gzip1 compresses at level 1, as Arc's own clients and load tools send.
func gzip1(raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if _, err := zw.Write(raw); err != nil {
		return nil, fmt.Errorf("gzip payload: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("gzip payload: %w", err)
	}
	return buf.Bytes(), nil
}

var (
	services   = []string{"api-gateway", "auth-service", "user-service", "product-service", "order-service", "payment-service", "inventory-service", "notification-service"}
	regions    = []string{"us-east-1", "us-west-2", "eu-west-1", "ap-southeast-1"}
	envs       = []string{"production", "staging", "development"}
	levels     = []string{"DEBUG", "INFO", "INFO", "WARN", "ERROR"}
	metricKind = []string{"cpu", "memory", "disk", "network_in", "network_out", "temperature", "power"}
	kinds      = []string{"server", "client", "internal", "producer", "consumer"}
	methods    = []string{"GET", "POST", "PUT", "DELETE"}
	resources  = []string{"users", "orders", "products", "carts", "payments", "sessions"}
	eventTypes = []string{"deployment_started", "autoscale_triggered", "alert_triggered", "config_changed", "user_signup"}
)

func pick(r *rand.Rand, from []string) string { return from[r.IntN(len(from))] }

func hexID(r *rand.Rand) string { return fmt.Sprintf("%016x", r.Uint64()) }

// uuidV4 is a random (version 4) UUID drawn from r, so payloads stay
// reproducible per seed.
func uuidV4(r *rand.Rand) string {
	return uuid.Must(uuid.NewRandomFromReader(randReader{r})).String()
}

// randReader reads r's stream as bytes.
type randReader struct{ r *rand.Rand }

func (rr randReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(rr.r.Uint32())
	}
	return len(p), nil
}

// logTemplates are application log lines with variable parts, so messages
// vary row to row as real logs do (a constant message compresses to
// nothing and flatters every encoder).
var logTemplates = []func(r *rand.Rand) string{
	func(r *rand.Rand) string {
		return fmt.Sprintf("%s /api/v1/%s/%d completed in %d ms", pick(r, methods), pick(r, resources), r.IntN(1_000_000), r.IntN(2000))
	},
	func(r *rand.Rand) string {
		return fmt.Sprintf("user %d logged in from %d.%d.%d.%d", r.IntN(10_000_000), r.IntN(256), r.IntN(256), r.IntN(256), r.IntN(256))
	},
	func(r *rand.Rand) string {
		return fmt.Sprintf("order %s created: %d items, total %d.%02d USD", hexID(r)[:12], 1+r.IntN(20), r.IntN(5000), r.IntN(100))
	},
	func(r *rand.Rand) string { return "cache miss for key session:" + hexID(r) },
	func(r *rand.Rand) string {
		return fmt.Sprintf("upstream %s answered %d after %d ms (attempt %d)", pick(r, services), []int{200, 502, 503, 504}[r.IntN(4)], r.IntN(5000), 1+r.IntN(3))
	},
	func(r *rand.Rand) string {
		return fmt.Sprintf("payment %s declined: %s", hexID(r)[:10], []string{"insufficient funds", "card expired", "fraud check failed"}[r.IntN(3)])
	},
	func(r *rand.Rand) string {
		return fmt.Sprintf("connection pool exhausted (%d/%d in use), waited %d ms", 64, 64, r.IntN(1000))
	},
	func(r *rand.Rand) string {
		return fmt.Sprintf("request to %s.%s.svc timed out after %d ms", pick(r, services), pick(r, envs), 1000+r.IntN(29_000))
	},
}

func logMessage(r *rand.Rand) string { return logTemplates[r.IntN(len(logTemplates))](r) }

// arcColumns are the cycled shape's columns, and the only shape of
// metrics and events.
func arcColumns(s Signal, n int, now time.Time, r *rand.Rand) (map[string]any, error) {
	ns := make([]int64, n)
	ms := make([]int64, n)
	for i := range ns {
		t := now.Add(-time.Duration(r.IntN(int(time.Minute))))
		ns[i], ms[i] = t.UnixNano(), t.UnixMilli()
	}
	strs := func(f func() string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = f()
		}
		return out
	}
	ints := func(f func() int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = f()
		}
		return out
	}
	switch s {
	case ArcMetrics:
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(r.IntN(10000)) / 100
		}
		return map[string]any{"time": ns, "node": strs(func() string { return "node-" + strconv.Itoa(r.IntN(100)) }),
			"metric_name": strs(func() string { return pick(r, metricKind) }), "value": vals,
			"region": strs(func() string { return pick(r, regions) }), "environment": strs(func() string { return pick(r, envs) })}, nil
	case ArcLogs:
		return map[string]any{"time": ns, "level": strs(func() string { return pick(r, levels) }),
			"service": strs(func() string { return pick(r, services) }), "environment": strs(func() string { return pick(r, envs) }),
			"region": strs(func() string { return pick(r, regions) }), "message": strs(func() string { return logMessage(r) }),
			"response_time_ms": ints(func() int64 { return int64(r.IntN(500)) }), "status_code": ints(func() int64 { return int64([]int{200, 200, 201, 404, 500}[r.IntN(5)]) }),
			"request_id": strs(func() string { return uuidV4(r) })}, nil
	case ArcTraces:
		errs := make([]bool, n)
		for i := range errs {
			errs[i] = r.IntN(50) == 0
		}
		return map[string]any{"time": ms, "trace_id": strs(func() string { return hexID(r) + hexID(r) }), "span_id": strs(func() string { return hexID(r) }),
			"parent_span_id": strs(func() string {
				if r.IntN(10) < 3 {
					return hexID(r)
				}
				return ""
			}),
			"service_name": strs(func() string { return pick(r, services) }), "operation_name": strs(func() string { return pick(r, methods) + " /api" }),
			"span_kind": strs(func() string { return pick(r, kinds) }), "duration_ns": ints(func() int64 { return int64(r.IntN(500_000_000)) }),
			"status_code": ints(func() int64 { return int64([]int{200, 200, 201, 404, 500}[r.IntN(5)]) }), "http_method": strs(func() string { return pick(r, methods) }),
			"environment": strs(func() string { return pick(r, envs) }), "region": strs(func() string { return pick(r, regions) }), "error": errs}, nil
	case ArcEvents:
		return map[string]any{"time": ms, "event_type": strs(func() string { return pick(r, eventTypes) }),
			"event_category": strs(func() string { return []string{"infrastructure", "business", "security"}[r.IntN(3)] }),
			"severity":       strs(func() string { return []string{"info", "warning", "critical"}[r.IntN(3)] }),
			"source":         strs(func() string { return pick(r, services) }), "message": strs(func() string { return "event " + hexID(r) }),
			"duration_ms": ints(func() int64 { return int64(r.IntN(60_000)) })}, nil
	}
	return nil, errors.New("unknown Arc measurement " + string(s))
}
