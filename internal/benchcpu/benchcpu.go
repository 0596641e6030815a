// Package benchcpu measures the CPU time a benchmark spends, for the
// cpu-ns/row and cpu-ns/op metrics the project's benchmarks report: on a
// shared machine it moves far less than wall time, since waiting for a
// core is not counted.
package benchcpu

import (
	"syscall"
	"time"
)

// Process is the user and system CPU time the process has used so far;
// the difference of two readings is the CPU spent between them, in every
// goroutine (background flushes and compression included).
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err) // RUSAGE_SELF with a valid pointer cannot fail
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
