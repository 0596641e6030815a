package parquetfile_test

import (
	"bytes"
	"github.com/arc-otel/arc-otel/internal/benchcpu"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/compact"
	"github.com/arc-otel/arc-otel/storage/tableschema"
)

// rewriteEnv names the flushed files BenchmarkRewrite writes again (a
// glob), e.g. a sidecar's files from a load run.
const rewriteEnv = "ARC_REWRITE"

// rewriteEncoders are the variants of encoders BenchmarkRewrite compares.
var rewriteEncoders = []string{"new", "new-plain-ids"}

// BenchmarkRewrite writes each flushed file of $ARC_REWRITE again with
// each of rewriteEncoders, from its rows in records of batchRows rows as
// the flush gets them: real files (random ids, the harness's attributes)
// rather than otlparrowtest's. It reports cpu-ns/row and B/row as
// BenchmarkEncode does, and the bytes per row of each column that holds
// more than a hundredth of the file.
//
//	ARC_REWRITE='/tmp/run/arc/data/default/traces/*/*/*.parquet' \
//	  go test ./internal/parquetfile/ -run '^$' -bench Rewrite -benchmem -cpu 1
func BenchmarkRewrite(b *testing.B) {
	pattern := os.Getenv(rewriteEnv)
	if pattern == "" {
		b.Skip(rewriteEnv + " names the flushed files to rewrite")
	}
	paths, err := filepath.Glob(pattern)
	require.NoError(b, err)
	for _, path := range paths {
		t, recs, rows := flushedFile(b, path)
		for _, e := range encoders {
			if !slices.Contains(rewriteEncoders, e.name) {
				continue
			}
			b.Run(filepath.Base(path)+"/"+e.name, func(b *testing.B) {
				b.ReportAllocs()
				var out bytes.Buffer
				require.NoError(b, e.enc(&out, t, recs, rows))
				cpu := benchcpu.Process()
				for b.Loop() {
					var cw countWriter
					if err := e.enc(&cw, t, recs, rows); err != nil {
						b.Fatal(err)
					}
				}
				reportRows(b, int(rows), int64(out.Len()), benchcpu.Process()-cpu)
				reportColumns(b, out.Bytes(), rows)
			})
		}
		for _, r := range recs {
			r.Release()
		}
	}
}

// flushedFile reads a flushed file of the sidecar's tree
// (<table>/date=.../hour=.../*.parquet) as the flush had it: its table's
// schemas, its rows in records of batchRows rows.
func flushedFile(b *testing.B, path string) (benchTable, []arrow.RecordBatch, int64) {
	var whole []arrow.RecordBatch
	require.NoError(b, compact.ReadBatches(path, memory.DefaultAllocator, func(rec arrow.RecordBatch) error {
		rec.Retain()
		whole = append(whole, rec)
		return nil
	}))
	require.NotEmpty(b, whole)
	name := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(path))))
	t := benchTable{name: name, arrow: whole[0].Schema(), bloom: tableschema.BloomColumns(name)}
	switch name {
	case "traces":
		t.parquet = schema.Traces.Parquet
	case "logs":
		t.parquet = schema.Logs.Parquet
	case "metrics":
		t.parquet = schema.Metrics.Parquet
	default:
		fields := slices.Clone(t.arrow.Fields()) // time first, as the write API has it
		slices.SortStableFunc(fields, func(a, b arrow.Field) int {
			return boolRank(b.Name == tableschema.TimeColumn) - boolRank(a.Name == tableschema.TimeColumn)
		})
		ps, err := tableschema.Measurement(name, arrow.NewSchema(fields, nil))
		require.NoError(b, err)
		t.parquet = ps
	}
	var recs []arrow.RecordBatch
	var rows int64
	for _, rec := range whole {
		for at := int64(0); at < rec.NumRows(); at += batchRows {
			recs = append(recs, rec.NewSlice(at, min(at+batchRows, rec.NumRows())))
		}
		rows += rec.NumRows()
		rec.Release()
	}
	return t, recs, rows
}

// reportColumns reports the bytes per row of each top-level column
// (leaves summed) that holds more than a hundredth of the file.
func reportColumns(b *testing.B, file []byte, rows int64) {
	f, err := parquet.OpenFile(bytes.NewReader(file), int64(len(file)))
	require.NoError(b, err)
	sizes := map[string]int64{}
	for _, rg := range f.Metadata().RowGroups {
		for _, c := range rg.Columns {
			sizes[c.MetaData.PathInSchema[0]] += c.MetaData.TotalCompressedSize
		}
	}
	for col, n := range sizes {
		if n*100 > int64(len(file)) {
			b.ReportMetric(float64(n)/float64(rows), strings.ReplaceAll(col, "_", "-")+"-B/row")
		}
	}
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
