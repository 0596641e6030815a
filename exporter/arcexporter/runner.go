package arcexporter

import "sync"

// runner runs pushes on goroutines that outlive them. exporterhelper's
// batcher starts a new goroutine for every batch it flushes; its stack
// starts small and the conversion and the IPC encoder below it grow it by
// copying, several times per push (runtime.copystack under the batcher's
// goroutines was 1.4-2.8 % of the collector's CPU in a profile under
// load). A goroutine that ran a push before keeps the stack it grew. There
// are at most as many as pushes ever ran at once (the queue's consumers);
// they end at shutdown.
type runner struct {
	jobs chan *job
	quit chan struct{}

	mu      sync.Mutex
	closed  bool
	active  int // calls of run in progress
	started int // workers, never fewer than active
	wg      sync.WaitGroup
}

type job struct {
	f    func()
	done chan struct{} // one slot: the worker never waits for run
}

var jobPool = sync.Pool{New: func() any { return &job{done: make(chan struct{}, 1)} }}

func newRunner() *runner {
	return &runner{jobs: make(chan *job), quit: make(chan struct{})}
}

// run calls f on a worker and returns when f has returned; after close it
// calls f itself. A worker starts only when every worker is running
// another call's f: otherwise one is idle or about to be (it finished a
// call that already returned), and the send waits for it.
func (r *runner) run(f func()) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		f()
		return
	}
	r.active++
	j := jobPool.Get().(*job)
	j.f = f
	if r.active > r.started {
		r.started++
		r.wg.Add(1)
		go r.work(j)
		r.mu.Unlock()
		<-j.done
	} else {
		r.mu.Unlock()
		select {
		case r.jobs <- j:
			<-j.done
		case <-r.quit: // closed since: the workers are ending
			f()
		}
	}
	j.f = nil
	jobPool.Put(j)
	r.mu.Lock()
	r.active--
	r.mu.Unlock()
}

func (r *runner) work(j *job) {
	defer r.wg.Done()
	for {
		j.f()
		j.done <- struct{}{}
		select {
		case j = <-r.jobs:
		case <-r.quit:
			return
		}
	}
}

// close ends the idle workers and waits for busy ones to finish their job.
func (r *runner) close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.mu.Unlock()
	close(r.quit)
	r.wg.Wait()
}
