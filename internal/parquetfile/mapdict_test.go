package parquetfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type labelled struct {
	N      int64             `parquet:"n"`
	Labels map[string]string `parquet:"labels,optional"`
}

var labelledArrow = arrow.NewSchema([]arrow.Field{
	{Name: "n", Type: arrow.PrimitiveTypes.Int64},
	{Name: "labels", Type: stringMap(), Nullable: true},
}, nil)

// labelledRecord builds rows [from, to) of a table whose maps are null
// every seventh row and empty every fifth; label "id" is unique per row
// when unique is set, one of three values otherwise.
func labelledRecord(t testing.TB, from, to int, unique bool) (arrow.RecordBatch, []labelled) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, labelledArrow)
	defer b.Release()
	mb := b.Field(1).(*array.MapBuilder)
	kb, vb := mb.KeyBuilder().(*array.StringBuilder), mb.ItemBuilder().(*array.StringBuilder)
	var want []labelled
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		r := labelled{N: int64(i)}
		switch {
		case i%7 == 0:
			mb.AppendNull()
		case i%5 == 0:
			mb.Append(true)
			r.Labels = map[string]string{}
		default:
			mb.Append(true)
			id := fmt.Sprint("id-", i%3)
			if unique {
				id = fmt.Sprint("id-", i)
			}
			r.Labels = map[string]string{"service": "svc", "zone": fmt.Sprint("z", i%2), "id": id}
			for _, k := range []string{"service", "zone", "id"} {
				kb.Append(k)
				vb.Append(r.Labels[k])
			}
		}
		want = append(want, r)
	}
	return b.NewRecordBatch(), want
}

// BenchmarkMapValuesWithoutDictionary writes a map column whose keys take
// a dictionary and whose values are unique, so the values are gathered
// without one (mapLeaf.copy) from batches of 1000 rows, as a flush
// gathers them.
func BenchmarkMapValuesWithoutDictionary(b *testing.B) {
	for _, rows := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			var recs []arrow.RecordBatch
			for from := 0; from < rows; from += 1000 {
				rec, _ := labelledRecord(b, from, from+1000, true)
				defer rec.Release()
				recs = append(recs, rec)
			}
			b.ReportAllocs()
			for b.Loop() {
				w, err := NewWriter(io.Discard, parquet.SchemaOf(labelled{}), labelledArrow, Options{RowGroupRows: int64(rows)})
				require.NoError(b, err)
				for _, rec := range recs {
					require.NoError(b, w.Write(rec, nil))
				}
				require.NoError(b, w.Close())
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
		})
	}
}

func encodingsOf(t *testing.T, data []byte) map[string][]format.Encoding {
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	out := map[string][]format.Encoding{}
	for _, rg := range f.Metadata().RowGroups {
		for _, cc := range rg.Columns {
			p := strings.Join(cc.MetaData.PathInSchema, ".")
			out[p] = append(out[p], cc.MetaData.Encoding...)
		}
	}
	return out
}

func isDict(encs []format.Encoding) bool {
	return slices.ContainsFunc(encs, func(e format.Encoding) bool { return e == format.RLEDictionary || e == format.PlainDictionary })
}

