package receiver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/arc-otel/arc-otel/storage"
)

// newWriteFixture serves every write API as arcstore does.
func newWriteFixture(t *testing.T, tokens *Tokens, maxBody, maxDecoded, maxMemory int64) *msgpackFixture {
	t.Helper()
	dir := t.TempDir()
	store, err := storage.Open(storage.Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour})
	require.NoError(t, err)
	mux := http.NewServeMux()
	arc := &MsgpackHandler{Store: store, Log: quiet, Mem: memory.DefaultAllocator,
		MaxBodyBytes: maxBody, MaxDecodedBytes: maxDecoded, MaxDecodedMemory: maxMemory}
	HandleWrites(mux, arc, tokens)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &msgpackFixture{dir: dir, store: store, srv: srv, arc: arc}
}

type answer struct {
	status int
	body   map[string]string
	header http.Header
}

func (f *msgpackFixture) send(t *testing.T, path string, body []byte, header map[string]string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+path, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	a := answer{status: resp.StatusCode, header: resp.Header}
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &a.body), string(raw))
	}
	return a
}

var lpNow = time.Now().Add(-time.Minute).Truncate(time.Second)

func TestRowFormatWrites(t *testing.T) {
	f := newWriteFixture(t, nil, 0, 0, 0)
	us := lpNow.UnixMicro()
	rec := func(host string, v any) map[string]any {
		return map[string]any{"m": "cpu", "t": us, "fields": map[string]any{"usage": v}, "tags": map[string]any{"host": host}}
	}
	for name, body := range map[string]any{
		"one record":   rec("a", 1.5),
		"array":        []any{rec("b", 2.5), rec("c", 3)},
		"batch, mixed": map[string]any{"batch": []any{rec("d", 4.5), cpu(2)}},
	} {
		a := f.send(t, PathWriteMsgpack, payload(t, body), nil)
		require.Equal(t, http.StatusNoContent, a.status, "%s: %v", name, a.body)
	}
	// A bad record refuses its whole request: the good record before it
	// is not stored either.
	a := f.send(t, PathWriteMsgpack, payload(t, []any{rec("e", 1.5), rec("f", "text")}), nil)
	assert.Equal(t, http.StatusBadRequest, a.status)
	assert.Contains(t, a.body["error"], `element 1: measurement "cpu": column "usage" row 1: a string among float values`)
	assert.Equal(t, map[string]int64{"default/cpu": 4 + 2}, f.rows(t))
}

func TestLineProtocolEndpoints(t *testing.T) {
	tokens, err := LoadTokens("", "s3cret")
	require.NoError(t, err)
	f := newWriteFixture(t, tokens, 0, 0, 0)
	lines := func(unit time.Duration, n int) []byte {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "cpu,host=h%d usage=%d.5,cores=%di,ok=t,note=\"x y\" %d\n", i, i, i, lpNow.UnixNano()/int64(unit))
		}
		return []byte(b.String())
	}
	tests := []struct {
		name   string
		path   string
		body   []byte
		header map[string]string
	}{
		{"arc, database header", PathWriteLineProtocol, lines(time.Nanosecond, 2), map[string]string{"Authorization": "Bearer s3cret", HeaderDatabase: "arc"}},
		{"arc, gzip, precision", PathWriteLineProtocol + "?precision=ms", gzipped(t, lines(time.Millisecond, 2)), map[string]string{"Authorization": "Bearer s3cret", "Content-Encoding": "gzip"}},
		{"v1, db, seconds, p", PathWriteInfluxV1 + "?db=telegraf&precision=s&u=me&p=s3cret", lines(time.Second, 2), nil},
		{"v1, hours, token", PathWriteInfluxV1 + "?db=telegraf&precision=h", lines(time.Hour, 1), map[string]string{"Authorization": "Token s3cret"}},
		{"v1, minutes, basic auth", PathWriteInfluxV1 + "?db=telegraf&precision=m", lines(time.Minute, 1), map[string]string{"Authorization": "Basic " + basic("me", "s3cret")}},
		{"v1, u", PathWriteInfluxV1 + "?db=telegraf&precision=u", lines(time.Microsecond, 1), map[string]string{"Authorization": "Bearer s3cret"}},
		{"v2, bucket, token", PathWriteInfluxV2 + "?org=ignored&bucket=metrics&precision=us", lines(time.Microsecond, 2), map[string]string{"Authorization": "Token s3cret"}},
		{"v2, 1.x bucket, bearer, gzip", PathWriteInfluxV2 + "?bucket=metrics/autogen", gzipped(t, lines(time.Nanosecond, 2)), map[string]string{"Authorization": "Bearer s3cret"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := f.send(t, tt.path, tt.body, tt.header)
			assert.Equal(t, http.StatusNoContent, a.status, "%v", a.body)
		})
	}
	assert.Equal(t, map[string]int64{"arc/cpu": 2, "default/cpu": 2, "telegraf/cpu": 5, "metrics/cpu": 4}, f.rows(t))
}

