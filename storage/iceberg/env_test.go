package iceberg

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"
)

// row is a measurement row the tests write and read back.
type row struct {
	Time    time.Time
	Service string
	Value   float64
	Region  *string // a column later files add
}

// env is a data directory with a hive tree the tests write files into,
// as the store would, with microsecond time.
type env struct {
	t   testing.TB
	dir string
	now time.Time
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return &env{t: t, dir: filepath.Join(t.TempDir(), "data"), now: time.Date(2026, 11, 27, 12, 30, 0, 0, time.UTC)}
}

// hour is the start of the hour h hours before now.
func (e *env) hour(h int) time.Time {
	return e.now.Truncate(time.Hour).Add(-time.Duration(h) * time.Hour)
}

// rel is the hive partition of an hour: date=D/hour=H.
func rel(t time.Time) string {
	return fmt.Sprintf("date=%s/hour=%d", t.Format(time.DateOnly), t.Hour())
}

func (e *env) partitionDir(table string, hour time.Time) string {
	return filepath.Join(e.dir, "default", table, filepath.FromSlash(rel(hour)))
}

// rows makes n rows in an hour, values from first on.
func rows(hour time.Time, n int, first float64, service string) []row {
	out := make([]row, n)
	for i := range out {
		out[i] = row{Time: hour.Add(time.Duration(i) * time.Second).Add(123 * time.Microsecond), Service: service, Value: first + float64(i)}
	}
	return out
}

// write writes rows into a Parquet file of the hive tree, atomically.
func (e *env) write(table string, hour time.Time, name string, rs []row, withRegion bool) string {
	e.t.Helper()
	fields := []arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "service_name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}
	if withRegion {
		fields = append(fields, arrow.Field{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true})
	}
	return e.writeRecord(table, hour, name, arrow.NewSchema(fields, nil), rs)
}

// arrowSchema is write's schema with some columns changed: "time": "ns"
// makes time nanoseconds, "value": "string" makes value a string.
func arrowSchema(t *testing.T, change map[string]string) *arrow.Schema {
	t.Helper()
	unit := arrow.Microsecond
	if change["time"] == "ns" {
		unit = arrow.Nanosecond
	}
	var value arrow.DataType = arrow.PrimitiveTypes.Float64
	if change["value"] == "string" {
		value = arrow.BinaryTypes.String
	}
	return arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: unit, TimeZone: "UTC"}},
		{Name: "service_name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "value", Type: value, Nullable: true},
	}, nil)
}

func (e *env) writeRecord(table string, hour time.Time, name string, sc *arrow.Schema, rs []row) string {
	e.t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rs {
		for i, f := range sc.Fields() {
			fb := b.Field(i)
			switch f.Name {
			case "time":
				ts, err := arrow.TimestampFromTime(r.Time, f.Type.(*arrow.TimestampType).Unit)
				require.NoError(e.t, err)
				fb.(*array.TimestampBuilder).Append(ts)
			case "service_name":
				fb.(*array.StringBuilder).Append(r.Service)
			case "value":
				switch vb := fb.(type) {
				case *array.Float64Builder:
					vb.Append(r.Value)
				case *array.StringBuilder:
					vb.Append(fmt.Sprint(r.Value))
				}
			case "attributes":
				mb := fb.(*array.MapBuilder)
				mb.Append(true)
				mb.KeyBuilder().(*array.StringBuilder).Append("service")
				mb.ItemBuilder().(*array.StringBuilder).Append(r.Service)
			case "tags":
				lb := fb.(*array.ListBuilder)
				lb.Append(true)
				lb.ValueBuilder().(*array.StringBuilder).Append(r.Service)
			case "region":
				if r.Region == nil {
					fb.AppendNull()
				} else {
					fb.(*array.StringBuilder).Append(*r.Region)
				}
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	dir := e.partitionDir(table, hour)
	require.NoError(e.t, os.MkdirAll(dir, 0o755))
	tmp := filepath.Join(dir, "."+name+".tmp")
	f, err := os.Create(tmp)
	require.NoError(e.t, err)
	w, err := pqarrow.NewFileWriter(sc, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	require.NoError(e.t, err)
	require.NoError(e.t, w.Write(rec))
	require.NoError(e.t, w.Close())
	path := filepath.Join(dir, name)
	require.NoError(e.t, os.Rename(tmp, path))
	return path
}

// remove deletes files of a partition, as a compaction's swap would.
func (e *env) remove(table string, hour time.Time, names ...string) {
	e.t.Helper()
	for _, n := range names {
		require.NoError(e.t, os.Remove(filepath.Join(e.partitionDir(table, hour), n)))
	}
}

// committer starts a committer on the directory (not its loop).
func (e *env) committer(hook func(string) error, mod ...func(*Config)) *Committer {
	e.t.Helper()
	cfg := Config{DataDir: e.dir, Logger: slog.New(slog.DiscardHandler)}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := New(cfg)
	require.NoError(e.t, err)
	c.hook = hook
	c.now = func() time.Time { return e.now }
	e.t.Cleanup(c.Stop)
	return c
}

// load reads a table from a fresh catalog connection, as a reader would.
func (e *env) load(name string) *table.Table {
	e.t.Helper()
	c := e.committer(nil)
	require.NoError(e.t, c.connect(context.Background()))
	tbl, err := c.cat.LoadTable(context.Background(), table.Identifier{"default", name})
	require.NoError(e.t, err)
	return tbl
}

// scan reads every row of a table with iceberg-go's scan, sorted by value.
func scan(t *testing.T, tbl *table.Table, opts ...table.ScanOption) []row {
	t.Helper()
	sc, it, err := tbl.Scan(opts...).ToArrowRecords(context.Background())
	require.NoError(t, err)
	var out []row
	for rec, err := range it {
		require.NoError(t, err)
		out = append(out, rowsOf(t, sc, rec)...)
		rec.Release()
	}
	slices.SortFunc(out, func(a, b row) int {
		if a.Value != b.Value {
			if a.Value < b.Value {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Service, b.Service)
	})
	return out
}

func rowsOf(t *testing.T, sc *arrow.Schema, rec arrow.RecordBatch) []row {
	t.Helper()
	out := make([]row, rec.NumRows())
	for i, f := range sc.Fields() {
		col := rec.Column(i)
		for j := range out {
			if col.IsNull(j) {
				continue
			}
			switch f.Name {
			case "time":
				ts := col.(*array.Timestamp)
				out[j].Time = ts.Value(j).ToTime(f.Type.(*arrow.TimestampType).Unit).UTC()
			case "service_name":
				out[j].Service = col.(*array.String).Value(j)
			case "value":
				out[j].Value = col.(*array.Float64).Value(j)
			case "region":
				s := col.(*array.String).Value(j)
				out[j].Region = &s
			}
		}
	}
	return out
}

// livePaths are a table's data files.
func livePaths(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	live, err := liveFiles(context.Background(), tbl)
	require.NoError(t, err)
	out := make([]string, 0, len(live))
	for p := range live {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// hiveFiles lists a table's Parquet files in the hive tree, as
// date=D/hour=H/name.
func (e *env) hiveFiles(table string) []string {
	e.t.Helper()
	root := filepath.Join(e.dir, "default", table)
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			r, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(r))
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// suffixes cuts table paths to date=D/hour=H/name.
func suffixes(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		parts := strings.Split(p, "/")
		out[i] = strings.Join(parts[len(parts)-3:], "/")
	}
	slices.Sort(out)
	return out
}