// The keys and values of map<string, string> columns are written with a
// dictionary where the file's first row group is large enough and shows
// them repeating, PLAIN where it does not; null maps, empty maps, row
// subsets and several row groups read back as written.
func TestMapColumnsDictionaryEncoded(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rows       int // of the first row group
		unique     bool
		keysDict   bool
		valuesDict bool
	}{
		{"repeated values", mapDictMinRows, false, true, true},
		{"unique values", mapDictMinRows, true, true, false},
		{"small file", mapDictMinRows - 1, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec1, want1 := labelledRecord(t, 0, tc.rows-300, tc.unique)
			defer rec1.Release()
			rec2, want2 := labelledRecord(t, tc.rows-300, tc.rows+500, tc.unique)
			defer rec2.Release()
			var buf bytes.Buffer
			w, err := NewWriter(&buf, parquet.SchemaOf(labelled{}), labelledArrow, Options{RowGroupRows: int64(tc.rows)})
			require.NoError(t, err)
			require.NoError(t, w.Write(rec1, nil))
			require.NoError(t, w.Write(rec2, []int32{3, 4, 5, 100, 101, 102, 103, 799})) // sliced runs
			require.NoError(t, w.Write(rec2, nil))
			require.NoError(t, w.Close())

			want := slices.Clone(want1)
			for _, i := range []int{3, 4, 5, 100, 101, 102, 103, 799} {
				want = append(want, want2[i])
			}
			want = append(want, want2...)
			got, err := parquet.Read[labelled](bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			require.NoError(t, err)
			require.Len(t, got, len(want))
			for i := range want {
				if want[i].Labels == nil {
					assert.Empty(t, got[i].Labels, "row %d", i) // parquet-go reads a null map as empty
				} else {
					assert.Equal(t, want[i], got[i], "row %d", i)
				}
			}
			encs := encodingsOf(t, buf.Bytes())
			assert.Equal(t, tc.keysDict, isDict(encs["labels.key_value.key"]), "keys: %v", encs["labels.key_value.key"])
			assert.Equal(t, tc.valuesDict, isDict(encs["labels.key_value.value"]), "values: %v", encs["labels.key_value.value"])
		})
	}
}

// A null map stays null, not empty: the writer rebuilds the validity of
// the row group's runs (pyarrow-level check through arrow-go's reader is
// in the e2e tests; here the definition levels, read by parquet-go).
func TestMapColumnsKeepNulls(t *testing.T) {
	rec, want := labelledRecord(t, 0, mapDictMinRows, false)
	defer rec.Release()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, parquet.SchemaOf(labelled{}), labelledArrow, Options{})
	require.NoError(t, err)
	require.NoError(t, w.Write(rec, []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}))
	require.NoError(t, w.Write(rec, nil))
	require.NoError(t, w.Close())
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	rows := make([]parquet.Row, 2*mapDictMinRows)
	r := f.RowGroups()[0].Rows()
	defer r.Close()
	n, _ := r.ReadRows(rows)
	require.Equal(t, 16+len(want), n)
	labels, _ := f.Schema().Lookup("labels", "key_value", "key")
	for i, row := range rows[:n] {
		src := want[i%len(want)]
		if i >= 16 {
			src = want[i-16]
		}
		var def int = -1
		for _, v := range row {
			if v.Column() == labels.ColumnIndex {
				def = v.DefinitionLevel()
				break
			}
		}
		switch {
		case src.Labels == nil:
			assert.Equal(t, 0, def, "row %d: a null map", i)
		case len(src.Labels) == 0:
			assert.Equal(t, 1, def, "row %d: an empty map", i)
		default:
			assert.Equal(t, 2, def, "row %d: a map with entries", i)
		}
	}
}

// DuckDB, an independent reader, reads dictionary-encoded map leaves as
// written: every row's map, null maps and empty maps included.
func TestDuckDBReadsDictionaryMaps(t *testing.T) {
	duckdb, err := exec.LookPath("duckdb")
	if err != nil {
		t.Skip("duckdb CLI not installed (make tools installs it)")
	}
	rec, want := labelledRecord(t, 0, mapDictMinRows+100, false)
	defer rec.Release()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, parquet.SchemaOf(labelled{}), labelledArrow, Options{})
	require.NoError(t, err)
	require.NoError(t, w.Write(rec, nil))
	require.NoError(t, w.Close())
	encs := encodingsOf(t, buf.Bytes())
	require.True(t, isDict(encs["labels.key_value.key"]) && isDict(encs["labels.key_value.value"]), "map leaves not dictionary-encoded: %v", encs)
	path := filepath.Join(t.TempDir(), "m.parquet")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o600))
	q := `SELECT n, labels IS NULL AS null, cardinality(labels)::INTEGER AS entries, labels['service'] AS service, labels['zone'] AS zone, labels['id'] AS id FROM '` + path + `' ORDER BY n`
	out, err := exec.Command(duckdb, "-json", "-c", q).CombinedOutput()
	require.NoError(t, err, string(out))
	var got []struct {
		N       int64
		Null    bool
		Entries *int64
		Service *string
		Zone    *string
		ID      *string
	}
	require.NoError(t, json.Unmarshal(out, &got))
	require.Len(t, got, len(want))
	for i, r := range want {
		g := got[i]
		require.Equal(t, r.N, g.N)
		if r.Labels == nil {
			assert.True(t, g.Null, "row %d: want a null map", i)
			continue
		}
		require.False(t, g.Null, "row %d", i)
		require.NotNil(t, g.Entries, "row %d", i)
		assert.EqualValues(t, len(r.Labels), *g.Entries, "row %d", i)
		for k, v := range map[string]*string{"service": g.Service, "zone": g.Zone, "id": g.ID} {
			if want, ok := r.Labels[k]; ok {
				require.NotNil(t, v, "row %d %s", i, k)
				assert.Equal(t, want, *v, "row %d %s", i, k)
			}
		}
	}
}

