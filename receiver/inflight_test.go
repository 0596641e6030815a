package receiver

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInflightBoundsRequestsTogether: requests in progress hold at most
// three budgets together; a decoded request keeps three times what its
// columns took and gives the rest back, letting the next one in.
func TestInflightBoundsRequestsTogether(t *testing.T) {
	const budget = 1 << 20
	var f inflight
	ctx := context.Background()
	var held []*ticket
	for range inflightRequests {
		tk, err := f.admit(ctx, budget)
		require.NoError(t, err)
		held = append(held, tk)
	}
	assert.False(t, f.sem.TryAcquire(1), "three budgets are taken: the next request waits")

	held[0].keep(budget / 4) // decoded: it keeps what its record and IPC copy need
	assert.True(t, f.sem.TryAcquire(budget-budget/4), "what it gave back lets another request in")
	f.sem.Release(budget - budget/4)

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err := f.admit(canceled, budget)
	assert.Error(t, err, "a client that gave up stops waiting")

	for _, tk := range held {
		tk.done()
	}
	assert.True(t, f.sem.TryAcquire(inflightRequests*budget), "everything is given back")
}
