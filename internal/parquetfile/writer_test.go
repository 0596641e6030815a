package parquetfile

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/arc-otel/arc-otel/internal/schema"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type item struct {
	Name  string            `parquet:"name"`
	Score *float64          `parquet:"score,optional"`
	Tags  map[string]string `parquet:"tags"`
}

type row struct {
	Time  int64             `parquet:"time,timestamp(microsecond)"`
	ID    string            `parquet:"id,dict"`
	Code  *int64            `parquet:"code,optional"`
	OK    bool              `parquet:"ok"`
	Attrs map[string]string `parquet:"attrs"`
	Nums  []int64           `parquet:"nums,list"`
	Items []item            `parquet:"items,list"`
}

var testArrow = arrow.NewSchema([]arrow.Field{
	{Name: "time", Type: schema.TimestampType},
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "code", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "attrs", Type: stringMap()},
	{Name: "nums", Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int64)},
	{Name: "items", Type: arrow.ListOfNonNullable(arrow.StructOf(
		arrow.Field{Name: "name", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		arrow.Field{Name: "tags", Type: stringMap()},
	))},
}, nil)

func stringMap() *arrow.MapType {
	m := arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)
	m.SetItemNullable(false)
	return m
}

func ptr[T any](v T) *T { return &v }

var testRows = []row{
	{Time: 1, ID: "a", Code: ptr[int64](200), OK: true, Attrs: map[string]string{"k": "v", "x": "y"}, Nums: []int64{1, 2, 3},
		Items: []item{{Name: "i1", Score: ptr(1.5), Tags: map[string]string{"t": "1"}}, {Name: "i2", Tags: map[string]string{}}}},
	{Time: 2, ID: "", Attrs: map[string]string{}, Nums: []int64{}, Items: []item{}},
	{Time: 3, ID: "ünïcode", Code: ptr[int64](-1), Attrs: map[string]string{"only": ""}, Nums: []int64{7},
		Items: []item{{Name: "", Score: ptr(0.0), Tags: map[string]string{"a": "b", "c": "d"}}}},
}

// recordOf builds the Arrow record of rows through Arrow's JSON reader, an
// implementation independent of the writer under test.
func recordOf(t *testing.T, rows []row) arrow.RecordBatch {
	var buf bytes.Buffer
	for _, r := range rows {
		m := map[string]any{"time": r.Time, "id": r.ID, "code": r.Code, "ok": r.OK, "nums": r.Nums,
			"attrs": kvs(r.Attrs)}
		var items []any
		for _, it := range r.Items {
			items = append(items, map[string]any{"name": it.Name, "score": it.Score, "tags": kvs(it.Tags)})
		}
		if items == nil {
			items = []any{}
		}
		m["items"] = items
		b, err := json.Marshal(m)
		require.NoError(t, err)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, testArrow, strings.NewReader("["+strings.ReplaceAll(strings.TrimSpace(buf.String()), "\n", ",")+"]"))
	require.NoError(t, err)
	return rec
}

func kvs(m map[string]string) []any {
	out := []any{}
	for k, v := range m {
		out = append(out, map[string]any{"key": k, "value": v})
	}
	return out
}

func writeFile(t *testing.T, rec arrow.RecordBatch, rows []int32, opts Options) []byte {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, parquet.SchemaOf(row{}), testArrow, opts)
	require.NoError(t, err)
	require.NoError(t, w.Write(rec, rows))
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func readRows(t *testing.T, data []byte) []row {
	rows, err := parquet.Read[row](bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	return rows
}

func TestWriteRoundTrip(t *testing.T) {
	rec := recordOf(t, testRows)
	defer rec.Release()
	tests := []struct {
		name string
		rows []int32
		opts Options
		want []row
	}{
		{"all rows zstd", nil, Options{}, testRows},
		{"selected rows in given order", []int32{2, 0}, Options{}, []row{testRows[2], testRows[0]}},
		{"one row per row group snappy", nil, Options{RowGroupRows: 1, Compression: CompressionSnappy}, testRows},
		{"uncompressed with bloom filter", nil, Options{Compression: CompressionNone, BloomColumns: []string{"id"}}, testRows},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readRows(t, writeFile(t, rec, tt.rows, tt.opts))
			require.Len(t, got, len(tt.want))
			for i := range tt.want {
				assertRowEqual(t, tt.want[i], got[i])
			}
		})
	}
}

// assertRowEqual treats nil and empty maps and slices alike: Parquet does not
// distinguish them.
func assertRowEqual(t *testing.T, want, got row) {
	t.Helper()
	norm := func(r row) row {
		if len(r.Nums) == 0 {
			r.Nums = nil
		}
		if len(r.Items) == 0 {
			r.Items = nil
		}
		if len(r.Attrs) == 0 {
			r.Attrs = nil
		}
		for i := range r.Items {
			if len(r.Items[i].Tags) == 0 {
				r.Items[i].Tags = nil
			}
		}
		return r
	}
	assert.True(t, reflect.DeepEqual(norm(want), norm(got)), "want %+v\n got %+v", want, got)
}

