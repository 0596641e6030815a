package receiver

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/wal"
)

type msgpackFixture struct {
	dir   string
	store *storage.Store
	srv   *httptest.Server
	arc   *MsgpackHandler // set by newWriteFixture
}

func newMsgpackFixture(t *testing.T, tokens *Tokens, maxBody, maxDecoded int64, opts ...func(*MsgpackHandler)) *msgpackFixture {
	t.Helper()
	dir := t.TempDir()
	store, err := storage.Open(storage.Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour})
	require.NoError(t, err)
	h := &MsgpackHandler{Store: store, Log: quiet, Mem: memory.DefaultAllocator, MaxBodyBytes: maxBody, MaxDecodedBytes: maxDecoded}
	for _, o := range opts {
		o(h)
	}
	mux := http.NewServeMux()
	mux.Handle("POST "+PathWriteMsgpack, tokens.RequireHTTP(h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &msgpackFixture{dir: dir, store: store, srv: srv}
}

// rows closes the store (flushing everything) and counts the Parquet rows
// per database/measurement.
func (f *msgpackFixture) rows(t *testing.T) map[string]int64 {
	t.Helper()
	require.NoError(t, f.store.Close())
	out := map[string]int64{}
	_ = filepath.WalkDir(f.dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".parquet") {
			return err
		}
		rel, _ := filepath.Rel(f.dir, path)
		parts := strings.Split(rel, string(filepath.Separator))
		file, err := os.Open(path)
		require.NoError(t, err)
		defer file.Close()
		info, _ := file.Stat()
		pf, err := parquet.OpenFile(file, info.Size())
		require.NoError(t, err)
		out[parts[0]+"/"+parts[1]] += pf.NumRows()
		return nil
	})
	return out
}

func (f *msgpackFixture) post(t *testing.T, body []byte, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+PathWriteMsgpack, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/msgpack")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var msg struct{ Error string }
	_ = json.NewDecoder(resp.Body).Decode(&msg)
	return resp.StatusCode, msg.Error
}

func payload(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	require.NoError(t, err)
	return b
}

func gzipped(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func zstded(t testing.TB, b []byte) []byte {
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	defer enc.Close()
	return enc.EncodeAll(b, nil)
}

func cpu(rows int) map[string]any {
	now := time.Now().UnixMilli()
	times, hosts, vals := make([]int64, rows), make([]string, rows), make([]float64, rows)
	for i := range rows {
		times[i], hosts[i], vals[i] = now+int64(i), "node-1", float64(i)
	}
	return map[string]any{"m": "cpu", "columns": map[string]any{"time": times, "host": hosts, "value": vals}}
}

func TestMsgpackWriteStoresDurably(t *testing.T) {
	f := newMsgpackFixture(t, nil, 0, 0)
	raw := payload(t, cpu(100))
	for _, tt := range []struct {
		name string
		body []byte
	}{{"plain", raw}, {"gzip", gzipped(t, raw)}, {"zstd", zstded(t, raw)}} {
		code, msg := f.post(t, tt.body, nil)
		require.Equal(t, http.StatusNoContent, code, "%s: %s", tt.name, msg)
	}
	batch := payload(t, map[string]any{"batch": []any{cpu(10), map[string]any{"m": "mem", "columns": map[string]any{"time": []int64{time.Now().Unix()}, "used": []int64{5}}}}})
	code, msg := f.post(t, batch, map[string]string{HeaderDatabase: "prod"})
	require.Equal(t, http.StatusNoContent, code, msg)

	assert.Equal(t, map[string]int64{"default/cpu": 300, "prod/cpu": 10, "prod/mem": 1}, f.rows(t),
		"the same payload three times is three writes")
}

func TestMsgpackWriteRejects(t *testing.T) {
	f := newMsgpackFixture(t, nil, 4096, 64<<10)
	// A body decoded as it decompresses: a bomb that is not MessagePack is
	// refused at its first byte, one that is at the decompression limit.
	bomb := gzipped(t, payload(t, map[string]any{"m": "cpu", "columns": map[string]any{"time": make([]int, 1<<20)}}))
	tests := []struct {
		name   string
		body   []byte
		header map[string]string
		status int
		msg    string
	}{
		{"garbage", []byte("not msgpack at all"), nil, http.StatusBadRequest, "body must be a map"},
		{"truncated", payload(t, cpu(10))[:50], nil, http.StatusBadRequest, "truncated"},
		{"mismatched column lengths", payload(t, map[string]any{"m": "cpu", "columns": map[string]any{"time": []int64{1700000000000, 1700000000001}, "v": []int{1}}}),
			nil, http.StatusBadRequest, `column "v" has 1 values`},
		{"mixed types", payload(t, map[string]any{"m": "cpu", "columns": map[string]any{"time": []int64{1700000000000, 1700000000001}, "v": []any{1, true}}}),
			nil, http.StatusBadRequest, `column "v" row 1`},
		{"a control character in the measurement", payload(t, map[string]any{"m": "a\nb", "columns": map[string]any{"time": []int64{1700000000000}}}),
			nil, http.StatusBadRequest, `measurement name "a\nb" has a control character`},
		{"a database name too long for a folder", payload(t, cpu(1)), map[string]string{HeaderDatabase: strings.Repeat("é", 50)}, http.StatusBadRequest, "x-arc-database header"},
		{"time in the far future", payload(t, map[string]any{"m": "cpu", "columns": map[string]any{"time": []int64{4102444800000000000}}}),
			nil, http.StatusBadRequest, "time outside the accepted range"},
		{"oversized body", payload(t, cpu(1000)), nil, http.StatusRequestEntityTooLarge, "over the limit"},
		{"decompression bomb", bomb, nil, http.StatusRequestEntityTooLarge, "decompresses to more than"},
		{"garbage decompression bomb", gzipped(t, bytes.Repeat([]byte{0}, 1<<20)), nil, http.StatusBadRequest, "body must be a map"},
		{"corrupt gzip", append([]byte{0x1f, 0x8b}, bytes.Repeat([]byte{1}, 40)...), nil, http.StatusBadRequest, "gzip body"},
		// One bad measurement rejects the request, good ones included.
		{"bad measurement among good ones", payload(t, []any{cpu(5), map[string]any{"m": strings.Repeat("x", 256), "columns": map[string]any{"time": []int64{1700000000000}}}}),
			nil, http.StatusBadRequest, `more than 255`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, msg := f.post(t, tt.body, tt.header)
			assert.Equal(t, tt.status, status)
			assert.Contains(t, msg, tt.msg)
		})
	}
	assert.Empty(t, f.rows(t), "nothing of a rejected request is stored")
}

