package arcmsgpack

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// Rows gathers row-shaped writes (Arc's MessagePack row format, line
// protocol) into the same columns the columnar format decodes to, one
// Measurement per measurement name, as Arc stores them: each tag becomes a
// string column, each field a column of its type, and a field named like a
// tag of the same measurement becomes "<name>_value". A column missing from
// a row is null there.
type Rows struct {
	budget *Budget
	tables []*rowTable
	byName map[string]*rowTable
	cur    *rowTable
	// What the current row added, for Discard: the columns from curCols
	// on, the table itself when curNew, and the tags first seen.
	curCols int
	curNew  bool
	newTags []string
	renamed []renamedField
}

// renamedField is a field column of earlier rows that a tag of the
// current row renamed: its index, the name the client sent and the name
// it was stored under.
type renamedField struct {
	i            int
	sent, stored string
}

type rowTable struct {
	m     Measurement
	cols  map[string]int // by the name the client sent: index into m.Columns
	names schema.ColumnNames
	tags  map[string]bool
}

// What a measurement's row table and a column's entries in its maps take
// besides their Measurement and Column (TestRowsAreCharged).
const (
	rowTableCost  = 384
	rowColumnCost = 256
)

// TagFieldSuffix is appended to a field named like one of its
// measurement's tags, as Arc does.
const TagFieldSuffix = schema.TakenSuffix

// NewRows starts an empty set whose columns are charged to b.
func NewRows(b *Budget) *Rows {
	return &Rows{budget: b, byName: map[string]*rowTable{}}
}

// Begin starts a row of measurement name at ts, a stored timestamp
// (schema.TimestampUnit since the epoch); Tag and Field add to it and End
// closes it.
func (r *Rows) Begin(name string, ts int64) error {
	t := r.byName[name]
	r.curNew = t == nil
	if t == nil {
		if err := r.budget.take(measurementCost + rowTableCost + int64(len(name))); err != nil {
			return err
		}
		t = &rowTable{m: Measurement{Name: name}, cols: map[string]int{}, tags: map[string]bool{}}
		r.byName[name] = t
		r.tables = append(r.tables, t)
	}
	var err error
	if t.m.Time, err = push(r.budget, t.m.Time, ts, 0); err != nil {
		return err
	}
	r.cur, r.curCols, r.newTags, r.renamed = t, len(t.m.Columns), r.newTags[:0], r.renamed[:0]
	return nil
}

// Discard drops the current row, after Begin or any error of Tag, Field
// or a column's Append: every column is as it was before the row, columns
// and tags the row brought are gone, and so is a measurement it started.
// The memory it was charged stays charged.
func (r *Rows) Discard() {
	t := r.cur
	if t == nil {
		return
	}
	row := len(t.m.Time) - 1
	for _, c := range t.m.Columns[r.curCols:] {
		t.names.Forget(c.Name)
	}
	for sent, i := range t.cols {
		if i >= r.curCols {
			delete(t.cols, sent)
		}
	}
	for j := len(r.renamed) - 1; j >= 0; j-- {
		rf := r.renamed[j]
		col := &t.m.Columns[rf.i]
		t.names.Forget(col.Name)
		col.Name, _ = t.names.Store(rf.stored) // free again: it was taken before the row
		delete(t.cols, rf.sent+TagFieldSuffix)
		t.cols[rf.sent] = rf.i
	}
	t.m.Columns = t.m.Columns[:r.curCols]
	for i := range t.m.Columns {
		t.m.Columns[i].truncate(row)
	}
	t.m.Time = t.m.Time[:row]
	for _, k := range r.newTags {
		delete(t.tags, k)
	}
	if r.curNew {
		delete(r.byName, t.m.Name)
		r.tables = r.tables[:len(r.tables)-1]
	}
	r.cur = nil
}