func basic(user, pass string) string {
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(user, pass)
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")
}

func TestLineProtocolErrors(t *testing.T) {
	tokens, err := LoadTokens("", "s3cret")
	require.NoError(t, err)
	f := newWriteFixture(t, tokens, 4096, 64<<10, 0)
	auth := map[string]string{"Authorization": "Token s3cret"}
	arcAuth := map[string]string{"Authorization": "Bearer s3cret"}
	good := fmt.Sprintf("cpu v=1 %d\n", lpNow.UnixNano())
	tests := []struct {
		name   string
		path   string
		body   string
		header map[string]string
		status int
		want   map[string]string // the JSON body, as InfluxDB words it
	}{
		{"v2 hours are 1.x only", PathWriteInfluxV2 + "?bucket=b&precision=h", good, auth, http.StatusBadRequest,
			map[string]string{"code": "invalid", "message": `invalid precision "h": want ns, us, ms or s`}},
		{"v2 no token", PathWriteInfluxV2 + "?bucket=b", good, nil, http.StatusUnauthorized,
			map[string]string{"code": "unauthorized", "message": `missing or invalid token (send "Authorization: Token <token>" or "Bearer <token>")`}},
		{"v2 wrong token", PathWriteInfluxV2 + "?bucket=b", good, map[string]string{"Authorization": "Token nope"}, http.StatusUnauthorized, nil},
		{"v2 too large", PathWriteInfluxV2 + "?bucket=b", strings.Repeat(good, 200), auth, http.StatusRequestEntityTooLarge, nil},
		{"v1 bad precision", PathWriteInfluxV1 + "?db=d&precision=d", good, auth, http.StatusBadRequest,
			map[string]string{"error": `invalid precision "d": want ns, n, us, u, ms, s, m or h`}},
		{"v1 wrong password", PathWriteInfluxV1 + "?db=d&u=x&p=nope", good, nil, http.StatusUnauthorized, nil},
		{"v1 database not a folder", PathWriteInfluxV1 + "?db=a%0Ab", good, auth, http.StatusBadRequest,
			map[string]string{"error": `database: bad name: database name "a\nb" has a control character at byte 1`}},
		{"arc empty body", PathWriteLineProtocol, "", arcAuth, http.StatusBadRequest, map[string]string{"error": "bad payload: the body holds no line"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := f.send(t, tt.path, []byte(tt.body), tt.header)
			assert.Equal(t, tt.status, a.status, "%v", a.body)
			if tt.want != nil {
				assert.Equal(t, tt.want, a.body)
			}
			if strings.HasPrefix(tt.path, PathWriteInfluxV1+"?") {
				assert.Equal(t, a.body["error"], a.header.Get("X-Influxdb-Error"))
			}
		})
	}
	assert.Empty(t, f.rows(t), "a request refused whole stores nothing")
}

