package main

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSetProcs(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	cpus := runtime.NumCPU()
	tests := []struct {
		name  string
		env   string
		procs int // Go's default as the test sets it
		want  int
	}{
		{name: "one P beyond the CPUs", procs: cpus, want: cpus + extraProcs},
		{name: "GOMAXPROCS set is kept", env: "1", procs: 1, want: 1},
		{name: "a default below the CPUs (a CPU limit) is kept", procs: cpus - 1, want: cpus - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.procs < 1 {
				t.Skip("one CPU: no default below it")
			}
			runtime.GOMAXPROCS(tt.procs)
			t.Setenv("GOMAXPROCS", tt.env)
			assert.Equal(t, tt.want, setProcs())
			assert.Equal(t, tt.want, runtime.GOMAXPROCS(0))
		})
	}
}
