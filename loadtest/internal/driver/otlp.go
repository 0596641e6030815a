package driver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Plan is what a driver sends.
type Plan struct {
	Signals []Signal
	// Rate is the target of items per second over all signals; 0 sends as
	// fast as the receiver answers.
	Rate     float64
	Duration time.Duration
	Workers  int
	Batch    int
	// Endpoint is the collector's OTLP gRPC address (host:port).
	Endpoint string
	// TimeOffset shifts the items' timestamps from now, e.g. -2h to fill
	// a past (closed, compactable) hour.
	TimeOffset time.Duration
	// RandomIDs makes every send's trace and span ids random (traces).
	RandomIDs bool
}

// Validate says what is wrong with a plan.
func (p Plan) Validate() error {
	var errs []error
	if len(p.Signals) == 0 {
		errs = append(errs, errors.New("no signal to send"))
	}
	if p.Rate < 0 {
		errs = append(errs, fmt.Errorf("rate %v: must be 0 (unlimited) or positive", p.Rate))
	}
	if p.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration %v: must be positive", p.Duration))
	}
	if p.Workers < len(p.Signals) {
		errs = append(errs, fmt.Errorf("workers %d: need at least one per signal (%d)", p.Workers, len(p.Signals)))
	}
	if p.Batch <= 0 {
		errs = append(errs, fmt.Errorf("batch %d: must be positive", p.Batch))
	}
	if p.Endpoint == "" {
		errs = append(errs, errors.New("no endpoint"))
	}
	return errors.Join(errs...)
}

// OTLP sends pre-marshalled OTLP export requests over gRPC. Marshalling
// happens once per worker before the clock starts; each send copies the
// request and patches in fresh item ids, so the sender spends its CPU on
// the wire, not on building telemetry.
type OTLP struct {
	Plan     Plan
	Recorder *Recorder
	base     uint64
	nextID   atomic.Uint64
	// doubt are the requests not acknowledged in whole: their items may
	// or may not be stored.
	doubtMu  sync.Mutex
	doubt    []IDSpan
	overflow bool
	// templates are the workers' requests, built by Prepare.
	templates []*template
}

// NewOTLP returns a driver whose item ids start at a random base, so that
// runs against a long-lived sidecar can tell their rows from earlier ones.
func NewOTLP(p Plan, r *Recorder) *OTLP {
	d := &OTLP{Plan: p, Recorder: r, base: uint64(rand.Uint32()) << 32}
	d.nextID.Store(d.base)
	return d
}

// IDRange is the lowest and highest id sent so far, as they appear in the
// id attribute; lo > hi when nothing was sent.
func (d *OTLP) IDRange() (lo, hi string) {
	var b [idWidth]byte
	putHex(b[:], d.base)
	lo = string(b[:])
	putHex(b[:], d.nextID.Load()-1)
	return lo, string(b[:])
}

// IDSpan is the ids of one request whose items were not all acknowledged
// (refused for good, in whole or in part), as they appear in the id
// attribute; Acked of them were acknowledged all the same.
type IDSpan struct {
	Signal Signal
	Lo, Hi string
	Acked  int64
}

// maxDoubt bounds the spans kept: a run refused that often has failed
// anyway, and its loss check need not name each request.
const maxDoubt = 4096

// InDoubt is the requests not acknowledged in whole; ok is false when
// there were more than it keeps.
func (d *OTLP) InDoubt() (spans []IDSpan, ok bool) {
	d.doubtMu.Lock()
	defer d.doubtMu.Unlock()
	return slices.Clone(d.doubt), !d.overflow
}

func (d *OTLP) addDoubt(s Signal, first uint64, items, acked int) {
	var lo, hi [idWidth]byte
	putHex(lo[:], first)
	putHex(hi[:], first+uint64(items)-1)
	d.doubtMu.Lock()
	defer d.doubtMu.Unlock()
	if len(d.doubt) == maxDoubt {
		d.overflow = true
		return
	}
	d.doubt = append(d.doubt, IDSpan{Signal: s, Lo: string(lo[:]), Hi: string(hi[:]), Acked: int64(acked)})
}

