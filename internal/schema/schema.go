// Package schema is the column contract shared by the exporter and the
// sidecar: table names, the row shape of every table, and the Arrow and
// Parquet schemas derived from that one definition. docs/SCHEMA.md documents
// it; a change here is a change of the on-disk format.
package schema

import (
	"fmt"
	"reflect"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/parquet-go/parquet-go"
)

// Table names, as they appear in the data directory and in the Flight
// descriptor path.
const (
	TableTraces  = "traces"
	TableLogs    = "logs"
	TableMetrics = "metrics"
	TableEvents  = "events"
)

// DefaultDatabase is the database used when a client names none.
const DefaultDatabase = "default"

// Column names that code refers to directly. Every other column name is
// spelled only in the struct tags of the row types.
const (
	ColTime           = "time"
	ColTraceID        = "trace_id"
	ColSpanID         = "span_id"
	ColServiceName    = "service_name"
	ColOperationName  = "operation_name"
	ColMetricName     = "metric_name"
	ColEventType      = "event_type"
	ColAttributes     = "attributes"
	ColAttributeTypes = "attribute_types"
)

// Table describes one table of the contract.
type Table struct {
	Name string
	// Row is the Go type of one row; its parquet tags define the column
	// order, types and encodings.
	Row reflect.Type
	// Arrow is the schema of record batches sent for this table.
	Arrow *arrow.Schema
	// Parquet is the schema of files written for this table.
	Parquet *parquet.Schema
	// BloomColumns are the columns that get a bloom filter: point lookups.
	BloomColumns []string
	// SortColumns order rows inside a file so that common filters prune.
	SortColumns []string
}

var tables = map[string]*Table{}

func register(name string, row any, bloom, sortBy []string) *Table {
	t := &Table{
		Name:         name,
		Row:          reflect.TypeOf(row),
		Parquet:      parquet.SchemaOf(row),
		BloomColumns: bloom,
		SortColumns:  sortBy,
	}
	t.Arrow = arrowSchemaOf(t.Row)
	tables[name] = t
	return t
}

// The four tables of the contract.
var (
	Traces  = register(TableTraces, Span{}, []string{ColTraceID, ColSpanID}, []string{ColServiceName, ColTime})
	Logs    = register(TableLogs, LogRecord{}, []string{ColTraceID}, []string{ColServiceName, ColTime})
	Metrics = register(TableMetrics, MetricPoint{}, nil, []string{ColMetricName, ColServiceName, ColTime})
	Events  = register(TableEvents, LogRecord{}, []string{ColTraceID}, []string{ColEventType, ColTime})
)

// Lookup returns the table of the given name.
func Lookup(name string) (*Table, bool) {
	t, ok := tables[name]
	return t, ok
}

// Names lists the tables of the contract in a stable order.
func Names() []string {
	names := make([]string, 0, len(tables))
	for n := range tables {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// FieldIndex returns the index of a top-level column in the Arrow schema and
// panics when it is missing: callers use it with the constants above, so a
// miss is a programming error caught by any test.
func (t *Table) FieldIndex(name string) int {
	idx := t.Arrow.FieldIndices(name)
	if len(idx) != 1 {
		panic(fmt.Sprintf("schema: table %s has no column %q", t.Name, name))
	}
	return idx[0]
}
