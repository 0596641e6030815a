package storage

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/parquet-go/parquet-go"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// Table is what storage needs to know of a table: its schemas and where the
// time that partitions it lives.
type Table struct {
	Name         string
	Arrow        *arrow.Schema
	Parquet      *parquet.Schema
	BloomColumns []string
	timeCol      int
}

// Errors that name what is wrong with a batch; the receiver maps them to
// InvalidArgument.
var (
	ErrUnknownTable   = errors.New("unknown table")
	ErrSchemaMismatch = errors.New("record batch schema does not match the table")
	ErrNullInRequired = errors.New("null in a non-nullable column")
	ErrInvalidUTF8    = errors.New("string is not valid UTF-8")
)

var tables = func() map[string]*Table {
	m := map[string]*Table{}
	for _, name := range schema.Names() {
		st, _ := schema.Lookup(name)
		m[name] = &Table{
			Name:         st.Name,
			Arrow:        st.Arrow,
			Parquet:      st.Parquet,
			BloomColumns: st.BloomColumns,
			timeCol:      st.FieldIndex(schema.ColTime),
		}
	}
	return m
}()

// LookupTable returns the table of the given name.
func LookupTable(name string) (*Table, error) {
	t, ok := tables[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (want one of %v)", ErrUnknownTable, name, schema.Names())
	}
	return t, nil
}

// Check validates a record batch for the table before anything of it is
// written: the schema must be the table's, non-nullable columns must hold no
// nulls, and strings must be UTF-8 (Parquet strings are, and one bad value
// would make a whole file unreadable to strict engines).
func (t *Table) Check(rec arrow.RecordBatch) error {
	if !rec.Schema().Equal(t.Arrow) {
		return fmt.Errorf("%w %s: got %s", ErrSchemaMismatch, t.Name, describe(rec.Schema(), t.Arrow))
	}
	for i, f := range t.Arrow.Fields() {
		if err := checkArray(f.Name, f.Nullable, rec.Column(i)); err != nil {
			return err
		}
	}
	return nil
}

// describe names the first difference between two schemas.
func describe(got, want *arrow.Schema) string {
	if got.NumFields() != want.NumFields() {
		return fmt.Sprintf("%d columns, want %d", got.NumFields(), want.NumFields())
	}
	for i := range want.NumFields() {
		g, w := got.Field(i), want.Field(i)
		if !g.Equal(w) {
			return fmt.Sprintf("column %d %q %s (nullable=%t), want %q %s (nullable=%t)",
				i, g.Name, g.Type, g.Nullable, w.Name, w.Type, w.Nullable)
		}
	}
	return "schema metadata differs"
}

func checkArray(name string, nullable bool, arr arrow.Array) error {
	if !nullable && arr.NullN() > 0 {
		return fmt.Errorf("%w %q", ErrNullInRequired, name)
	}
	switch a := arr.(type) {
	case *array.String:
		for i := range a.Len() {
			if !utf8.ValidString(a.Value(i)) {
				return fmt.Errorf("%w: column %q row %d", ErrInvalidUTF8, name, i)
			}
		}
	case *array.Map:
		mt := a.DataType().(*arrow.MapType)
		if err := checkArray(name+".key", false, a.Keys()); err != nil {
			return err
		}
		return checkArray(name+".value", mt.ItemField().Nullable, a.Items())
	case *array.List:
		lt := a.DataType().(*arrow.ListType)
		return checkArray(name+".element", lt.ElemField().Nullable, a.ListValues())
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		for i, f := range st.Fields() {
			if err := checkArray(name+"."+f.Name, f.Nullable, a.Field(i)); err != nil {
				return err
			}
		}
	}
	return nil
}
