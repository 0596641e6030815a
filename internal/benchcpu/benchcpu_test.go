package benchcpu

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestProcessCountsWork(t *testing.T) {
	start := Process()
	x := uint64(1)
	for Process()-start < 5e6 { // 5 ms of CPU, not of wall time
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	assert.GreaterOrEqual(t, int64(Process()-start), int64(5e6))
	assert.NotZero(t, x)
}
