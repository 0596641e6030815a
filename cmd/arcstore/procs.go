package main

import (
	"os"
	"runtime"
)

// extraProcs is how many Go Ps (GOMAXPROCS) the sidecar runs beyond the
// machine's CPUs. Two goroutines hold a P without serving a request: the
// committer through each WAL write and fdatasync (a third of its time
// under load: Go takes a P back from a blocking syscall only when its
// monitor thread notices, which it rarely does between fsyncs 1-3 ms
// apart), and the flusher through each Parquet flush, CPU-bound and
// preempted every 10 ms or later. With as many Ps as CPUs, gRPC's reader
// and writer and the DoPut handlers wait for whatever P is left, or for
// the fsync to end; with one more the kernel runs them beside both at its
// finer grain (docs/PERFORMANCE.md#otlp-request-latency).
const extraProcs = 1

// setProcs raises GOMAXPROCS by extraProcs and returns the value in force.
// It leaves it alone when $GOMAXPROCS chose it, and when Go's default is
// below the CPU count (a container's CPU limit or an affinity mask: more
// Ps than the quota would have the kernel throttle the process).
func setProcs() int {
	n := runtime.GOMAXPROCS(0)
	if os.Getenv("GOMAXPROCS") != "" || n < runtime.NumCPU() {
		return n
	}
	runtime.GOMAXPROCS(n + extraProcs)
	return n + extraProcs
}
