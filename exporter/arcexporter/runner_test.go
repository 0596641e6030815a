package arcexporter

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (r *runner) workers() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started
}

// One push after another runs on the one worker the first started: that
// worker's stack is the one that already grew.
func TestRunnerReusesAnIdleWorker(t *testing.T) {
	r := newRunner()
	defer r.close()
	for i := range 50 {
		var got int
		r.run(func() { got = i })
		assert.Equal(t, i, got, "run returns after f, with what f wrote")
	}
	assert.Equal(t, 1, r.workers())
}

// Pushes that run at once each get a worker, none waits for another's,
// and no more workers start than ever ran at once.
func TestRunnerRunsConcurrentJobsAtOnce(t *testing.T) {
	const n = 8
	r := newRunner()
	defer r.close()
	for range 3 {
		var inside sync.WaitGroup
		inside.Add(n)
		release := make(chan struct{})
		var ran atomic.Int32
		var callers sync.WaitGroup
		for range n {
			callers.Go(func() {
				r.run(func() {
					inside.Done()
					<-release // every job waits until all n are inside
					ran.Add(1)
				})
			})
		}
		inside.Wait()
		close(release)
		callers.Wait()
		assert.EqualValues(t, n, ran.Load())
	}
	assert.LessOrEqual(t, r.workers(), n)
	assert.GreaterOrEqual(t, r.workers(), n)
}

// close waits for a job in progress; a run after close still runs (on the
// caller), and no worker is left behind (goleak in TestMain).
func TestRunnerClose(t *testing.T) {
	r := newRunner()
	started, release := make(chan struct{}), make(chan struct{})
	finished := make(chan struct{})
	go func() {
		r.run(func() {
			close(started)
			<-release
		})
		close(finished)
	}()
	<-started
	closed := make(chan struct{})
	go func() {
		r.close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("close returned while a job was running")
	case <-finished:
		t.Fatal("run returned before its job")
	default:
	}
	close(release)
	<-finished
	<-closed
	ran := false
	r.run(func() { ran = true })
	require.True(t, ran)
	r.close() // twice is fine
}
