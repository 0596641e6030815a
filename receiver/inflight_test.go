package receiver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage"
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
// is cut off at BodyReadTimeout and the room its body took is given back.
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
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "a slow link, not bad input: retry")
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.True(t, arc.inflight.sem.TryAcquire(inflightRequests<<20), "nothing of the bound is held")
	assert.True(t, arc.inflight.room.TryAcquire(1<<20), "the room its byte took is given back")
	require.NoError(t, f.store.Close())
}

// TestSlowBodiesDelayOnlyThemselves is the regression test of issue 31
// item 5: three clients that send their headers and 6 bytes of a
// 100 000-byte body used to hold the three budgets of the bound while
// their bodies trickled in, so every other write waited for their
// BodyReadTimeout. A body is now received before its request takes its
// turn: a normal write is answered while the slow ones still wait for
// their bytes.
func TestSlowBodiesDelayOnlyThemselves(t *testing.T) {
	dir := t.TempDir()
	store, err := storage.Open(storage.Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour})
	require.NoError(t, err)
	defer store.Close()
	arc := &MsgpackHandler{Store: store, Log: quiet, Mem: memory.DefaultAllocator, BodyReadTimeout: 10 * time.Second}
	mux := http.NewServeMux()
	HandleWrites(mux, arc, nil)
	var entered atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered.Add(1)
		mux.ServeHTTP(w, r)
	}))
	defer srv.Close()

	var slow []net.Conn
	for range inflightRequests {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		require.NoError(t, err)
		defer conn.Close()
		_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: arcstore\r\nContent-Length: 100000\r\n\r\n\x82\xa1m\xa3cpu", PathWriteMsgpack)
		require.NoError(t, err)
		slow = append(slow, conn)
	}
	require.Eventually(t, func() bool { return entered.Load() == inflightRequests }, 5*time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond) // past their admission, had they been admitted

	resp, err := http.Post(srv.URL+PathWriteMsgpack, "application/msgpack", bytes.NewReader(payload(t, cpu(10))))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	for i, conn := range slow {
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Millisecond)))
		n, err := conn.Read(make([]byte, 1))
		assert.Zero(t, n, "slow client %d was answered before the normal write", i)
		var ne net.Error
		assert.True(t, errors.As(err, &ne) && ne.Timeout(), "slow client %d still waits for its answer: %v", i, err)
	}
}

// TestBodiesShareTheirRoom: bodies are received within one budget's room.
// A body that needs more room while the rest is taken is refused, to
// retry, rather than waiting while it holds part of it.
func TestBodiesShareTheirRoom(t *testing.T) {
	const budget = 512 << 10
	f := newWriteFixture(t, nil, 0, 0, budget)
	f.arc.BodyReadTimeout = 10 * time.Second
	f.arc.inflight.init(budget)
	room := f.arc.inflight.room
	// A slow client sends 100 KiB of a 200 KiB body: it holds 200 KiB
	// (its room grows fourfold from 64 KiB, up to its length).
	conn, err := net.Dial("tcp", f.srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: arcstore\r\nContent-Length: %d\r\n\r\n", PathWriteMsgpack, 200<<10)
	require.NoError(t, err)
	_, err = conn.Write(make([]byte, 100<<10))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		if room.TryAcquire(budget - 199<<10) {
			room.Release(budget - 199<<10)
			return false
		}
		return true
	}, 5*time.Second, time.Millisecond, "the slow body holds its room")

	// 300 KiB does not fit beside it: refused once it outgrows its first
	// 64 KiB, with Retry-After.
	a := f.send(t, PathWriteMsgpack, make([]byte, 300<<10), nil)
	assert.Equal(t, http.StatusServiceUnavailable, a.status, "%v", a.body)
	assert.Contains(t, a.body["error"], "retry")
	assert.Equal(t, "1", a.header.Get("Retry-After"))
	// What fits is received and stored.
	a = f.send(t, PathWriteMsgpack, payload(t, cpu(10)), nil)
	assert.Equal(t, http.StatusNoContent, a.status, "%v", a.body)
	conn.Close()
	assert.Equal(t, map[string]int64{"default/cpu": 10}, f.rows(t))
}