// TestMsgpackNamesBecomeFolders: the MessagePack API takes every name the
// line-protocol endpoints take (the names Arc takes are among them, and
// keep their folders), each stored under its folder (storage.
// MeasurementFolder): a name that spells a path stays one folder inside its
// database, and the OTLP tables keep theirs.
func TestMsgpackNamesBecomeFolders(t *testing.T) {
	f := newMsgpackFixture(t, nil, 0, 0)
	for _, tt := range []struct {
		database, measurement string
	}{
		{"", "../../etc"}, {"", "traces"}, {"", "java.lang:type=Memory"}, {"", "température"},
		{"/tmp", "cpu"}, {"telegraf.autogen", "disk io"},
	} {
		body := payload(t, map[string]any{"m": tt.measurement, "columns": map[string]any{"time": []int64{1700000000000}}})
		status, msg := f.post(t, body, map[string]string{HeaderDatabase: tt.database})
		assert.Equal(t, http.StatusNoContent, status, "%+v: %s", tt, msg)
	}
	assert.Equal(t, map[string]int64{"default/%2E.%2F..%2Fetc": 1, "default/%74races": 1, "default/java.lang%3Atype%3DMemory": 1,
		"default/temp%C3%A9rature": 1, "%2Ftmp/cpu": 1, "telegraf.autogen/disk%20io": 1}, f.rows(t))
}

func TestMsgpackWriteNeedsToken(t *testing.T) {
	tokens, err := LoadTokens("", "s3cret")
	require.NoError(t, err)
	f := newMsgpackFixture(t, tokens, 0, 0)
	status, _ := f.post(t, payload(t, cpu(3)), nil)
	assert.Equal(t, http.StatusUnauthorized, status)
	status, msg := f.post(t, payload(t, cpu(3)), map[string]string{"Authorization": "Bearer s3cret"})
	assert.Equal(t, http.StatusNoContent, status, msg)
	assert.Equal(t, map[string]int64{"default/cpu": 3}, f.rows(t))
}

