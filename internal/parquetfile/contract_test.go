package parquetfile_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/parquetfile"
	"github.com/arc-otel/arc-otel/storage"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// The writer changed, the files did not: for every table, a file of the
// new writer has the schema (column order, logical types, repetition, root
// name) and the rows, value by value with their levels, of the per-value
// parquet-go writer it replaced, read back by parquet-go. Row subsets
// (records spanning hours) included.
func TestSameFilesAsTheOldWriter(t *testing.T) {
	for _, mapDicts := range []bool{false, true} {
		// With map dictionaries (which these small row groups would not
		// get by default, see mapDictMinRows) and without.
		if mapDicts {
			defer parquetfile.SetMapDictMinRows(parquetfile.SetMapDictMinRows(0))
		}
		t.Run(fmt.Sprintf("map-dictionaries=%v", mapDicts), func(t *testing.T) { sameFilesAsTheOldWriter(t) })
	}
}

func sameFilesAsTheOldWriter(t *testing.T) {
	for _, tt := range benchTables() {
		t.Run(tt.name, func(t *testing.T) {
			recs := tt.batches(t, 3000)
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			scattered := []int32{0, 1, 2, 3, 10, 11, 500, 7, 999} // gathered
			var runs []int32                                      // sliced
			for i := range int32(300) {
				runs = append(runs, 100+i, 700+i)
			}
			slices.Sort(runs)
			write := func(newWriter bool) []byte {
				var buf bytes.Buffer
				opts := parquetfile.Options{BloomColumns: tt.bloom, RowGroupRows: 1200, LiteralPages: true}
				var w interface {
					Write(arrow.RecordBatch, []int32) error
					Close() error
				}
				var err error
				if newWriter {
					w, err = parquetfile.NewWriter(&buf, tt.parquet, tt.arrow, opts)
				} else {
					w, err = parquetfile.NewOldWriter(&buf, tt.parquet, tt.arrow, opts)
				}
				require.NoError(t, err)
				for _, rec := range recs {
					require.NoError(t, w.Write(rec, nil))
				}
				require.NoError(t, w.Write(recs[0], scattered))
				require.NoError(t, w.Write(recs[1], runs))
				require.NoError(t, w.Close())
				return buf.Bytes()
			}
			oldSchema, oldRows := readAll(t, write(false))
			newSchema, newRows := readAll(t, write(true))
			assert.Equal(t, oldSchema.String(), newSchema.String())
			assert.Equal(t, oldSchema.Name(), newSchema.Name())
			require.Len(t, newRows, len(oldRows))
			for i := range oldRows {
				if !oldRows[i].Equal(newRows[i]) {
					t.Fatalf("row %d differs:\nold %v\nnew %v", i, oldRows[i], newRows[i])
				}
			}
		})
	}
}

func readAll(t *testing.T, data []byte) (*parquet.Schema, []parquet.Row) {
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	var out []parquet.Row
	for _, rg := range f.RowGroups() {
		rows := rg.Rows()
		buf := make([]parquet.Row, 100)
		for {
			n, err := rows.ReadRows(buf)
			for _, r := range buf[:n] {
				out = append(out, r.Clone())
			}
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
		}
		require.NoError(t, rows.Close())
	}
	return f.Schema(), out
}

// The writer's file format choices (docs/SCHEMA.md, "File format"): data
// pages v1, whose levels are compressed with the values, and statistics on
// the top-level columns only, none on the leaf columns of maps and lists.
// Version 2 pages with statistics everywhere doubled the OTLP files and
// spent 10-25 % of their encoding CPU on statistics no engine uses.
func TestPageVersionAndStatistics(t *testing.T) {
	for _, tt := range benchTables() {
		t.Run(tt.name, func(t *testing.T) {
			data, f := writeBenchFile(t, tt, 2000)
			nested := 0
			for _, rg := range f.Metadata().RowGroups {
				for _, cc := range rg.Columns {
					md := cc.MetaData
					path := strings.Join(md.PathInSchema, ".")
					leaf, ok := f.Schema().Lookup(md.PathInSchema...)
					require.True(t, ok, path)
					if leaf.MaxRepetitionLevel > 0 {
						nested++
						assert.Empty(t, md.Statistics.MinValue, "%s (in a map or list) has statistics", path)
						assert.Empty(t, md.Statistics.MaxValue, "%s (in a map or list) has statistics", path)
					}
				}
				time := rg.Columns[leafIndex(t, f.Schema(), "time")].MetaData.Statistics
				assert.NotEmpty(t, time.MinValue, "time has no statistics")
				assert.NotEmpty(t, time.MaxValue, "time has no statistics")
			}
			if strings.HasPrefix(tt.name, "otlp_") {
				assert.NotZero(t, nested, "the OTLP tables have maps")
			}
			// The page headers themselves (arrow-go's footer lists every
			// data page as version 1 whatever it wrote).
			r, err := file.NewParquetReader(bytes.NewReader(data))
			require.NoError(t, err)
			defer r.Close()
			for g := range r.NumRowGroups() {
				rg := r.RowGroup(g)
				for c := range rg.NumColumns() {
					pages, err := rg.GetColumnPageReader(c)
					require.NoError(t, err)
					for pages.Next() {
						assert.NotEqual(t, file.PageTypeDataPageV2, pages.Page().Type(), "column %d has a version 2 page", c)
					}
					require.NoError(t, pages.Err())
					require.NoError(t, pages.Close())
				}
			}
		})
	}
}

