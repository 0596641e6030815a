package driver

import (
	"slices"
	"sync"
	"time"
)

// Recorder counts what a driver sent and how long each request took. The
// run reads it every interval; Take returns what happened since the last
// Take.
type Recorder struct {
	mu       sync.Mutex
	interval Counts
	total    Counts
}

// Counts is what happened in some span of time.
type Counts struct {
	// Acked items per signal: the receiver answered OK.
	Acked    map[Signal]int64
	Requests int64
	// Errors are failed requests, retried or not; Rejected are items the
	// receiver refused for good (partial success or a permanent status).
	Errors   int64
	Rejected int64
	// Throttled are requests the receiver pushed back (HTTP 429 or 503)
	// and the driver retried: back-pressure, not failure.
	Throttled int64
	// Latencies of successful requests, from send to answer.
	Latencies []time.Duration
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	return &Recorder{interval: newCounts(), total: newCounts()}
}

func newCounts() Counts { return Counts{Acked: map[Signal]int64{}} }

// Success records a request whose items the receiver accepted.
func (r *Recorder) Success(s Signal, items int, rejected int, latency time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range []*Counts{&r.interval, &r.total} {
		c.Acked[s] += int64(items - rejected)
		c.Rejected += int64(rejected)
		c.Requests++
		c.Latencies = append(c.Latencies, latency)
	}
}

// Failure records a failed request; rejected is how many of its items are
// given up (0 when the request will be retried).
func (r *Recorder) Failure(rejected int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range []*Counts{&r.interval, &r.total} {
		c.Errors++
		c.Requests++
		c.Rejected += int64(rejected)
	}
}

// Throttled records a request the receiver pushed back; it is retried.
func (r *Recorder) Throttled() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range []*Counts{&r.interval, &r.total} {
		c.Throttled++
		c.Requests++
	}
}

// Take returns the counts since the previous Take and starts a new interval.
func (r *Recorder) Take() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.interval
	r.interval = newCounts()
	return c
}

// Total returns the counts of the whole run so far.
func (r *Recorder) Total() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.total
	c.Acked = maps(c.Acked)
	c.Latencies = slices.Clone(c.Latencies)
	return c
}

func maps(m map[Signal]int64) map[Signal]int64 {
	out := make(map[Signal]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Items is the sum of acked items over every signal.
func (c Counts) Items() int64 {
	var n int64
	for _, v := range c.Acked {
		n += v
	}
	return n
}