func TestMsgpackBackpressureIsRetryable(t *testing.T) {
	dir := t.TempDir()
	// BufferWait < 0 (-buffer-wait 0): a full buffer refuses at once
	// instead of waiting for the flush it starts.
	store, err := storage.Open(storage.Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour, MaxBufferBytes: 8 << 10, BufferWait: -1})
	require.NoError(t, err)
	defer store.Close()
	srv := httptest.NewServer(&MsgpackHandler{Store: store, Log: quiet, Mem: memory.DefaultAllocator})
	defer srv.Close()
	// Each request fits the buffer alone; they fill it together (no flush
	// runs within the hour), so one of the first fifty is refused for now.
	for range 50 {
		resp, err := http.Post(srv.URL, "application/msgpack", bytes.NewReader(payload(t, cpu(10))))
		require.NoError(t, err)
		resp.Body.Close()
		if resp.StatusCode == http.StatusNoContent {
			continue
		}
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		assert.Equal(t, "1", resp.Header.Get("Retry-After"))
		return
	}
	t.Fatal("fifty requests never filled an 8 KiB buffer")
}

// TestMsgpackFullBufferWaitsForAFlush: with the default -buffer-wait the
// same fifty requests are all stored: each that finds the buffer full
// waits for the flush it starts instead of sending its client away.
func TestMsgpackFullBufferWaitsForAFlush(t *testing.T) {
	dir := t.TempDir()
	store, err := storage.Open(storage.Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour, MaxBufferBytes: 8 << 10})
	require.NoError(t, err)
	srv := httptest.NewServer(&MsgpackHandler{Store: store, Log: quiet, Mem: memory.DefaultAllocator})
	defer srv.Close()
	for i := range 50 {
		resp, err := http.Post(srv.URL, "application/msgpack", bytes.NewReader(payload(t, cpu(10))))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode, "request %d", i)
	}
	f := &msgpackFixture{dir: dir, store: store}
	assert.Equal(t, map[string]int64{"default/cpu": 500}, f.rows(t))
}

// TestMsgpackLargerThanTheBufferIsRefusedForGood: a request that can never
// fit the buffer is 413, not 429 on every retry for ever.
func TestMsgpackLargerThanTheBufferIsRefusedForGood(t *testing.T) {
	dir := t.TempDir()
	store, err := storage.Open(storage.Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour, MaxBufferBytes: 1 << 10})
	require.NoError(t, err)
	defer store.Close()
	srv := httptest.NewServer(&MsgpackHandler{Store: store, Log: quiet, Mem: memory.DefaultAllocator})
	defer srv.Close()
	for range 2 { // the same answer on a retry
		resp, err := http.Post(srv.URL, "application/msgpack", bytes.NewReader(payload(t, cpu(1000))))
		require.NoError(t, err)
		var msg struct{ Error string }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&msg))
		resp.Body.Close()
		assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
		assert.Empty(t, resp.Header.Get("Retry-After"))
		assert.Contains(t, msg.Error, "-max-buffer-bytes")
	}
}

// TestMsgpackLimits: requests that could be acknowledged but never flushed
// within the memory bound (16 000 columns in a small body, a row per hour
// for 1 000 hours, a huge string) are refused whole, naming the limit, and
// names with control characters are refused naming the column.
func TestMsgpackLimits(t *testing.T) {
	now := time.Now().UnixMilli()
	wide := map[string]any{"time": []int64{now}}
	for i := range 16000 {
		wide[fmt.Sprintf("c%d", i)] = []int64{1}
	}
	hours := make([]int64, 1000)
	for i := range hours {
		hours[i] = now - int64(i)*time.Hour.Milliseconds()
	}
	collision := "a\x00utf8\x00true\x00b" // hashed as columns a and b once
	for _, tt := range []struct {
		name   string
		body   map[string]any
		status int
		msg    string
	}{
		{"16 000 columns", map[string]any{"m": "wide", "columns": wide}, http.StatusRequestEntityTooLarge, "16001 columns, the limit is 1024 (-max-columns)"},
		{"1 000 hours", map[string]any{"m": "backfill", "columns": map[string]any{"time": hours, "v": make([]int64, len(hours))}},
			http.StatusRequestEntityTooLarge, "more than 256 partitions"},
		{"a 2 MiB string", map[string]any{"m": "logs_m", "columns": map[string]any{"time": []int64{now}, "msg": []string{strings.Repeat("x", 2<<20)}}},
			http.StatusRequestEntityTooLarge, `column "msg" row 0: a string of 2097152 bytes, the limit is 1048576 (-max-string-bytes)`},
		{"NUL in a column name", map[string]any{"m": "cpu", "columns": map[string]any{"time": []int64{now}, "us\x00er": []int64{1}}},
			http.StatusBadRequest, `bad column name "us\x00er": control character U+0000`},
		{"newline in a column name", map[string]any{"m": "cpu", "columns": map[string]any{"time": []int64{now}, "a\nb": []int64{1}}},
			http.StatusBadRequest, `bad column name "a\nb"`},
		{"a crafted fingerprint collision", map[string]any{"m": "cpu", "columns": map[string]any{"time": []int64{now}, collision: []string{"x"}}},
			http.StatusBadRequest, "control character"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newMsgpackFixture(t, nil, 0, 0)
			raw := payload(t, tt.body)
			status, msg := f.post(t, raw, nil)
			assert.Equal(t, tt.status, status, msg)
			assert.Contains(t, msg, tt.msg)
			// A normal request to the same measurement is not disturbed.
			code, msg := f.post(t, payload(t, map[string]any{"m": "cpu", "columns": map[string]any{"time": []int64{now}, "a": []string{"x"}, "b": []string{"y"}}}), nil)
			assert.Equal(t, http.StatusNoContent, code, msg)
			assert.Equal(t, map[string]int64{"default/cpu": 1}, f.rows(t), "nothing of the refused request is stored")
		})
	}
}