func leafIndex(t *testing.T, s *parquet.Schema, name string) int {
	leaf, ok := s.Lookup(name)
	require.True(t, ok, name)
	return leaf.ColumnIndex
}

// The columns written with the writer's dictionary (strings and integers
// that repeat) have no min/max statistics (pqarrow hashes every index to
// compute them, and a flush's mix of values prunes nothing); columns whose
// dictionary the first row group turned off (random ids, durations, and
// response times, whose 500 values are too many for 2000 rows) and the
// other top-level columns keep theirs.
func TestDictionaryColumnsHaveNoStatistics(t *testing.T) {
	tests := []struct {
		table   string
		noStats []string // written with a dictionary
		stats   []string
	}{
		{"arc_traces", []string{"service_name", "environment", "http_method", "span_kind", "status_code"}, []string{"time", "trace_id", "span_id", "duration_ns"}},
		{"arc_logs", []string{"service", "level", "environment", "status_code"}, []string{"time", "request_id", "response_time_ms"}},
		{"otlp_traces", []string{"service_name", "operation_name", "span_kind"}, []string{"time", "trace_id", "duration_ns"}},
	}
	tables := map[string]benchTable{}
	for _, tt := range benchTables() {
		tables[tt.name] = tt
	}
	for _, tc := range tests {
		t.Run(tc.table, func(t *testing.T) {
			tt := tables[tc.table]
			_, f := writeBenchFile(t, tt, 2000)
			for _, rg := range f.Metadata().RowGroups {
				for _, name := range tc.noStats {
					md := rg.Columns[leafIndex(t, f.Schema(), name)].MetaData
					assert.True(t, slices.ContainsFunc(md.Encoding, func(e format.Encoding) bool { return e == format.RLEDictionary || e == format.PlainDictionary }), "%s is not dictionary-encoded", name)
					assert.Empty(t, md.Statistics.MinValue, "%s has statistics", name)
					assert.Empty(t, md.Statistics.MaxValue, "%s has statistics", name)
				}
				for _, name := range tc.stats {
					md := rg.Columns[leafIndex(t, f.Schema(), name)].MetaData
					assert.NotEmpty(t, md.Statistics.MinValue, "%s has no statistics", name)
					assert.NotEmpty(t, md.Statistics.MaxValue, "%s has no statistics", name)
				}
			}
		})
	}
}

// writeBenchFile writes rows of tt's generated records into one file with
// the writer's defaults and returns its bytes, opened for its metadata.
func writeBenchFile(t *testing.T, tt benchTable, rows int) ([]byte, *parquet.File) {
	t.Helper()
	recs := tt.batches(t, rows)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var buf bytes.Buffer
	w, err := parquetfile.NewWriter(&buf, tt.parquet, tt.arrow, parquetfile.Options{BloomColumns: tt.bloom, ExpectedRows: int64(rows)})
	require.NoError(t, err)
	for _, rec := range recs {
		require.NoError(t, w.Write(rec, nil))
	}
	require.NoError(t, w.Close())
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	return buf.Bytes(), f
}

