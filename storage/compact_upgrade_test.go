package storage

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/storagetest"
)

// spanIDColumns are the traces table's ids of one width.
var spanIDColumns = []string{"trace_id", "span_id", "parent_span_id"}

// rewriteAsEarlierBuild rewrites a flushed file in place as the builds
// before one-width ids did: its ids PLAIN, through parquet-go with its own
// zstd codec at its fastest level and its default page size (256 KiB),
// every other column with the file's own encoding.
func rewriteAsEarlierBuild(t *testing.T, path string, plain []string) {
	t.Helper()
	in, err := os.Open(path)
	require.NoError(t, err)
	defer in.Close()
	info, err := in.Stat()
	require.NoError(t, err)
	pf, err := parquet.OpenFile(in, info.Size())
	require.NoError(t, err)
	var encs []encoding.Encoding
	for _, col := range pf.Schema().Columns() {
		leaf, _ := pf.Schema().Lookup(col...)
		enc := leaf.Node.Encoding()
		for _, p := range plain {
			if len(col) == 1 && col[0] == p {
				enc = &parquet.Plain
			}
		}
		encs = append(encs, enc)
	}
	tmp := path + ".old"
	out, err := os.Create(tmp)
	require.NoError(t, err)
	w := parquet.NewWriter(out, schema.ParquetLayout(pf.Schema(), &zstd.Codec{Level: zstd.SpeedFastest}, encs), parquet.DataPageStatistics(true))
	for _, rg := range pf.RowGroups() {
		rows := rg.Rows()
		_, err := parquet.CopyRows(w, rows)
		rows.Close()
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	require.NoError(t, out.Close())
	require.NoError(t, os.Rename(tmp, path))
}

// bytesPerRow is the files' bytes over their rows.
func bytesPerRow(t *testing.T, paths ...string) float64 {
	t.Helper()
	var size, rows int64
	for _, p := range paths {
		_, n, r, err := readSchema(p)
		require.NoError(t, err)
		size, rows = size+n, rows+r
	}
	require.Positive(t, rows)
	return float64(size) / float64(rows)
}

// flushRandomSpanFiles opens a store (compaction sorting or not) and
// flushes files of n spans with random ids each into one closed hour, one
// after the other in time (sorted by time, a trace's spans stay together),
// the rng seeded with seed; it returns the store, the hour's folder and
// its files.
func flushRandomSpanFiles(t *testing.T, sort bool, seed uint64, files, n int) (*Store, string, []string) {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour, CompactSort: sort})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	traces, err := LookupTable(schema.TableTraces)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(seed, seed+1))
	for i := range files {
		spans := randomSpans(t, rng, t0.Add(-30*time.Minute+time.Duration(i*n)*time.Millisecond), n)
		require.NoError(t, s.Append(context.Background(), NoDedup, "default", traces, storagetest.IPC(t, spans), spans))
		spans.Release()
		require.NoError(t, s.Flush())
	}
	hour := filepath.Join(dir, "default", "traces", closedHour)
	flushed := parquetFilesIn(t, hour)
	require.Len(t, flushed, files)
	return s, hour, flushed
}

// TestCompactAfterUpgradeTakesTheCurrentLayout: an hour begun by an
// earlier build (its first file's ids PLAIN, parquet-go's codec and
// pages) and finished by this one compacts in this build's layout, not
// the first file's: ids DELTA_LENGTH_BYTE_ARRAY, no more bytes per row
// than this build's flushed files, every span once (DuckDB counts them
// and their distinct ids).
func TestCompactAfterUpgradeTakesTheCurrentLayout(t *testing.T) {
	for _, tt := range []struct {
		name string
		sort bool
	}{
		{"arrival order", false},
		{"sorted", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const n, files = 20_000, 3
			s, hour, flushed := flushRandomSpanFiles(t, tt.sort, 3, files, n)
			rewriteAsEarlierBuild(t, flushed[0], spanIDColumns)
			old, current := dataEncodings(t, flushed[0]), dataEncodings(t, flushed[1])
			for _, col := range spanIDColumns {
				require.Equal(t, []string{"PLAIN"}, old[col], "the earlier build's %s", col)
				require.Equal(t, []string{"DELTA_LENGTH_BYTE_ARRAY"}, current[col], "this build's %s", col)
			}
			oldBytes, flushedBytes := bytesPerRow(t, flushed[0]), bytesPerRow(t, flushed[1:]...)

			_, err := s.Compact(context.Background(), 0)
			require.NoError(t, err)
			compacted := parquetFilesIn(t, hour)
			require.Len(t, compacted, 1)
			got := dataEncodings(t, compacted[0])
			for _, col := range spanIDColumns {
				assert.Equal(t, []string{"DELTA_LENGTH_BYTE_ARRAY"}, got[col], "compacted %s", col)
			}
			compactedBytes := bytesPerRow(t, compacted[0])
			t.Logf("bytes per span: earlier build's file %.2f, this build's flushed %.2f, compacted %.2f",
				oldBytes, flushedBytes, compactedBytes)
			assert.LessOrEqual(t, compactedBytes, flushedBytes, "compacted bytes per span")
			assertSpansOnce(t, compacted[0], files*n)
		})
	}
}

// assertSpansOnce has DuckDB count a traces file's rows and distinct span
// ids.
func assertSpansOnce(t *testing.T, path string, want int) {
	t.Helper()
	duckdb, err := exec.LookPath("duckdb")
	if err != nil {
		t.Skip("duckdb CLI not installed (make tools installs it)")
	}
	q := `SELECT count(*) AS n, count(DISTINCT span_id) AS spans, count(DISTINCT trace_id) AS traces FROM '` + path + `'`
	out, err := exec.Command(duckdb, "-json", "-c", q).CombinedOutput()
	require.NoError(t, err, string(out))
	var got []map[string]int
	require.NoError(t, json.Unmarshal(out, &got), string(out))
	require.Len(t, got, 1)
	assert.Equal(t, want, got[0]["n"], "rows")
	assert.Equal(t, want, got[0]["spans"], "distinct span ids")
	assert.Equal(t, want/4, got[0]["traces"], "distinct trace ids (four spans to a trace)")
}
