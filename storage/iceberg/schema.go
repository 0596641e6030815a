package iceberg

import (
	"errors"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Column names the tables depend on.
const (
	timeColumn    = "time"
	hourFieldName = "time_hour"
)

// errConflict marks a file the table cannot take as it is: a column whose
// type differs from the table's (a measurement's field written as an
// integer, then as a string), or one the table requires and the file may
// leave null. The file stays in the folder tree for plain readers; the
// table never lists it.
var errConflict = errors.New("file does not fit the table's schema")

// icebergSchema is the table schema of a file or contract Arrow schema:
// Arrow's types and nullability, fresh field ids. Microsecond UTC
// timestamps are Iceberg timestamptz (format v2); nanoseconds are refused
// (only format v3 has them, and Spark and DuckDB read neither).
func icebergSchema(s *arrow.Schema) (*iceberg.Schema, error) {
	for _, f := range s.Fields() {
		if ts, ok := f.Type.(*arrow.TimestampType); ok && ts.Unit != arrow.Microsecond {
			return nil, fmt.Errorf("%w: column %q is a %s timestamp; Iceberg v2 tables take microseconds", errConflict, f.Name, ts.Unit)
		}
	}
	sc, err := table.ArrowSchemaToIcebergWithFreshIDs(s, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errConflict, err)
	}
	fields := sc.Fields()
	for i := range fields {
		fields[i].Type = optionalValues(fields[i].Type)
	}
	return iceberg.NewSchema(sc.ID, fields...), nil
}

// optionalValues makes the values of maps and the elements of lists
// optional, however the files declare them (the contract's are required):
// iceberg-go's scan reads them as nullable whatever the table says, and
// its ToArrowTable then refused to put its own batches in a table of the
// schema it announced (a panic). A table whose values are optional takes
// files whose values are required.
func optionalValues(t iceberg.Type) iceberg.Type {
	switch t := t.(type) {
	case *iceberg.StructType:
		fields := make([]iceberg.NestedField, len(t.FieldList))
		for i, f := range t.FieldList {
			f.Type = optionalValues(f.Type)
			fields[i] = f
		}
		return &iceberg.StructType{FieldList: fields}
	case *iceberg.ListType:
		return &iceberg.ListType{ElementID: t.ElementID, Element: optionalValues(t.Element), ElementRequired: false}
	case *iceberg.MapType:
		return &iceberg.MapType{KeyID: t.KeyID, KeyType: optionalValues(t.KeyType), ValueID: t.ValueID, ValueType: optionalValues(t.ValueType), ValueRequired: false}
	default:
		return t
	}
}

// partitionSpec is every table's spec: hour(time), the hive tree's own
// date=/hour= folders as one transform of the time column.
func partitionSpec(sc *iceberg.Schema) (iceberg.PartitionSpec, error) {
	f, ok := sc.FindFieldByName(timeColumn)
	if !ok {
		return iceberg.PartitionSpec{}, fmt.Errorf("%w: no %q column", errConflict, timeColumn)
	}
	return iceberg.NewPartitionSpecOpts(iceberg.AddPartitionFieldBySourceID(f.ID, hourFieldName, iceberg.HourTransform{}, sc, nil))
}

// fileSchema reads the Arrow schema of a Parquet file as the table
// reader (pqarrow) sees it.
func fileSchema(path string) (*arrow.Schema, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return fr.Schema()
}

// newColumns compares a file's schema with the table's by top-level column
// name: the columns the file adds (a measurement's new field; added to the
// table as optional), or errConflict naming the first column whose type
// differs.
func newColumns(tableSchema *iceberg.Schema, fileArrow *arrow.Schema) ([]iceberg.NestedField, error) {
	fs, err := icebergSchema(fileArrow)
	if err != nil {
		return nil, err
	}
	var added []iceberg.NestedField
	for _, f := range fs.Fields() {
		t, ok := tableSchema.FindFieldByName(f.Name)
		if !ok {
			added = append(added, f)
			continue
		}
		if !sameType(t.Type, f.Type) || t.Required && !f.Required {
			return nil, fmt.Errorf("%w: column %q is %s in the file and %s in the table", errConflict, f.Name, describe(f), describe(t))
		}
	}
	return added, nil
}

func describe(f iceberg.NestedField) string {
	if f.Required {
		return "required " + f.Type.String()
	}
	return "optional " + f.Type.String()
}

// sameType compares two types by structure and names, not field ids (a
// file's schema has none of its own). A required nested field in the
// table must be required in the file.
func sameType(table, file iceberg.Type) bool {
	switch t := table.(type) {
	case *iceberg.StructType:
		f, ok := file.(*iceberg.StructType)
		if !ok || len(t.FieldList) != len(f.FieldList) {
			return false
		}
		for i, tf := range t.FieldList {
			ff := f.FieldList[i]
			if tf.Name != ff.Name || tf.Required && !ff.Required || !sameType(tf.Type, ff.Type) {
				return false
			}
		}
		return true
	case *iceberg.ListType:
		f, ok := file.(*iceberg.ListType)
		return ok && !(t.ElementRequired && !f.ElementRequired) && sameType(t.Element, f.Element)
	case *iceberg.MapType:
		f, ok := file.(*iceberg.MapType)
		return ok && !(t.ValueRequired && !f.ValueRequired) && sameType(t.KeyType, f.KeyType) && sameType(t.ValueType, f.ValueType)
	default:
		return table.Equals(file)
	}
}
