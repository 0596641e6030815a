package clickhouse

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/parquet-go/parquet-go"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// TableOptions shape the DDL.
type TableOptions struct {
	// TTL, if set, is a ClickHouse interval expression such as
	// "INTERVAL 30 DAY" after which rows expire.
	TTL string
	// DedupWindow is how many recent inserts MergeTree remembers to drop a
	// repeated insert_deduplication_token (a replayed WAL batch).
	DedupWindow int
}

// CreateTable returns the CREATE TABLE statement of one contract table in
// database. Types follow the Arrow schema; strings the Parquet schema
// dictionary-encodes become LowCardinality, attribute maps
// Map(LowCardinality(String), String), timestamps DateTime64(9, 'UTC').
func CreateTable(database string, t *schema.Table, o TableOptions) (string, error) {
	var cols []string
	for _, f := range t.Arrow.Fields() {
		typ, err := columnType(f.Type, f.Nullable, lowCardinality(t.Parquet, f.Name))
		if err != nil {
			return "", fmt.Errorf("column %s: %w", f.Name, err)
		}
		cols = append(cols, fmt.Sprintf("  %s %s", quote(f.Name), typ))
	}
	if slices.Contains(t.BloomColumns, schema.ColTraceID) {
		cols = append(cols, "  INDEX idx_trace_id trace_id TYPE bloom_filter(0.01) GRANULARITY 1")
	}
	order := make([]string, len(t.SortColumns))
	for i, c := range t.SortColumns {
		order[i] = quote(c)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s.%s\n(\n%s\n)\nENGINE = MergeTree\nPARTITION BY toDate(time)\nORDER BY (%s)\n",
		quote(database), quote(t.Name), strings.Join(cols, ",\n"), strings.Join(order, ", "))
	if o.TTL != "" {
		fmt.Fprintf(&b, "TTL toDateTime(time) + %s\n", o.TTL)
	}
	window := o.DedupWindow
	if window <= 0 {
		window = 10000
	}
	fmt.Fprintf(&b, "SETTINGS non_replicated_deduplication_window = %d", window)
	return b.String(), nil
}

func quote(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// lowCardinality reports whether the Parquet schema dictionary-encodes a
// top-level column: the contract's marker of a low-cardinality string.
func lowCardinality(s *parquet.Schema, name string) bool {
	f, ok := s.Lookup(name)
	if !ok {
		return false
	}
	enc := f.Node.Encoding()
	return enc != nil && enc.Encoding() == parquet.RLEDictionary.Encoding()
}

func columnType(dt arrow.DataType, nullable, lowCard bool) (string, error) {
	base, err := baseType(dt)
	if err != nil {
		return "", err
	}
	switch {
	case lowCard && nullable:
		return "LowCardinality(Nullable(" + base + "))", nil
	case lowCard:
		return "LowCardinality(" + base + ")", nil
	case nullable && canBeNullable(dt):
		return "Nullable(" + base + ")", nil
	}
	return base, nil
}

// canBeNullable: ClickHouse has no nullable composite types; a null list or
// map reads as an empty one, which is what the contract stores anyway.
func canBeNullable(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.LIST, arrow.MAP, arrow.STRUCT:
		return false
	}
	return true
}

func baseType(dt arrow.DataType) (string, error) {
	switch t := dt.(type) {
	case *arrow.TimestampType:
		return "DateTime64(9, 'UTC')", nil
	case *arrow.StringType:
		return "String", nil
	case *arrow.Int64Type:
		return "Int64", nil
	case *arrow.Int32Type:
		return "Int32", nil
	case *arrow.Float64Type:
		return "Float64", nil
	case *arrow.BooleanType:
		return "Bool", nil
	case *arrow.MapType:
		return "Map(LowCardinality(String), String)", nil
	case *arrow.ListType:
		elem, err := columnType(t.Elem(), t.ElemField().Nullable && canBeNullable(t.Elem()), false)
		if err != nil {
			return "", err
		}
		return "Array(" + elem + ")", nil
	case *arrow.StructType:
		fields := make([]string, len(t.Fields()))
		for i, f := range t.Fields() {
			ft, err := columnType(f.Type, f.Nullable, false)
			if err != nil {
				return "", fmt.Errorf("%s: %w", f.Name, err)
			}
			fields[i] = quote(f.Name) + " " + ft
		}
		return "Tuple(" + strings.Join(fields, ", ") + ")", nil
	}
	return "", fmt.Errorf("no ClickHouse type for Arrow %s", dt)
}
