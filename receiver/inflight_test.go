package receiver

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

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

// TestTricklingBodyGivesBackItsShare: a client that stops sending its body
// is cut off at BodyReadTimeout and its share of the bound is given back.
func TestTricklingBodyGivesBackItsShare(t *testing.T) {
	f := newWriteFixture(t, nil, 0, 0, 1<<20)
	arc := f.arc
	arc.BodyReadTimeout = 50 * time.Millisecond
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() { _, _ = pw.Write([]byte{0x82}) }() // one byte, then nothing
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+PathWriteMsgpack, pr)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.True(t, arc.inflight.sem.TryAcquire(inflightRequests<<20), "the share is given back")
	require.NoError(t, f.store.Close())
}
