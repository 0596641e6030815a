package clickhouse

import (
	"fmt"
	"strings"

	"github.com/ClickHouse/ch-go/proto"
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/arc-otel/arc-otel/storage"
)

// block is the columns of one INSERT: record batches of one table schema
// appended column by column, no row-by-row work beyond what the native
// format itself needs (strings and LowCardinality indexes).
type block struct {
	schema *arrow.Schema
	names  []string
	cols   []column
}

func newBlock(t *storage.Table) (*block, error) {
	b := &block{schema: t.Arrow}
	for i, f := range t.Arrow.Fields() {
		c, err := tableColumn(t, i)
		if err != nil {
			return nil, err
		}
		b.names = append(b.names, f.Name)
		b.cols = append(b.cols, c)
	}
	return b, nil
}

// append adds every row of rec, which must have the block's schema.
func (b *block) append(rec arrow.RecordBatch) error {
	if !rec.Schema().Equal(b.schema) {
		return fmt.Errorf("record batch schema %s does not match the table's %s", rec.Schema(), b.schema)
	}
	for i, c := range b.cols {
		c.appendArrow(rec.Column(i))
	}
	return nil
}

func (b *block) rows() int {
	if len(b.cols) == 0 {
		return 0
	}
	return b.cols[0].Rows()
}

func (b *block) reset() {
	for _, c := range b.cols {
		c.reset()
	}
}

func (b *block) input() proto.Input {
	in := make(proto.Input, len(b.cols))
	for i, c := range b.cols {
		in[i] = proto.InputColumn{Name: b.names[i], Data: c}
	}
	return in
}

// insertQuery names the columns, so a measurement table that has more
// columns than this schema fills the others with their defaults (NULL).
func (b *block) insertQuery(database, table string) string {
	cols := make([]string, len(b.names))
	for i, n := range b.names {
		cols[i] = quote(n)
	}
	return fmt.Sprintf("INSERT INTO %s.%s (%s) VALUES", quote(database), quote(table), strings.Join(cols, ", "))
}
