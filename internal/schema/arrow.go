package schema

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// arrowSchemaOf derives the Arrow schema of a row type. It mirrors what
// parquet.SchemaOf derives from the same tags, so that a record batch maps
// one to one onto the Parquet columns; schema_test.go checks that.
func arrowSchemaOf(t reflect.Type) *arrow.Schema {
	return arrow.NewSchema(arrowFieldsOf(t), nil)
}

func arrowFieldsOf(t reflect.Type) []arrow.Field {
	var fields []arrow.Field
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			fields = append(fields, arrowFieldsOf(f.Type)...)
			continue
		}
		fields = append(fields, arrowFieldOf(f))
	}
	return fields
}

func arrowFieldOf(f reflect.StructField) arrow.Field {
	tag := strings.Split(f.Tag.Get("parquet"), ",")
	name := tag[0]
	timestamp := false
	for _, opt := range tag[1:] {
		if strings.HasPrefix(opt, "timestamp") {
			timestamp = true
		}
	}
	typ, nullable := arrowTypeOf(f.Type, timestamp)
	return arrow.Field{Name: name, Type: typ, Nullable: nullable}
}

func arrowTypeOf(t reflect.Type, timestamp bool) (arrow.DataType, bool) {
	switch t.Kind() {
	case reflect.Pointer:
		typ, _ := arrowTypeOf(t.Elem(), timestamp)
		return typ, true
	case reflect.String:
		return arrow.BinaryTypes.String, false
	case reflect.Bool:
		return arrow.FixedWidthTypes.Boolean, false
	case reflect.Int64:
		if timestamp {
			return TimestampType, false
		}
		return arrow.PrimitiveTypes.Int64, false
	case reflect.Float64:
		return arrow.PrimitiveTypes.Float64, false
	case reflect.Map:
		m := arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)
		m.SetItemNullable(false)
		return m, false
	case reflect.Slice:
		elem, _ := arrowTypeOf(t.Elem(), false)
		return arrow.ListOfNonNullable(elem), false
	case reflect.Struct:
		return arrow.StructOf(arrowFieldsOf(t)...), false
	}
	panic(fmt.Sprintf("schema: no Arrow type for Go type %s", t))
}
