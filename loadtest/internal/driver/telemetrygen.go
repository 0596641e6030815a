package driver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/arc-otel/arc-otel/loadtest/internal/stack"
)

// Telemetrygen runs one telemetrygen process per signal of the plan. It
// cannot say what it sent (its trace generator drops spans when its workers
// contend), so a run counts items by what the collector accepted.
type Telemetrygen struct {
	Plan Plan
	Bin  string
	// Log receives the processes' output.
	Log *os.File
	// Usage is the CPU and peak memory of the processes, summed, once Run
	// has returned.
	Usage stack.Usage
}

// Args returns the telemetrygen command line for one signal: the plan's
// rate and workers are shared evenly by the signals, and telemetrygen's
// rate is per worker.
func (d *Telemetrygen) Args(s Signal) []string {
	workers := max(1, d.Plan.Workers/len(d.Plan.Signals))
	rate := 0.0
	if d.Plan.Rate > 0 {
		rate = d.Plan.Rate / float64(len(d.Plan.Signals)) / float64(workers)
		if s == Traces {
			// Each trace is a parent and a child span.
			rate /= 2
		}
	}
	return []string{string(s),
		"--otlp-endpoint", d.Plan.Endpoint, "--otlp-insecure",
		"--duration", d.Plan.Duration.String(),
		"--workers", strconv.Itoa(workers),
		"--rate", strconv.FormatFloat(rate, 'f', -1, 64),
		"--batch-size", strconv.Itoa(d.Plan.Batch),
		"--interval", time.Hour.String(), // its own progress lines are noise here
	}
}

// Run starts every signal's process and waits for all of them.
func (d *Telemetrygen) Run(ctx context.Context) error {
	if err := d.Plan.Validate(); err != nil {
		return err
	}
	errs := make([]error, len(d.Plan.Signals))
	var wg sync.WaitGroup
	cmds := make([]*exec.Cmd, len(d.Plan.Signals))
	for i, s := range d.Plan.Signals {
		cmd := exec.CommandContext(ctx, d.Bin, d.Args(s)...)
		cmds[i] = cmd
		cmd.Stdout, cmd.Stderr = d.Log, d.Log
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("telemetrygen %s: %w", s, err)
			}
		}()
	}
	wg.Wait()
	for _, cmd := range cmds {
		u := stack.CommandUsage(cmd)
		d.Usage.CPUSeconds += u.CPUSeconds
		d.Usage.PeakRSSBytes += u.PeakRSSBytes
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
