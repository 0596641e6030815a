package receiver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/arcmsgpack"
	"github.com/arc-otel/arc-otel/internal/inflate"
)

// outcome is what decoding a body came to: the answer and the rows.
type outcome struct {
	status int
	msg    string
	rows   map[string]int
	values []string // every string value, in order
}

// decodeRequest decodes body as the MessagePack handler does; streamed
// hides its length, which makes every body stream. whole tells whether
// the body was decoded from memory.
func decodeRequest(t *testing.T, h *MsgpackHandler, body []byte, streamed bool) (out outcome, whole bool) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, PathWriteMsgpack, bytes.NewReader(body))
	b, err := h.receive(httptest.NewRecorder(), req)
	if err == nil {
		budget := arcmsgpack.NewBudget(h.MaxDecodedMemory)
		require.NoError(t, b.charge(budget))
		b.whole = b.whole && !streamed
		var ms []arcmsgpack.Measurement
		ms, err = decodeBody(b, budget)
		whole = b.kind == "gzip" && !b.streamed
		b.done()
		out.rows = map[string]int{}
		for _, m := range ms {
			out.rows[m.Name] += m.Rows()
			for _, c := range m.Columns {
				if c.Kind == arcmsgpack.KindString {
					out.values = append(out.values, c.Strings()...)
				}
			}
		}
	}
	var he *httpError
	if errors.As(err, &he) {
		out.status, out.msg = he.status, he.msg
	} else {
		require.NoError(t, err)
	}
	return out, whole
}

// hexRows is a measurement of n rows of random ids: about 2.2 times
// smaller gzipped, as the load test's traces.
func hexRows(name string, n int, r *rand.Rand) map[string]any {
	times, ids := make([]int64, n), make([]string, n)
	for i := range n {
		times[i], ids[i] = time.Now().UnixMilli()+int64(i), fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
	}
	return map[string]any{"m": name, "columns": map[string]any{"time": times, "id": ids}}
}

func TestSmallGzipBodiesDecodeWholeAsTheyStream(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	raw := payload(t, hexRows("spans", 1000, r))
	twoMembers := append(gzipped(t, raw[:len(raw)/3]), gzipped(t, raw[len(raw)/3:])...)
	// The least budget streaming decodes the body in: it fits the body
	// as sent and the columns, not them and the decompressed body
	// together.
	fits := int64(1000)
	for ; ; fits += 1000 {
		if out, _ := decodeRequest(t, &MsgpackHandler{MaxDecodedMemory: fits}, gzipped(t, raw), true); out.status == 0 {
			break
		}
	}
	require.Less(t, fits, int64(2*len(raw)+len(gzipped(t, raw))))
	require.Greater(t, fits, int64(len(raw)+inflate.Margin), "the decompressed body fits the budget by itself")
	lying := gzipped(t, raw)
	lying[len(lying)-1] ^= 0x01 // the size in the trailer
	corrupt := gzipped(t, raw)
	corrupt[len(corrupt)/2] ^= 0xff
	large := gzipped(t, payload(t, hexRows("spans", 60_000, r))) // past maxWholeGzip
	require.Greater(t, len(large), maxWholeGzip)
	cases := []struct {
		name      string
		body      []byte
		budget    int64 // MaxDecodedMemory
		maxDecode int64 // MaxDecodedBytes
		whole     bool  // decoded from memory
		status    int   // 0: decoded
	}{
		{name: "one member", body: gzipped(t, raw), whole: true},
		{name: "two members", body: twoMembers},
		{name: "trailer claims another size", body: lying, status: http.StatusBadRequest},
		{name: "corrupt", body: corrupt, status: http.StatusBadRequest},
		{name: "larger than whole bodies", body: large},
		{name: "columns fit only without the body beside them", body: gzipped(t, raw), budget: fits},
		{name: "columns do not fit at all", body: gzipped(t, raw), budget: fits - 1000, status: http.StatusRequestEntityTooLarge},
		{name: "decompresses past the limit", body: gzipped(t, raw), maxDecode: 20_000, status: http.StatusRequestEntityTooLarge},
		{name: "not MessagePack", body: gzipped(t, []byte("definitely not msgpack")), whole: true, status: http.StatusBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &MsgpackHandler{MaxDecodedMemory: c.budget, MaxDecodedBytes: c.maxDecode}
			got, whole := decodeRequest(t, h, c.body, false)
			want, _ := decodeRequest(t, h, c.body, true)
			assert.Equal(t, want, got, "whole and streamed decoding differ")
			assert.Equal(t, c.status, got.status, got.msg)
			if c.status == 0 {
				assert.Equal(t, c.whole, whole, "decoded from memory")
			}
		})
	}
}

func TestWholeBodiesDoNotShareMemory(t *testing.T) {
	// Decoded measurements must keep their values when the next request
	// reuses the pooled buffers their body was decoded from.
	r := rand.New(rand.NewPCG(3, 4))
	h := &MsgpackHandler{}
	first, whole := decodeRequest(t, h, gzipped(t, payload(t, hexRows("a", 500, r))), false)
	require.True(t, whole)
	kept := append([]string(nil), first.values...)
	for range 5 {
		_, whole = decodeRequest(t, h, gzipped(t, payload(t, hexRows("b", 500, r))), false)
		require.True(t, whole)
	}
	assert.Equal(t, kept, first.values)
}

func TestWholeBodyCutShort(t *testing.T) {
	body := gzipped(t, payload(t, cpu(100)))
	req := httptest.NewRequest(http.MethodPost, PathWriteMsgpack, io.LimitReader(bytes.NewReader(body), int64(len(body)/2)))
	req.ContentLength = int64(len(body))
	_, err := (&MsgpackHandler{}).receive(httptest.NewRecorder(), req)
	var he *httpError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusBadRequest, he.status)
	assert.Contains(t, he.msg, "read body")
}