// TestLineProtocolPartialWrites: a body with bad lines stores its good
// ones, durably, then answers 400 "partial write" with the first bad
// line's number and reason and the count dropped, on every endpoint, in
// each dialect's error shape (issue 31 item 7: one bad line lost the
// whole batch, as Telegraf drops a batch answered 4xx).
func TestLineProtocolPartialWrites(t *testing.T) {
	f := newWriteFixture(t, nil, 0, 0, 0)
	metrics := NewMetrics()
	f.arc.Metrics = metrics
	ns := lpNow.UnixNano()
	body := fmt.Sprintf("cpu v=1i %d\ncpu v=\ncpu v=2.5 %d\n"+
		"apiserver_flowcontrol_priority_level_request_count_watermarks_bucket,le=0.1 v=3i %d\n"+
		"job:http_requests:rate5m v=4 %d\njava.lang:type=Memory,host=h v=5 %d\ndisk\\ io v=6 %d\ntempérature v=7 %d\n",
		ns, ns, ns, ns, ns, ns, ns)
	const reason = "line 2: unable to parse 'cpu v=': field value has unrecognized type"
	tests := []struct {
		path string
		want map[string]string
	}{
		{PathWriteLineProtocol, map[string]string{"error": "partial write: " + reason + " dropped=2"}},
		{PathWriteInfluxV1 + "?db=telegraf.autogen", map[string]string{"error": "partial write: " + reason + " dropped=2"}},
		{PathWriteInfluxV2 + "?bucket=metrics", map[string]string{"code": "invalid", "message": "partial write: " + reason + " dropped=2"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			a := f.send(t, tt.path, []byte(body), nil)
			assert.Equal(t, http.StatusBadRequest, a.status)
			assert.Equal(t, tt.want, a.body)
			if strings.HasPrefix(tt.path, PathWriteInfluxV1) {
				assert.Equal(t, tt.want["error"], a.header.Get("X-Influxdb-Error"))
			}
		})
	}
	for _, p := range []string{PathWriteLineProtocol, PathWriteInfluxV1, PathWriteInfluxV2} {
		assert.Equal(t, 2.0, testutil.ToFloat64(metrics.linesDropped.WithLabelValues(p)), p)
	}
	// Only bad lines: nothing to store, the same answer.
	a := f.send(t, PathWriteInfluxV1+"?db=telegraf.autogen", []byte("cpu v=\nmem\n"), nil)
	assert.Equal(t, http.StatusBadRequest, a.status)
	assert.Equal(t, "partial write: line 1: unable to parse 'cpu v=': field value has unrecognized type dropped=2", a.body["error"])
	want := map[string]int64{}
	for _, db := range []string{"default", "telegraf.autogen", "metrics"} {
		for _, m := range []string{"cpu", "apiserver_flowcontrol_priority_level_request_count_watermarks_bucket",
			"job%3Ahttp_requests%3Arate5m", "java.lang%3Atype%3DMemory", "disk%20io", "temp%C3%A9rature"} {
			want[db+"/"+m] = 1
		}
	}
	assert.Equal(t, want, f.rows(t), "the good lines of each request, the first v=1i of cpu among them")
}

// TestErrorHeaderIsReadable: a dropped line quoted with its control
// characters in X-Influxdb-Error made the answer one Go's HTTP client
// (Telegraf, InfluxDB's Go clients) refuses ("malformed MIME header
// line"): the client saw a broken connection and sent the batch again,
// whose good lines were stored again at every retry. The header escapes
// them; the JSON body has them as sent.
func TestErrorHeaderIsReadable(t *testing.T) {
	f := newWriteFixture(t, nil, 0, 0, 0)
	ns := lpNow.UnixNano()
	for i, bad := range []string{"cpu\x01 v=1", "cpu,host=\x7f v=1", "cpu\x1b[31m v=1"} {
		t.Run(fmt.Sprintf("%q", bad), func(t *testing.T) {
			body := fmt.Sprintf("cpu v=1 %d\n%s\n", ns, bad)
			a := f.send(t, PathWriteInfluxV1+"?db="+fmt.Sprint("h", i), []byte(body), nil)
			assert.Equal(t, http.StatusBadRequest, a.status)
			assert.Contains(t, a.body["error"], "partial write: line 2: unable to parse '"+bad+"'")
			h := a.header.Get("X-Influxdb-Error")
			assert.True(t, strings.HasPrefix(h, "partial write: line 2: unable to parse 'cpu"), h)
			assert.NotContains(t, h, bad)
		})
	}
	assert.Equal(t, map[string]int64{"h0/cpu": 1, "h1/cpu": 1, "h2/cpu": 1}, f.rows(t), "each good line once")
}

// TestLineProtocolTimeOutOfRangeDropsTheLine: a line whose time the
// tables refuse (before 1970, over a year ahead: a unit mix-up) is
// dropped as a partial write naming its line; the request's other lines
// are stored (it refused the whole request, naming a row instead).
func TestLineProtocolTimeOutOfRangeDropsTheLine(t *testing.T) {
	f := newWriteFixture(t, nil, 0, 0, 0)
	ns := lpNow.UnixNano()
	for _, tt := range []struct{ name, line, reason string }{
		{"far future", "cpu v=2 4102444800000000000", `line 2: timestamp "4102444800000000000" at precision ns: time outside the accepted range`},
		{"before 1970", "cpu v=2 -1000", `line 2: timestamp "-1000" at precision ns: time outside the accepted range`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := fmt.Sprintf("cpu v=1 %d\n%s\ncpu v=3 %d\n", ns, tt.line, ns+1000)
			a := f.send(t, PathWriteInfluxV1+"?db="+strings.ReplaceAll(tt.name, " ", "_"), []byte(body), nil)
			assert.Equal(t, http.StatusBadRequest, a.status)
			assert.Contains(t, a.body["error"], "partial write: "+tt.reason)
			assert.True(t, strings.HasSuffix(a.body["error"], " dropped=1"), a.body["error"])
		})
	}
	assert.Equal(t, map[string]int64{"far_future/cpu": 2, "before_1970/cpu": 2}, f.rows(t))
}