// Prepare marshals each worker's request, once; Run calls it, and the
// harness calls it before its clock starts: on a busy machine 64 workers'
// requests took 16 s, which a run's send time used to include.
func (d *OTLP) Prepare() error {
	if d.templates != nil {
		return nil
	}
	now := time.Now().Add(d.Plan.TimeOffset)
	templates := make([]*template, d.Plan.Workers)
	for w := range templates {
		var err error
		if templates[w], err = newTemplate(d.Plan.Signals[w%len(d.Plan.Signals)], d.Plan.Batch, now, d.Plan.RandomIDs); err != nil {
			return err
		}
	}
	d.templates = templates
	return nil
}

// Run sends until the plan's duration has passed or ctx ends, then waits for
// the requests in flight.
func (d *OTLP) Run(ctx context.Context) error {
	if err := d.Plan.Validate(); err != nil {
		return err
	}
	conn, err := grpc.NewClient(d.Plan.Endpoint,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{}), grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return fmt.Errorf("dial %s: %w", d.Plan.Endpoint, err)
	}
	defer conn.Close()
	if err := d.Prepare(); err != nil {
		return err
	}
	pace := newPacer(d.Plan.Rate, d.Plan.Batch, time.Now())
	ctx, cancel := context.WithTimeout(ctx, d.Plan.Duration)
	defer cancel()
	var wg sync.WaitGroup
	for _, t := range d.templates {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.work(ctx, conn, t, pace)
		}()
	}
	wg.Wait()
	return nil
}

func (d *OTLP) work(ctx context.Context, conn *grpc.ClientConn, t *template, pace *pacer) {
	var buf []byte
	for {
		if !pace.wait(ctx) {
			return
		}
		first := d.nextID.Add(uint64(t.items)) - uint64(t.items)
		buf = t.fill(buf, first, time.Now().Add(d.Plan.TimeOffset))
		d.send(conn, t, buf, first)
	}
}

// send delivers one request, retrying what the receiver says to retry, the
// way an OTLP SDK does. Once started a request is finished even after the
// run's time is up: abandoning it would leave its items in doubt.
func (d *OTLP) send(conn *grpc.ClientConn, t *template, req []byte, first uint64) {
	backoff := 10 * time.Millisecond
	for {
		var resp []byte
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := conn.Invoke(ctx, t.method, req, &resp)
		cancel()
		if err == nil {
			rejected, perr := rejectedItems(t.signal, resp)
			if perr != nil {
				rejected = t.items
			}
			if rejected > 0 {
				d.addDoubt(t.signal, first, t.items, t.items-rejected)
			}
			d.Recorder.Success(t.signal, t.items, rejected, time.Since(start))
			return
		}
		if !retryable(err) {
			d.addDoubt(t.signal, first, t.items, 0)
			d.Recorder.Failure(t.items)
			return
		}
		d.Recorder.Failure(0)
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Second)
	}
}

func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.ResourceExhausted, codes.Aborted, codes.DeadlineExceeded:
		return true
	}
	return false
}

// rejectedItems reads the partial-success count of an export response.
func rejectedItems(s Signal, resp []byte) (int, error) {
	switch s {
	case Traces:
		r := ptraceotlp.NewExportResponse()
		if err := r.UnmarshalProto(resp); err != nil {
			return 0, err
		}
		return int(r.PartialSuccess().RejectedSpans()), nil
	case Logs:
		r := plogotlp.NewExportResponse()
		if err := r.UnmarshalProto(resp); err != nil {
			return 0, err
		}
		return int(r.PartialSuccess().RejectedLogRecords()), nil
	default:
		r := pmetricotlp.NewExportResponse()
		if err := r.UnmarshalProto(resp); err != nil {
			return 0, err
		}
		return int(r.PartialSuccess().RejectedDataPoints()), nil
	}
}

// pacer hands out send slots at the target rate. Slots that fall behind
// are used at once rather than skipped, so a slow receiver shows as an
// achieved rate under the target, not as a silently lowered target.
type pacer struct {
	every time.Duration // between requests; 0 = no pacing
	next  atomic.Int64  // unix nanos of the next free slot
}

func newPacer(rate float64, batch int, start time.Time) *pacer {
	p := &pacer{}
	if rate > 0 {
		p.every = time.Duration(float64(batch) / rate * float64(time.Second))
	}
	p.next.Store(start.UnixNano())
	return p
}

func (p *pacer) wait(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	if p.every == 0 {
		return true
	}
	slot := time.Unix(0, p.next.Add(int64(p.every))-int64(p.every))
	d := time.Until(slot)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