// The map columns' levels computed by the writer, once per map, are the
// ones pqarrow derives leaf by leaf: the files of both ways are byte for
// byte the same, for every table at a size with map dictionaries and with
// null maps (TestMapColumnsKeepNulls reads those back).
func TestDirectMapLevelsWriteTheSameFiles(t *testing.T) {
	for _, tt := range benchTables() {
		t.Run(tt.name, func(t *testing.T) {
			recs := tt.batches(t, 5000)
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			write := func(direct bool) []byte {
				defer parquetfile.SetDirectMapLevels(parquetfile.SetDirectMapLevels(direct))
				var buf bytes.Buffer
				w, err := parquetfile.NewWriter(&buf, tt.parquet, tt.arrow, parquetfile.Options{BloomColumns: tt.bloom, ExpectedRows: 5000})
				require.NoError(t, err)
				for i, rec := range recs {
					rows := []int32(nil)
					if i == 1 { // a row subset: runs of the record
						rows = []int32{0, 1, 2, 500, 501, 999}
					}
					require.NoError(t, w.Write(rec, rows))
				}
				require.NoError(t, w.Close())
				if direct {
					assert.True(t, w.ReachesPqarrowInternals(), "arrow-go's FileWriter no longer has the fields fileWriterInternals reads")
				}
				return buf.Bytes()
			}
			assert.True(t, bytes.Equal(write(false), write(true)), "files differ")
		})
	}
}

// The list and map columns with no entry in a row group, written with
// levels computed once (directEmptyLevels), make the same files as
// pqarrow's own levels, and the shortcut is taken exactly for them: a
// span's links (none in these tables), the type maps of string-only
// resource and scope attributes, scope attributes (none), a gauge or sum
// point's histogram, summary and exemplar lists; not a span's events (one
// span in 50 has one), attributes, or the type maps of spans and points
// with integer attributes.
func TestDirectEmptyLevelsWriteTheSameFiles(t *testing.T) {
	otlp := []string{"resource_attribute_types", "scope_attributes", "scope_attribute_types"}
	wantEmpty := map[string][]string{
		"otlp_traces":            append([]string{"links"}, otlp...),
		"otlp_traces_random_ids": append([]string{"links"}, otlp...),
		"otlp_logs":              otlp,
		"otlp_metrics": append([]string{"bucket_counts", "explicit_bounds", "positive_bucket_counts", "negative_bucket_counts",
			"quantile_levels", "quantile_values", "exemplars", "metric_metadata", "metric_metadata_types", "attribute_types"}, otlp...),
	}
	for _, tt := range benchTables() {
		t.Run(tt.name, func(t *testing.T) {
			recs := tt.batches(t, 5000)
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			write := func(direct bool) ([]byte, map[string]int) {
				defer parquetfile.SetDirectEmptyLevels(parquetfile.SetDirectEmptyLevels(direct))
				var buf bytes.Buffer
				// Two row groups: the second starts inside a record.
				w, err := parquetfile.NewWriter(&buf, tt.parquet, tt.arrow, parquetfile.Options{BloomColumns: tt.bloom, ExpectedRows: 5000, RowGroupRows: 2500})
				require.NoError(t, err)
				for i, rec := range recs {
					rows := []int32(nil)
					if i == 1 { // a row subset: runs of the record
						rows = []int32{0, 1, 2, 500, 501, 999}
					}
					require.NoError(t, w.Write(rec, rows))
				}
				require.NoError(t, w.Close())
				return buf.Bytes(), w.EmptyColumns()
			}
			want, _ := write(false)
			got, empty := write(true)
			assert.True(t, bytes.Equal(want, got), "files differ")
			wantRowGroups := map[string]int{}
			for _, c := range wantEmpty[tt.name] {
				wantRowGroups[c] = 2
			}
			assert.Equal(t, wantRowGroups, empty, "columns written empty, and in how many of the 2 row groups")
		})
	}
}

// An integer column whose values repeat (status codes, nulls among them)
// is written with a dictionary in every row group and one of durations
// without, and both read back as written. The dictionary is the first row
// group's choice; later row groups keep it.
func TestIntegerDictionaries(t *testing.T) {
	const rows = 9000
	s := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: schema.TimestampType},
		{Name: "duration_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "status_code", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	table, err := storage.MeasurementTable("requests", s)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(5, 5))
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	type want struct {
		duration int64
		status   *int64
	}
	var wants []want
	for i := range rows {
		w := want{duration: r.Int64N(500_000_000)}
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(benchStart.UnixMicro() + int64(i)))
		b.Field(1).(*array.Int64Builder).Append(w.duration)
		if i%7 == 3 {
			b.Field(2).(*array.Int64Builder).AppendNull()
		} else {
			status := pick(r, statuses)
			w.status = &status
			b.Field(2).(*array.Int64Builder).Append(status)
		}
		wants = append(wants, w)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()

	var buf bytes.Buffer
	w, err := parquetfile.NewWriter(&buf, table.Parquet, table.Arrow, parquetfile.Options{RowGroupRows: 4000})
	require.NoError(t, err)
	require.NoError(t, w.Write(rec, nil))
	require.NoError(t, w.Close())

	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	require.Len(t, f.Metadata().RowGroups, 3)
	isDict := func(e format.Encoding) bool { return e == format.RLEDictionary || e == format.PlainDictionary }
	for i, rg := range f.Metadata().RowGroups {
		status := rg.Columns[leafIndex(t, f.Schema(), "status_code")].MetaData
		duration := rg.Columns[leafIndex(t, f.Schema(), "duration_ns")].MetaData
		assert.True(t, slices.ContainsFunc(status.Encoding, isDict), "row group %d: status_code without a dictionary", i)
		assert.False(t, slices.ContainsFunc(duration.Encoding, isDict), "row group %d: duration_ns with a dictionary", i)
	}
	_, got := readAll(t, buf.Bytes())
	require.Len(t, got, rows)
	durationCol, statusCol := leafIndex(t, f.Schema(), "duration_ns"), leafIndex(t, f.Schema(), "status_code")
	for i, row := range got {
		for _, v := range row {
			switch v.Column() {
			case durationCol:
				require.Equal(t, wants[i].duration, v.Int64(), "row %d duration", i)
			case statusCol:
				if wants[i].status == nil {
					require.True(t, v.IsNull(), "row %d status is null", i)
				} else {
					require.Equal(t, *wants[i].status, v.Int64(), "row %d status", i)
				}
			}
		}
	}
}

