package otlparrowtest

import (
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Rows reads a record batch column by column into row structs of
// internal/schema (T is schema.Span, schema.LogRecord or
// schema.MetricPoint): the Arrow half of the contract read back without
// Parquet in between. Columns are matched by the parquet tag names; a column
// missing, of an unexpected type, or null where the field is not a pointer
// is an error. Strings are copied out of the record, which may be released
// afterwards.
func Rows[T any](rec arrow.RecordBatch) ([]T, error) {
	rows := make([]T, rec.NumRows())
	if err := readStruct(reflect.ValueOf(rows), recordColumns(rec)); err != nil {
		return nil, err
	}
	return rows, nil
}

// columns finds a column by name.
type columns func(name string) (arrow.Array, bool)

func recordColumns(rec arrow.RecordBatch) columns {
	return func(name string) (arrow.Array, bool) {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			return nil, false
		}
		return rec.Column(idx[0]), true
	}
}

func structColumns(s *array.Struct) columns {
	st := s.DataType().(*arrow.StructType)
	return func(name string) (arrow.Array, bool) {
		i, ok := st.FieldIdx(name)
		if !ok {
			return nil, false
		}
		return s.Field(i), true
	}
}

// readStruct fills every element of dst, a slice of structs, from cols, the
// columns of those structs in the same row order.
func readStruct(dst reflect.Value, cols columns) error {
	t := dst.Type().Elem()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			if err := readEmbedded(dst, i, cols); err != nil {
				return err
			}
			continue
		}
		name := strings.Split(f.Tag.Get("parquet"), ",")[0]
		col, ok := cols(name)
		if !ok {
			return fmt.Errorf("no column %q", name)
		}
		for row := range dst.Len() {
			if err := readValue(col, row, dst.Index(row).Field(i)); err != nil {
				return fmt.Errorf("column %s, row %d: %w", name, row, err)
			}
		}
	}
	return nil
}

// readEmbedded reads an embedded struct (schema.Resource), whose columns sit
// among the outer struct's.
func readEmbedded(dst reflect.Value, field int, cols columns) error {
	inner := reflect.MakeSlice(reflect.SliceOf(dst.Type().Elem().Field(field).Type), dst.Len(), dst.Len())
	if err := readStruct(inner, cols); err != nil {
		return err
	}
	for row := range dst.Len() {
		dst.Index(row).Field(field).Set(inner.Index(row))
	}
	return nil
}

func readValue(col arrow.Array, i int, dst reflect.Value) error {
	if dst.Kind() == reflect.Pointer {
		if col.IsNull(i) {
			return nil
		}
		dst.Set(reflect.New(dst.Type().Elem()))
		dst = dst.Elem()
	} else if col.IsNull(i) {
		return fmt.Errorf("null in a column that is not nullable")
	}
	switch a := col.(type) {
	case *array.String:
		return set(dst, reflect.String, strings.Clone(a.Value(i)))
	case *array.Boolean:
		return set(dst, reflect.Bool, a.Value(i))
	case *array.Int64:
		return set(dst, reflect.Int64, a.Value(i))
	case *array.Timestamp:
		return set(dst, reflect.Int64, int64(a.Value(i)))
	case *array.Float64:
		return set(dst, reflect.Float64, a.Value(i))
	case *array.Map:
		return readMap(a, i, dst)
	case *array.List:
		return readList(a, i, dst)
	}
	return fmt.Errorf("unexpected Arrow type %s", col.DataType())
}

func set(dst reflect.Value, kind reflect.Kind, v any) error {
	if dst.Kind() != kind {
		return fmt.Errorf("Arrow %T into Go %s", v, dst.Type())
	}
	dst.Set(reflect.ValueOf(v).Convert(dst.Type()))
	return nil
}

func readMap(a *array.Map, i int, dst reflect.Value) error {
	if dst.Type() != reflect.TypeFor[map[string]string]() {
		return fmt.Errorf("Arrow map into Go %s", dst.Type())
	}
	keys, items := a.Keys().(*array.String), a.Items().(*array.String)
	start, end := a.ValueOffsets(i)
	m := make(map[string]string, end-start)
	for j := int(start); j < int(end); j++ {
		if items.IsNull(j) {
			return fmt.Errorf("null map item for key %q", keys.Value(j))
		}
		k := strings.Clone(keys.Value(j))
		if _, dup := m[k]; dup {
			return fmt.Errorf("duplicate map key %q", k)
		}
		m[k] = strings.Clone(items.Value(j))
	}
	dst.Set(reflect.ValueOf(m))
	return nil
}

func readList(a *array.List, i int, dst reflect.Value) error {
	if dst.Kind() != reflect.Slice {
		return fmt.Errorf("Arrow list into Go %s", dst.Type())
	}
	start, end := a.ValueOffsets(i)
	n := int(end - start)
	out := reflect.MakeSlice(dst.Type(), n, n)
	values := array.NewSlice(a.ListValues(), start, end)
	defer values.Release()
	if s, ok := values.(*array.Struct); ok {
		if err := readStruct(out, structColumns(s)); err != nil {
			return err
		}
	} else {
		for j := range n {
			if err := readValue(values, j, out.Index(j)); err != nil {
				return err
			}
		}
	}
	if n > 0 {
		dst.Set(out)
	}
	return nil
}

// InvalidUTF8 lists the string values of rec, at any depth, that are not
// valid UTF-8, as "column[row]" paths: Parquet requires valid UTF-8, so the
// converters must replace what clients send.
func InvalidUTF8(rec arrow.RecordBatch) []string {
	var bad []string
	for c, col := range rec.Columns() {
		bad = invalidUTF8(bad, rec.Schema().Field(c).Name, col)
	}
	return bad
}

func invalidUTF8(bad []string, path string, a arrow.Array) []string {
	switch a := a.(type) {
	case *array.String:
		for i := range a.Len() {
			if a.IsValid(i) && !utf8.ValidString(a.Value(i)) {
				bad = append(bad, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	case *array.Map:
		bad = invalidUTF8(bad, path+".key", a.Keys())
		bad = invalidUTF8(bad, path+".value", a.Items())
	case *array.List:
		bad = invalidUTF8(bad, path+"[]", a.ListValues())
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		for f := range st.NumFields() {
			bad = invalidUTF8(bad, path+"."+st.Field(f).Name, a.Field(f))
		}
	}
	return bad
}