// TestMsgpackLimitsAreConfigurable: the handler's Limits replace the
// defaults, and a request at a limit is accepted.
func TestMsgpackLimitsAreConfigurable(t *testing.T) {
	f := newMsgpackFixture(t, nil, 0, 0, func(h *MsgpackHandler) {
		h.Limits = storage.Limits{MaxColumns: 3, MaxStringBytes: 4, MaxPartitionsPerRequest: 2}
	})
	now := time.Now().Truncate(time.Hour)
	at := func(h int) int64 { return now.Add(-time.Duration(h) * time.Hour).UnixMilli() }
	for _, tt := range []struct {
		name   string
		cols   map[string]any
		status int
	}{
		{"at every limit", map[string]any{"time": []int64{at(0), at(1)}, "a": []string{"abcd", ""}, "b": []int64{1, 2}}, http.StatusNoContent},
		{"a column too many", map[string]any{"time": []int64{at(0)}, "a": []int64{1}, "b": []int64{1}, "c": []int64{1}}, http.StatusRequestEntityTooLarge},
		{"a byte too long", map[string]any{"time": []int64{at(0)}, "a": []string{"abcde"}}, http.StatusRequestEntityTooLarge},
		{"an hour too many", map[string]any{"time": []int64{at(0), at(1), at(2)}}, http.StatusRequestEntityTooLarge},
	} {
		status, msg := f.post(t, payload(t, map[string]any{"m": "cpu", "columns": tt.cols}), nil)
		assert.Equal(t, tt.status, status, "%s: %s", tt.name, msg)
	}
	assert.Equal(t, map[string]int64{"default/cpu": 2}, f.rows(t))
}

// TestConcurrentWritesReachTheWALIntact: the IPC stream buffers are reused
// from one request to the next, so one returned before the WAL was done
// with it would put another request's rows into a record, or fail its
// checksum. Concurrent clients write requests of their own rows; every
// WAL record must hold exactly one request, each request once.
func TestConcurrentWritesReachTheWALIntact(t *testing.T) {
	const clients, requests = 8, 20
	f := newMsgpackFixture(t, nil, 0, 0)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for r := range requests {
				m := cpu(50 + r)
				hosts := m["columns"].(map[string]any)["host"].([]string)
				for i := range hosts {
					hosts[i] = fmt.Sprintf("client-%02d-request-%02d", c, r)
				}
				code, msg := f.post(t, gzipped(t, payload(t, m)), nil)
				assert.Equal(t, http.StatusNoContent, code, msg)
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	segments, err := filepath.Glob(filepath.Join(f.dir, "_arcstore", "wal", "*"+wal.SegmentExt))
	require.NoError(t, err)
	require.NotEmpty(t, segments)
	for _, path := range segments {
		seq, ok := wal.SegmentSeq(filepath.Base(path))
		require.True(t, ok)
		require.NoError(t, wal.ReadSegment(storage.OSFS{}, filepath.Dir(path), seq, func(_ int64, p []byte) error {
			var in []string
			for c := range clients {
				for r := range requests {
					if host := fmt.Sprintf("client-%02d-request-%02d", c, r); bytes.Contains(p, []byte(host)) {
						in = append(in, host)
					}
				}
			}
			if assert.Len(t, in, 1, "one request per record") {
				seen[in[0]]++
			}
			return nil
		}), "every record reads back with its checksum")
	}
	assert.Len(t, seen, clients*requests)
	for host, n := range seen {
		assert.Equal(t, 1, n, host)
	}
	assert.Equal(t, map[string]int64{"default/cpu": int64(clients * (50*requests + requests*(requests-1)/2))}, f.rows(t))
}
