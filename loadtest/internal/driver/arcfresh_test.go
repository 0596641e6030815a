package driver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/arcmsgpack"
)

func TestFreshBodyMovesOnlyTheTimestamps(t *testing.T) {
	for _, shape := range []Shape{ShapeNew, ShapeCycled} {
		for _, s := range []Signal{ArcTraces, ArcLogs, ArcMetrics, ArcEvents} {
			t.Run(string(shape)+"/"+string(s), func(t *testing.T) { freshRoundTrip(t, shape, s, 300) })
		}
	}
	// Each size of MessagePack array header: fixarray, array16 (above), array32.
	for _, rows := range []int{10, 1 << 16} {
		t.Run(fmt.Sprintf("%s/rows=%d", ArcLogs, rows), func(t *testing.T) { freshRoundTrip(t, ShapeNew, ArcLogs, rows) })
	}
}

func freshRoundTrip(t *testing.T, shape Shape, s Signal, rows int) {
	t.Helper()
	made := time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC)
	raw, err := arcRaw(shape, s, rows, made, rand.New(rand.NewPCG(3, 4)))
	require.NoError(t, err)
	fb, err := newFreshBody(raw, rows, timeUnit(s), made)
	require.NoError(t, err)

	var buf bytes.Buffer
	_, err = fb.at(made.Add(90*time.Second), &buf, nil)
	require.NoError(t, err)
	got := decodeGzip(t, buf.Bytes())
	want, err := arcmsgpack.Decode(raw)
	require.NoError(t, err)
	require.Len(t, got, 1)
	for i := range want[0].Time {
		require.Equal(t, want[0].Time[i]+(90*time.Second).Microseconds(), got[0].Time[i], "row %d: moved by the time since the batch was made", i)
	}
	assert.Equal(t, want[0].Columns, got[0].Columns, "nothing else changes")
	orig, err := arcmsgpack.Decode(fb.raw)
	require.NoError(t, err)
	assert.Equal(t, want[0].Time, orig[0].Time, "the template itself is not touched")
}

func TestFreshBodyNeedsAFixedWidthTimeColumn(t *testing.T) {
	_, err := newFreshBody([]byte{0x81, 0xa1, 'm', 0xa1, 'x'}, 10, time.Nanosecond, time.Now())
	assert.ErrorContains(t, err, "no time column")
	raw, err := arcRaw(ShapeNew, ArcLogs, 10, time.Now(), rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	_, err = newFreshBody(raw, 11, time.Nanosecond, time.Now())
	assert.ErrorContains(t, err, "no time column", "the row count is part of what is matched")
}

// TestArcDriverFreshTimestamps: with Fresh, the same cycled batch reaches
// the server with new timestamps each time.
func TestArcDriverFreshTimestamps(t *testing.T) {
	var mu sync.Mutex
	firsts := map[int64]int{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ms := decodeGzip(t, body)
		mu.Lock()
		firsts[ms[0].Time[0]]++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hs.Close()
	for _, fresh := range []bool{false, true} {
		clear(firsts)
		d := &Arc{Plan: Plan{Signals: []Signal{ArcLogs}, Rate: 5_000, Duration: 100 * time.Millisecond, Workers: 1, Batch: 10, Endpoint: hs.URL},
			Recorder: NewRecorder(), Payloads: 1, Fresh: fresh}
		require.NoError(t, d.Run(context.Background()))
		sent := d.Recorder.Total().Requests
		require.Greater(t, sent, int64(1))
		if fresh {
			assert.Len(t, firsts, int(sent), "every send carries its own timestamps")
		} else {
			assert.Len(t, firsts, 1, "pre-generated batches repeat as they are")
		}
	}
}