// TestLineProtocolLimitsDropLines: a line that no request could store
// costs that line, not the request (Telegraf's influxdb output drops a
// whole batch on a 413, and its influxdb_v2 output splits the batch down
// to that line and retries it for ever). A request over a limit only as a
// whole is still refused whole, for clients that split it.
func TestLineProtocolLimitsDropLines(t *testing.T) {
	f := newWriteFixture(t, nil, 0, 0, 0)
	f.arc.Limits = storage.Limits{MaxColumns: 3, MaxStringBytes: 4, MaxPartitionsPerRequest: 2}
	ns := lpNow.UnixNano()
	body := fmt.Sprintf("cpu s=\"abcd\" %d\ncpu s=\"abcde\" %d\ncpu,h=x v=1,w=2 %d\ncpu,h=y s=\"ok\" %d\n", ns, ns, ns, ns)
	a := f.send(t, PathWriteInfluxV1+"?db=telegraf", []byte(body), nil)
	assert.Equal(t, http.StatusBadRequest, a.status)
	assert.Equal(t, `partial write: line 2: field "s": a string of 5 bytes, the limit is 4 (-max-string-bytes) dropped=2`, a.body["error"])

	// Columns over the limit only together: refused whole, nothing stored.
	a = f.send(t, PathWriteInfluxV1+"?db=whole", []byte(fmt.Sprintf("mem a=1,b=2 %d\nmem c=3 %d\n", ns, ns)), nil)
	assert.Equal(t, http.StatusRequestEntityTooLarge, a.status)
	assert.Contains(t, a.body["error"], "-max-columns")
	assert.Equal(t, map[string]int64{"telegraf/cpu": 2}, f.rows(t))
}

// oneByteValues is a MessagePack body of n one-byte values: each widens to
// eight bytes decoded. The time column has one value, so the request is
// refused in the end (the "refused with 400" case).
func oneByteValues(t *testing.T, n int) []byte {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	require.NoError(t, e.EncodeMapLen(2))
	require.NoError(t, e.EncodeString("m"))
	require.NoError(t, e.EncodeString("cpu"))
	require.NoError(t, e.EncodeString("columns"))
	require.NoError(t, e.EncodeMapLen(2))
	require.NoError(t, e.EncodeString("v"))
	require.NoError(t, e.EncodeArrayLen(n))
	for range n {
		buf.WriteByte(1)
	}
	require.NoError(t, e.EncodeString("time"))
	require.NoError(t, e.Encode([]int64{lpNow.UnixMilli()}))
	return buf.Bytes()
}

// TestWriteMemoryIsBounded is the regression test of issue 15 item 7: a
// small gzip body of one-byte values used to be decoded into slices sized
// from its length prefixes (8 bytes a value, then copied), costing a
// multiple of its decompressed size before it was refused. Now the decoded
// columns are charged to -max-decoded-memory before they are allocated.
func TestWriteMemoryIsBounded(t *testing.T) {
	const n, budget = 8 << 20, 1 << 20
	body := gzipped(t, oneByteValues(t, n))
	f := newWriteFixture(t, nil, 0, 0, budget)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a := f.send(t, PathWriteMsgpack, body, nil)
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	assert.Equal(t, http.StatusRequestEntityTooLarge, a.status, "%v", a.body)
	assert.Contains(t, a.body["error"], "take more than 1048576 bytes")
	// The body is decoded as it decompresses, never held whole, and the
	// decoder allocates at most its budget. Before the fix this request
	// allocated 89 MB (11 times its decompressed size) and was refused
	// with 400 only after that.
	assert.Less(t, allocated, uint64(4*budget), "a %d-byte gzip body of %d one-byte values allocated %d bytes", len(body), n, allocated)
	t.Logf("a %d-byte gzip body (%d bytes decompressed) allocated %d bytes", len(body), n, allocated)
	assert.Empty(t, f.rows(t))
}
