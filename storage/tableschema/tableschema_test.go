package tableschema_test

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/tableschema"
)

// The OTLP tables take their sort and bloom-filter columns from the
// contract; every other name is a measurement's: sorted by time, a bloom
// filter on trace_id.
func TestTableColumns(t *testing.T) {
	require.NotEmpty(t, schema.Names())
	for _, name := range schema.Names() {
		t.Run(name, func(t *testing.T) {
			tbl, _ := schema.Lookup(name)
			assert.True(t, tableschema.IsOTLPTable(name))
			assert.Equal(t, tbl.SortColumns, tableschema.SortKeyNames(name))
			assert.Equal(t, tbl.BloomColumns, tableschema.BloomColumns(name))
			for _, c := range tableschema.SortKeyNames(name) {
				assert.NotNil(t, tbl.Arrow.FieldIndices(c), "sort column %s is the table's", c)
			}
		})
	}
	for _, name := range []string{"cpu", "Traces", "%74races", ""} {
		t.Run("measurement "+name, func(t *testing.T) {
			assert.False(t, tableschema.IsOTLPTable(name))
			assert.Equal(t, []string{tableschema.TimeColumn}, tableschema.SortKeyNames(name))
			assert.Equal(t, []string{tableschema.TraceIDColumn}, tableschema.BloomColumns(name))
		})
	}
	assert.Equal(t, schema.ColTime, tableschema.TimeColumn, "a measurement's time column is the contract's")
	assert.Equal(t, schema.ColTraceID, tableschema.TraceIDColumn)
}

func field(name string, dt arrow.DataType, nullable bool) arrow.Field {
	return arrow.Field{Name: name, Type: dt, Nullable: nullable}
}

var storedTime = field(tableschema.TimeColumn, schema.TimestampType, false)

// column describes a Parquet leaf as the tests check it.
type column struct {
	kind     pq.Kind
	optional bool
	encoding format.Encoding // 0: the writer's default (plain)
	logical  string
}

// The logical types of the contract's timestamps, of strings and of
// signed 64-bit integers.
var (
	timestampType = schema.TimestampNode().Type().LogicalType().String()
	stringType    = pq.String().Type().LogicalType().String()
	int64Type     = pq.Int(64).Type().LogicalType().String()
)

func columns(t *testing.T, s *pq.Schema) map[string]column {
	t.Helper()
	out := map[string]column{}
	for _, f := range s.Fields() {
		require.True(t, f.Leaf(), f.Name())
		c := column{kind: f.Type().Kind(), optional: f.Optional()}
		if e := f.Encoding(); e != nil {
			c.encoding = e.Encoding()
		}
		if lt := f.Type().LogicalType(); lt != nil {
			c.logical = lt.String()
		}
		out[f.Name()] = c
	}
	return out
}

func TestMeasurementSchema(t *testing.T) {
	fields := []arrow.Field{
		storedTime,
		field("status", arrow.PrimitiveTypes.Int64, true),
		field("load", arrow.PrimitiveTypes.Float64, true),
		field("host", arrow.BinaryTypes.String, true),
		field("up", arrow.FixedWidthTypes.Boolean, true),
		field("required_in_arrow", arrow.PrimitiveTypes.Int64, false),
	}
	s, err := tableschema.Measurement("cpu", arrow.NewSchema(fields, nil))
	require.NoError(t, err)
	assert.Equal(t, "cpu", s.Name())
	want := map[string]column{
		"time":              {kind: pq.Int64, encoding: format.DeltaBinaryPacked, logical: timestampType},
		"status":            {kind: pq.Int64, optional: true, encoding: format.RLEDictionary, logical: int64Type},
		"load":              {kind: pq.Double, optional: true},
		"host":              {kind: pq.ByteArray, optional: true, encoding: format.RLEDictionary, logical: stringType},
		"up":                {kind: pq.Boolean, optional: true},
		"required_in_arrow": {kind: pq.Int64, optional: true, encoding: format.RLEDictionary, logical: int64Type},
	}
	assert.Equal(t, want, columns(t, s))

	utcless := arrow.NewSchema([]arrow.Field{field("time", &arrow.TimestampType{Unit: schema.TimestampUnit}, false)}, nil)
	_, err = tableschema.Measurement("cpu", utcless)
	assert.NoError(t, err, "a timestamp without a zone is UTC")
}