// A dictionary column whose first row group holds only nulls (a client
// that left the column out of the first rows) cannot show whether its
// values repeat, so it is written without a dictionary, and reads back,
// for strings and integers alike.
func TestDictionaryColumnsOfNullsOnly(t *testing.T) {
	const rows = 3000
	s := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: schema.TimestampType},
		{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "status_code", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	table, err := storage.MeasurementTable("sparse", s)
	require.NoError(t, err)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for i := range rows {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(benchStart.UnixMicro() + int64(i)))
		if i < 1000 { // the first row group: nulls only
			b.Field(1).(*array.StringBuilder).AppendNull()
			b.Field(2).(*array.Int64Builder).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(regions[i%len(regions)])
			b.Field(2).(*array.Int64Builder).Append(statuses[i%len(statuses)])
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := parquetfile.NewWriter(&buf, table.Parquet, table.Arrow, parquetfile.Options{RowGroupRows: 1000})
	require.NoError(t, err)
	require.NoError(t, w.Write(rec, nil))
	require.NoError(t, w.Close())

	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	regionCol, statusCol := leafIndex(t, f.Schema(), "region"), leafIndex(t, f.Schema(), "status_code")
	require.Len(t, f.Metadata().RowGroups, 3)
	isDict := func(e format.Encoding) bool { return e == format.RLEDictionary || e == format.PlainDictionary }
	for i, rg := range f.Metadata().RowGroups {
		for _, c := range []int{regionCol, statusCol} {
			assert.False(t, slices.ContainsFunc(rg.Columns[c].MetaData.Encoding, isDict), "row group %d column %d has a dictionary", i, c)
		}
	}
	_, got := readAll(t, buf.Bytes())
	require.Len(t, got, rows)
	for i, row := range got {
		for _, v := range row {
			switch v.Column() {
			case regionCol:
				if i < 1000 {
					require.True(t, v.IsNull(), "row %d region", i)
				} else {
					require.Equal(t, regions[i%len(regions)], v.String(), "row %d region", i)
				}
			case statusCol:
				if i < 1000 {
					require.True(t, v.IsNull(), "row %d status", i)
				} else {
					require.Equal(t, statuses[i%len(statuses)], v.Int64(), "row %d status", i)
				}
			}
		}
	}
}

// A top-level string column written without a dictionary whose values in
// the first row group are of one width, empty ones and nulls aside (ids,
// UUIDs), is written DELTA_LENGTH_BYTE_ARRAY, every other one PLAIN
// (text of varying length, whose lengths zstd takes with it), and every
// value reads back: in a measurement (dictionaries given up) and in the
// OTLP tables (no dictionary by schema).
func TestOneWidthStringsDeltaLength(t *testing.T) {
	const rows = 5000
	s := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: schema.TimestampType},
		{Name: "request_id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "parent_id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "message", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	table, err := storage.MeasurementTable("requests", s)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(9, 9))
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	want := make([][4]*string, rows)
	str := func(v string) *string { return &v }
	for i := range rows {
		want[i] = [4]*string{str(hex(r, 8) + "-" + hex(r, 4) + "-" + hex(r, 4) + "-" + hex(r, 4) + "-" + hex(r, 12)), nil,
			str(fmt.Sprintf("order %s placed: %d items", hex(r, 12), r.IntN(200))), str(pick(r, regions))}
		switch i % 3 { // a root has no parent: an empty id, or null
		case 1:
			want[i][1] = str(hex(r, 16))
		case 2:
			want[i][1] = str("")
		}
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(benchStart.UnixMicro() + int64(i)))
		for c, v := range want[i] {
			if v == nil {
				b.Field(c + 1).AppendNull()
			} else {
				b.Field(c + 1).(*array.StringBuilder).Append(*v)
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := parquetfile.NewWriter(&buf, table.Parquet, table.Arrow, parquetfile.Options{RowGroupRows: 2000, LiteralPages: true})
	require.NoError(t, err)
	require.NoError(t, w.Write(rec, nil))
	require.NoError(t, w.Close())

	encodings := map[string]format.Encoding{"request_id": format.DeltaLengthByteArray, "parent_id": format.DeltaLengthByteArray, "message": format.Plain, "region": format.RLEDictionary}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	require.Len(t, f.Metadata().RowGroups, 3)
	cols := make([]int, 4)
	for i, name := range []string{"request_id", "parent_id", "message", "region"} {
		cols[i] = leafIndex(t, f.Schema(), name)
		for g, rg := range f.Metadata().RowGroups {
			assert.Contains(t, rg.Columns[cols[i]].MetaData.Encoding, encodings[name], "row group %d column %s", g, name)
		}
	}
	_, got := readAll(t, buf.Bytes())
	require.Len(t, got, rows)
	for i, row := range got {
		for _, v := range row {
			if c := slices.Index(cols, v.Column()); c >= 0 {
				if want[i][c] == nil {
					require.True(t, v.IsNull(), "row %d column %d is null", i, c)
				} else {
					require.Equal(t, *want[i][c], v.String(), "row %d column %d", i, c)
				}
			}
		}
	}

	for _, tt := range benchTables()[:3] { // the OTLP traces and logs
		t.Run(tt.name, func(t *testing.T) {
			recs := tt.batches(t, 2000)
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			var buf bytes.Buffer
			w, err := parquetfile.NewWriter(&buf, tt.parquet, tt.arrow, parquetfile.Options{BloomColumns: tt.bloom, LiteralPages: true})
			require.NoError(t, err)
			for _, rec := range recs {
				require.NoError(t, w.Write(rec, nil))
			}
			require.NoError(t, w.Close())
			f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			require.NoError(t, err)
			encodings := map[string]format.Encoding{"trace_id": format.DeltaLengthByteArray, "span_id": format.DeltaLengthByteArray,
				"parent_span_id": format.DeltaLengthByteArray, "message": format.Plain}
			for name, enc := range encodings {
				if leaf, ok := f.Schema().Lookup(name); ok {
					assert.Contains(t, f.Metadata().RowGroups[0].Columns[leaf.ColumnIndex].MetaData.Encoding, enc, name)
				}
			}
		})
	}
}

// TestLayoutIsTheWritersChoice: Layout gives each column the encoding the
// writer gives it on those rows, whatever the schema's own says of rows
// it has not seen: ids of one width DELTA_LENGTH_BYTE_ARRAY, of two
// widths PLAIN; a dictionary kept where values repeat and given up on
// distinct ones; time's delta encoding. Without rows nothing is decided.
func TestLayoutIsTheWritersChoice(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: schema.TimestampType},
		{Name: "request_id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "token", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	table, err := storage.MeasurementTable("requests", s)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(5, 6))
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for i := range 4000 {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(benchStart.UnixMicro() + int64(i)))
		b.Field(1).(*array.StringBuilder).Append(hex(r, 32))
		b.Field(2).(*array.StringBuilder).Append(hex(r, 16+16*(i%2)))
		b.Field(3).(*array.StringBuilder).Append(pick(r, regions))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()

	got, err := parquetfile.Layout(table.Parquet, []arrow.RecordBatch{rec})
	require.NoError(t, err)
	want := map[string]format.Encoding{"time": format.DeltaBinaryPacked, "request_id": format.DeltaLengthByteArray, "token": format.Plain, "region": format.RLEDictionary}
	require.Len(t, got, len(table.Parquet.Columns()))
	for i, col := range table.Parquet.Columns() {
		require.NotNil(t, got[i], col)
		assert.Equal(t, want[col[0]], got[i].Encoding(), col[0])
	}
	for _, name := range []string{"request_id", "token"} {
		leaf, _ := table.Parquet.Lookup(name)
		assert.Equal(t, format.RLEDictionary, leaf.Node.Encoding().Encoding(), "the schema asks a dictionary of %s", name)
	}

	none, err := parquetfile.Layout(table.Parquet, nil)
	require.NoError(t, err)
	assert.Nil(t, none, "no rows, no decision")
}