// column returns the current row's column name, creating it (null in every
// earlier row) when it is new, under the name schema.ColumnNames gives it.
// It refuses a name set twice in one row.
func (r *Rows) column(name string) (*Column, error) {
	t := r.cur
	row := len(t.m.Time) - 1
	i, ok := t.cols[name]
	if !ok {
		stored, err := t.names.Store(name)
		if err != nil {
			return nil, inputErr("measurement %q: %v", t.m.Name, err)
		}
		col, err := NewColumn(stored, r.budget)
		if err != nil {
			return nil, err
		}
		for range row {
			if err := col.AppendNull(); err != nil {
				return nil, err
			}
		}
		// Its entries in the table's maps are charged as the column is.
		if err := r.budget.take(rowColumnCost); err != nil {
			return nil, err
		}
		if len(t.m.Columns) == cap(t.m.Columns) {
			// Grown as append grows it, from one (most row tables are
			// narrow), the whole new array charged.
			n := max(2*cap(t.m.Columns), 1)
			if err := r.budget.take(int64(n) * int64(unsafe.Sizeof(col))); err != nil {
				return nil, err
			}
			t.m.Columns = slices.Grow(t.m.Columns, n-len(t.m.Columns))
		}
		t.m.Columns = append(t.m.Columns, col)
		i = len(t.m.Columns) - 1
		t.cols[name] = i
	}
	col := &t.m.Columns[i]
	if col.rows > row {
		return nil, inputErr("measurement %q: %q appears twice in one row", t.m.Name, name)
	}
	return col, nil
}

// Tag sets a tag of the current row. A field of earlier rows named like
// it is renamed "<key>_value", the name it would have had after the tag:
// tags and fields are apart in InfluxDB, and a line's tag must not be
// refused, or its value go into the field's column, for the order of the
// lines.
func (r *Rows) Tag(key, value string) error {
	t := r.cur
	if i, ok := t.cols[key]; ok && i < r.curCols && !t.tags[key] {
		if err := r.renameField(key, i); err != nil {
			return err
		}
	}
	col, err := r.column(key)
	if err != nil {
		return err
	}
	if !r.cur.tags[key] {
		r.cur.tags[key] = true
		r.newTags = append(r.newTags, key)
	}
	return col.AppendString(value)
}

// renameField stores the field column i, which the client calls key,
// under "<key>_value" (Discard undoes it).
func (r *Rows) renameField(key string, i int) error {
	t := r.cur
	to := key + TagFieldSuffix
	if _, taken := t.cols[to]; taken {
		return inputErr("measurement %q: tag %q is named like a field of an earlier row, and %q, where such a field goes, is a field too", t.m.Name, key, to)
	}
	col := &t.m.Columns[i]
	old := col.Name
	t.names.Forget(old)
	stored, err := t.names.Store(to)
	if err != nil {
		col.Name, _ = t.names.Store(old)
		return inputErr("measurement %q: %v", t.m.Name, err)
	}
	r.renamed = append(r.renamed, renamedField{i: i, sent: key, stored: old})
	col.Name = stored
	delete(t.cols, key)
	t.cols[to] = i
	return nil
}

// Field returns the column a field of the current row goes to, for the
// caller to append its value with the Column's Append methods; a field
// named like a tag is renamed "<key>_value".
func (r *Rows) Field(key string) (*Column, error) {
	if r.cur.tags[key] {
		key += TagFieldSuffix
	}
	return r.column(key)
}

// End closes the current row: columns it did not set are null in it.
func (r *Rows) End() error {
	t := r.cur
	rows := len(t.m.Time)
	for i := range t.m.Columns {
		if c := &t.m.Columns[i]; c.rows < rows {
			if err := c.AppendNull(); err != nil {
				return err
			}
		}
	}
	r.cur = nil
	return nil
}

// Measurements returns what was gathered, in the order the measurements
// first appeared.
func (r *Rows) Measurements() []Measurement {
	out := make([]Measurement, 0, len(r.tables))
	for _, t := range r.tables {
		out = append(out, t.m)
	}
	return out
}

// Len is the number of rows gathered.
func (r *Rows) Len() int {
	n := 0
	for _, t := range r.tables {
		n += len(t.m.Time)
	}
	return n
}

// String names the set for debugging.
func (r *Rows) String() string {
	return fmt.Sprintf("%d measurements, %d rows", len(r.tables), r.Len())
}