// Null and empty maps get the levels pqarrow gives them: a file written
// with the writer's own map levels is byte for byte pqarrow's.
func TestDirectMapLevelsOfNullAndEmptyMaps(t *testing.T) {
	rec, _ := labelledRecord(t, 0, mapDictMinRows+100, false)
	defer rec.Release()
	write := func(direct bool) []byte {
		defer func(prev bool) { directMapLevels = prev }(directMapLevels)
		directMapLevels = direct
		var buf bytes.Buffer
		w, err := NewWriter(&buf, parquet.SchemaOf(labelled{}), labelledArrow, Options{RowGroupRows: int64(mapDictMinRows)})
		require.NoError(t, err)
		require.NoError(t, w.Write(rec, nil))
		require.NoError(t, w.Close())
		return buf.Bytes()
	}
	assert.True(t, bytes.Equal(write(false), write(true)), "files differ")
}

// A map's value leaf whose values are new on every row (one of a row's
// three) gives its dictionary up once steadyGrowth has seen enough of
// them, not at the limit a third of the way through the row group; one
// whose values come from a set that stays under the limit, new ever more
// rarely, keeps its dictionary to the end.
func TestMapValuesGiveUpWhenTheyKeepComingNew(t *testing.T) {
	const rows = 30_000
	limit := dictLimit(3 * rows)
	for _, tc := range []struct {
		name     string
		set      int // the id values' set, 0: unique
		keepDict bool
	}{
		{"a new id on every row", 0, false},
		{"ids from a set of 0.9 of the limit", limit * 9 / 10, true},
		{"ids from a set of a tenth of the limit", limit / 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 7))
			b := array.NewRecordBuilder(memory.DefaultAllocator, labelledArrow)
			defer b.Release()
			mb := b.Field(1).(*array.MapBuilder)
			kb, vb := mb.KeyBuilder().(*array.StringBuilder), mb.ItemBuilder().(*array.StringBuilder)
			for i := range rows {
				b.Field(0).(*array.Int64Builder).Append(int64(i))
				id := i
				if tc.set > 0 {
					id = r.IntN(tc.set)
				}
				mb.Append(true)
				for _, kv := range [][2]string{{"service", "svc"}, {"zone", fmt.Sprint("z", i%2)}, {"id", fmt.Sprint("id-", id)}} {
					kb.Append(kv[0])
					vb.Append(kv[1])
				}
			}
			rec := b.NewRecordBatch()
			defer rec.Release()

			m := mapDictOf(parquet.SchemaOf(labelled{}).Fields()[1], stringMap())
			require.NotNil(t, m)
			defer m.release()
			m.build([]run{{rec: rec, start: 0, end: rows}}, 1, true)
			assert.False(t, m.keys.off, "keys repeat")
			assert.Equal(t, !tc.keepDict, m.values.off, "values' dictionary given up")
			if !tc.keepDict {
				// the values hashed before giving up: the probe's, and at most a row more
				assert.LessOrEqual(t, len(m.values.indices), probeAt(limit)+3)
			}
		})
	}
}