func TestMeasurementSchemaRejects(t *testing.T) {
	tests := []struct {
		name   string
		fields []arrow.Field
		naming string // what the error names
	}{
		{"no columns", nil, "first column"},
		{"time not first", []arrow.Field{field("host", arrow.BinaryTypes.String, true), storedTime}, "first column"},
		{"time nullable", []arrow.Field{field("time", schema.TimestampType, true)}, "non-null"},
		{"time in another unit", []arrow.Field{field("time", &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, false)}, "first column"},
		{"time in another zone", []arrow.Field{field("time", &arrow.TimestampType{Unit: schema.TimestampUnit, TimeZone: "Europe/Paris"}, false)}, "first column"},
		{"time as an integer", []arrow.Field{field("time", arrow.PrimitiveTypes.Int64, false)}, "first column"},
		{"an int32 column", []arrow.Field{storedTime, field("n", arrow.PrimitiveTypes.Int32, true)}, `column "n"`},
		{"a binary column", []arrow.Field{storedTime, field("b", arrow.BinaryTypes.Binary, true)}, `column "b"`},
		{"a column twice", []arrow.Field{storedTime, field("n", arrow.PrimitiveTypes.Int64, true), field("n", arrow.PrimitiveTypes.Float64, true)}, `column "n" twice`},
		{"time twice", []arrow.Field{storedTime, field("time", arrow.PrimitiveTypes.Int64, true)}, `column "time" twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tableschema.Measurement("cpu", arrow.NewSchema(tt.fields, nil))
			assert.ErrorIs(t, err, tableschema.ErrSchemaMismatch)
			assert.ErrorContains(t, err, tt.naming)
			assert.ErrorContains(t, err, `"cpu"`, "the error names the measurement")
			_, err = tableschema.Compacted("cpu", arrow.NewSchema(tt.fields, nil), nil)
			assert.ErrorIs(t, err, tableschema.ErrSchemaMismatch, "compaction takes only what a flush takes")
		})
	}
}

// Compacted files keep the flushed schema's columns, with time
// delta-coded and a dictionary only on the integer columns chosen.
func TestCompactedSchema(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{
		storedTime,
		field("status", arrow.PrimitiveTypes.Int64, true),
		field("duration", arrow.PrimitiveTypes.Int64, true),
		field("host", arrow.BinaryTypes.String, true),
		field("load", arrow.PrimitiveTypes.Float64, true),
	}, nil)
	flushed, err := tableschema.Measurement("cpu", s)
	require.NoError(t, err)
	tests := []struct {
		name     string
		dictInts map[string]bool
		want     map[string]format.Encoding
	}{
		{"no dictionary", nil, map[string]format.Encoding{"status": 0, "duration": 0}},
		{"status keeps its dictionary", map[string]bool{"status": true}, map[string]format.Encoding{"status": format.RLEDictionary, "duration": 0}},
		{"both", map[string]bool{"status": true, "duration": true, "host": false}, map[string]format.Encoding{"status": format.RLEDictionary, "duration": format.RLEDictionary}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tableschema.Compacted("cpu", s, tt.dictInts)
			require.NoError(t, err)
			cols := columns(t, got)
			want := columns(t, flushed)
			for name, enc := range tt.want {
				c := want[name]
				c.encoding = enc
				want[name] = c
			}
			assert.Equal(t, want, cols, "only the integer columns' encodings differ from the flushed schema")
			assert.Equal(t, format.DeltaBinaryPacked, cols["time"].encoding)
		})
	}
}

// openFile writes the int64 columns cols (nil values are nulls) as one row
// group of a Parquet file and opens it.
func openFile(t *testing.T, cols map[string][]*int64) *pqarrow.FileReader {
	t.Helper()
	fields := []arrow.Field{storedTime}
	rows := 0
	for name, vals := range cols {
		fields = append(fields, field(name, arrow.PrimitiveTypes.Int64, true))
		rows = len(vals)
	}
	s := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for i := range rows {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(i))
	}
	for i, f := range fields[1:] {
		ib := b.Field(i + 1).(*array.Int64Builder)
		for _, v := range cols[f.Name] {
			if v == nil {
				ib.AppendNull()
			} else {
				ib.Append(*v)
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(s, &buf, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(int64(max(rows, 1)))), pqarrow.DefaultWriterProps())
	require.NoError(t, err)
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
	pf, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	t.Cleanup(func() { pf.Close() })
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	require.NoError(t, err)
	return fr
}

// values returns n values, value(i) each, every nullEvery-th a null (0:
// none).
func values(n, nullEvery int, value func(i int) int64) []*int64 {
	out := make([]*int64, n)
	for i := range out {
		if nullEvery > 0 && i%nullEvery == 0 {
			continue
		}
		v := value(i)
		out[i] = &v
	}
	return out
}

func TestLowCardinalityInts(t *testing.T) {
	const rows = tableschema.MinDictSampleRows
	const most = tableschema.MinDictSampleRows / 8 // the most distinct values that get a dictionary
	tests := []struct {
		name string
		cols map[string][]*int64
		want map[string]bool
	}{
		{"few values and unique values", map[string][]*int64{
			"status":   values(rows, 0, func(i int) int64 { return int64(200 + i%5) }),
			"duration": values(rows, 0, func(i int) int64 { return int64(i) * 1_000_003 }),
		}, map[string]bool{"status": true}},
		{"exactly the most distinct values", map[string][]*int64{
			"n": values(rows, 0, func(i int) int64 { return int64(i % most) }),
		}, map[string]bool{"n": true}},
		{"one more than the most", map[string][]*int64{
			"n": values(rows, 0, func(i int) int64 { return int64(i % (most + 1)) }),
		}, map[string]bool{}},
		{"nulls are not values", map[string][]*int64{
			"n": values(rows, 2, func(i int) int64 { return int64(i % (2 * most)) }), // the odd rows: most values
		}, map[string]bool{"n": true}},
		{"a row group under the sample's size", map[string][]*int64{
			"status": values(rows-1, 0, func(i int) int64 { return 200 }),
		}, nil},
		{"no integer columns", map[string][]*int64{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tableschema.LowCardinalityInts(openFile(t, tt.cols))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestMeasurementEncoding(t *testing.T) {
	tests := []struct {
		column string
		kind   pq.Kind
		want   format.Encoding // 0: none (PLAIN)
	}{
		{"time", pq.Int64, format.DeltaBinaryPacked},
		{"time", pq.ByteArray, format.RLEDictionary},
		{"time", pq.Double, 0},
		{"status", pq.Int64, format.RLEDictionary},
		{"host", pq.ByteArray, format.RLEDictionary},
		{"load", pq.Double, 0},
		{"up", pq.Boolean, 0},
		{"n", pq.Int32, 0},
	}
	for _, tt := range tests {
		t.Run(tt.column+"/"+tt.kind.String(), func(t *testing.T) {
			var got format.Encoding
			if e := tableschema.MeasurementEncoding(tt.column, tt.kind); e != nil {
				got = e.Encoding()
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// Every column of a measurement's schema has the encoding
// MeasurementEncoding gives its name and kind: compaction rebuilds a
// schema from it and must get the one the flush wrote.
func TestMeasurementEncodingIsTheSchemas(t *testing.T) {
	s, err := tableschema.Measurement("cpu", arrow.NewSchema([]arrow.Field{
		storedTime,
		field("status", arrow.PrimitiveTypes.Int64, true),
		field("load", arrow.PrimitiveTypes.Float64, true),
		field("host", arrow.BinaryTypes.String, true),
		field("up", arrow.FixedWidthTypes.Boolean, true),
	}, nil))
	require.NoError(t, err)
	for _, f := range s.Fields() {
		var want, got format.Encoding
		if e := tableschema.MeasurementEncoding(f.Name(), f.Type().Kind()); e != nil {
			want = e.Encoding()
		}
		if e := f.Encoding(); e != nil {
			got = e.Encoding()
		}
		assert.Equal(t, want, got, f.Name())
	}
}