func TestRowGroupsAreCut(t *testing.T) {
	rec := recordOf(t, testRows)
	defer rec.Release()
	data := writeFile(t, rec, nil, Options{RowGroupRows: 2})
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	var sizes []int64
	for _, rg := range f.RowGroups() {
		sizes = append(sizes, rg.NumRows())
	}
	assert.Equal(t, []int64{2, 1}, sizes)
}

func TestCheckRejectsMismatchedSchema(t *testing.T) {
	other := arrow.NewSchema([]arrow.Field{{Name: "time", Type: arrow.BinaryTypes.String}}, nil)
	err := Check(parquet.SchemaOf(row{}), other)
	assert.ErrorContains(t, err, `column "time"`)
}

func TestUnknownCompression(t *testing.T) {
	_, err := NewWriter(&bytes.Buffer{}, parquet.SchemaOf(row{}), testArrow, Options{Compression: "lzma"})
	assert.ErrorIs(t, err, ErrUnknownCompression)
}

// TestDuckDBReadsNestedColumns checks the levels against an independent
// reader: DuckDB's own Parquet implementation.
func TestDuckDBReadsNestedColumns(t *testing.T) {
	duckdb, err := exec.LookPath("duckdb")
	if err != nil {
		t.Skip("duckdb CLI not installed (make tools installs it)")
	}
	rec := recordOf(t, testRows)
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "t.parquet")
	require.NoError(t, os.WriteFile(path, writeFile(t, rec, nil, Options{}), 0o600))
	q := `SELECT id, code, attrs['k'] AS k, len(nums) AS n, items[1].name AS first, items[1].tags['t'] AS t, typeof(time) AS tt FROM '` + path + `' ORDER BY time`
	out, err := exec.Command(duckdb, "-json", "-c", q).CombinedOutput()
	require.NoError(t, err, string(out))
	var got []map[string]any
	require.NoError(t, json.Unmarshal(out, &got), string(out))
	require.Len(t, got, 3)
	assert.Equal(t, "a", got[0]["id"])
	assert.EqualValues(t, 200, got[0]["code"])
	assert.Equal(t, "v", got[0]["k"])
	assert.EqualValues(t, 3, got[0]["n"])
	assert.Equal(t, "i1", got[0]["first"])
	assert.Equal(t, "1", got[0]["t"])
	assert.Nil(t, got[1]["code"])
	assert.EqualValues(t, 0, got[1]["n"])
	assert.Nil(t, got[1]["first"])
	assert.Equal(t, "ünïcode", got[2]["id"])
	t.Logf("DuckDB reads time as %v", got[0]["tt"])
}

// Every bloom column gets its filter, and the filter answers for its
// values: parquet-go keeps only the last of several BloomFilters options.
func TestEveryBloomColumnHasAFilter(t *testing.T) {
	rec := recordOf(t, testRows)
	defer rec.Release()
	data := writeFile(t, rec, nil, Options{BloomColumns: []string{"id", "code"}})
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	for _, rg := range f.RowGroups() {
		for i, name := range []string{"code", "id"} {
			leaf, ok := f.Schema().Lookup(name)
			require.True(t, ok)
			filter := rg.ColumnChunks()[leaf.ColumnIndex].BloomFilter()
			require.NotNil(t, filter, "column %s has no bloom filter", name)
			var probe parquet.Value
			if i == 0 {
				probe = parquet.Int64Value(*testRows[0].Code)
			} else {
				probe = parquet.ByteArrayValue([]byte(testRows[0].ID))
			}
			has, err := filter.Check(probe)
			require.NoError(t, err)
			assert.True(t, has, "%s filter knows a written value", name)
		}
	}
}

// Tables with maps or lists are compressed at zstd level 3, flat tables at
// level 1 (see zstdLevelFlat).
func TestZstdLevelByTableShape(t *testing.T) {
	type flat struct {
		Name  string   `parquet:"name"`
		Score *float64 `parquet:"score,optional"`
	}
	type list struct {
		Name string   `parquet:"name"`
		Tags []string `parquet:"tags,list"`
	}
	tests := []struct {
		name   string
		schema *parquet.Schema
		want   int
	}{
		{"flat", parquet.SchemaOf(flat{}), 1},
		{"map", parquet.SchemaOf(item{}), 3},
		{"list", parquet.SchemaOf(list{}), 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, zstdLevel(tt.schema))
		})
	}
}
