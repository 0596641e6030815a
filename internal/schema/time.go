package schema

import (
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// Every timestamp the contract stores is an INT64 count of microseconds
// since the Unix epoch, UTC: Parquet TIMESTAMP(MICROS, isAdjustedToUTC=true).
// That is what Spark, Iceberg format v2, BigQuery and Arc store (Spark
// refuses NANOS). Finer input is truncated to the microsecond, toward the
// earlier instant: OTLP times are unsigned, and every time the sidecar
// stores in a time column is after 1970, so truncation and flooring agree.
// Durations stay exact in their own nanosecond columns (duration_ns).
//
// The row types' tags spell the same unit (timestamp(microsecond)); a test
// checks that every timestamp column of every table is TimestampNode's.

// TimestampUnit is the unit of every stored timestamp.
const TimestampUnit = arrow.Microsecond

// TimestampType is the Arrow type of every timestamp column, nested ones
// included, and of the time column of the Arc-protocol measurements.
var TimestampType = &arrow.TimestampType{Unit: TimestampUnit, TimeZone: "UTC"}

// TimestampNode is the Parquet node of a timestamp column.
func TimestampNode() parquet.Node { return parquet.Timestamp(parquetUnit(TimestampUnit)) }

func parquetUnit(u arrow.TimeUnit) parquet.TimeUnit {
	switch u {
	case arrow.Millisecond:
		return parquet.Millisecond
	case arrow.Microsecond:
		return parquet.Microsecond
	case arrow.Nanosecond:
		return parquet.Nanosecond
	}
	panic(fmt.Sprintf("schema: no Parquet timestamp unit for %s", u))
}

// tick is one TimestampUnit in nanoseconds.
const tick = int64(time.Microsecond)

func init() {
	if tick != int64(TimestampUnit.Multiplier()) {
		panic("schema: tick is not one TimestampUnit")
	}
}

// TimestampsPerHour is how many stored units an hour holds: partitions are
// hours of the stored time.
const TimestampsPerHour = int64(time.Hour) / tick

// TimestampFromUnixNano converts an OTLP time (unsigned nanoseconds since
// the epoch, what pdata holds) to a stored timestamp. Every OTLP time fits.
func TimestampFromUnixNano(ns uint64) int64 { return int64(ns / uint64(tick)) }

// TimestampToUnixNano converts a stored timestamp back to an OTLP time.
func TimestampToUnixNano(ts int64) uint64 { return uint64(ts) * uint64(tick) }

// TimestampFromNanos converts signed nanoseconds since the epoch (the
// files and WAL records of earlier builds) to a stored timestamp.
func TimestampFromNanos(ns int64) int64 { return ns / tick }

// TimestampOf is t as a stored timestamp.
func TimestampOf(t time.Time) int64 {
	return t.Unix()*(int64(time.Second)/tick) + int64(t.Nanosecond())/tick
}

// maxFuture bounds how far ahead of the clock a row's time may be:
// further is a unit mix-up (seconds sent as microseconds and the like)
// that would scatter rows into partitions nobody queries.
const maxFuture = 366 * 24 * time.Hour

// LatestTime is the latest stored time a row may have when the clock reads
// now; the earliest is 0 (1970). The sidecar refuses rows outside, and
// the exporter drops them when the sidecar says a batch held one.
func LatestTime(now time.Time) int64 { return TimestampOf(now.Add(maxFuture)) }

// TimeRange says which times a row may have, for messages.
const TimeRange = "want 1970-01-01 to one year from now"

// TimestampTime is the instant of a stored timestamp, in UTC.
func TimestampTime(ts int64) time.Time { return time.UnixMicro(ts).UTC() }

// ScaleTimestamp converts an integer count of unit since the epoch (a
// client's seconds, milliseconds, microseconds or nanoseconds) to a stored
// timestamp; false when it does not fit in 64 bits.
func ScaleTimestamp(v int64, unit time.Duration) (int64, bool) {
	if n := int64(unit); n < tick {
		return v / (tick / n), true
	}
	m := int64(unit) / tick
	if v > math.MaxInt64/m || v < math.MinInt64/m {
		return 0, false
	}
	return v * m, true
}

// ScaleFloatTimestamp is ScaleTimestamp for a float count of unit.
func ScaleFloatTimestamp(v float64, unit time.Duration) (int64, bool) {
	ts := v * (float64(unit) / float64(tick))
	if math.IsNaN(ts) || ts >= math.MaxInt64 || ts < math.MinInt64 {
		return 0, false
	}
	return int64(ts), true
}

// StoredTimes returns rec with every timestamp column, nested ones
// included, in TimestampUnit, finer units truncated toward zero: the WAL
// records and Parquet files of earlier builds (nanoseconds), and readers
// that widen times to nanoseconds, become the contract's record. A record
// already in the unit is returned as is, retained; either way the caller
// releases what it gets.
func StoredTimes(rec arrow.RecordBatch) arrow.RecordBatch { return TimesIn(rec, TimestampUnit) }

// StoredSchema is s with its timestamps in TimestampUnit: the schema of
// StoredTimes's records.
func StoredSchema(s *arrow.Schema) *arrow.Schema { return SchemaTimesIn(s, TimestampUnit) }

// SchemaTimesIn is s with its timestamps in unit: with arrow.Nanosecond,
// the schema earlier builds wrote a table's records with.
func SchemaTimesIn(s *arrow.Schema, unit arrow.TimeUnit) *arrow.Schema {
	fields, changed := fieldsIn(s.Fields(), unit)
	if !changed {
		return s
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// TimesIn is StoredTimes for any unit: tests make the records of earlier
// builds with it (arrow.Nanosecond).
func TimesIn(rec arrow.RecordBatch, unit arrow.TimeUnit) arrow.RecordBatch {
	fields, changed := fieldsIn(rec.Schema().Fields(), unit)
	if !changed {
		rec.Retain()
		return rec
	}
	md := rec.Schema().Metadata()
	s := arrow.NewSchema(fields, &md)
	cols := make([]arrow.Array, len(fields))
	for i, col := range rec.Columns() {
		d := dataIn(col.Data(), fields[i].Type)
		cols[i] = array.MakeFromData(d)
		d.Release()
	}
	out := array.NewRecordBatch(s, cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out
}

// fieldsIn are fields with their timestamps in unit, and whether that
// changed any.
func fieldsIn(fields []arrow.Field, unit arrow.TimeUnit) ([]arrow.Field, bool) {
	out := make([]arrow.Field, len(fields))
	changed := false
	for i, f := range fields {
		var c bool
		out[i] = f
		if out[i].Type, c = typeIn(f.Type, unit); c {
			changed = true
		}
	}
	return out, changed
}

// typeIn is dt with its timestamps in unit, and whether that changed
// anything.
func typeIn(dt arrow.DataType, unit arrow.TimeUnit) (arrow.DataType, bool) {
	switch t := dt.(type) {
	case *arrow.TimestampType:
		if t.Unit == unit {
			return dt, false
		}
		return &arrow.TimestampType{Unit: unit, TimeZone: t.TimeZone}, true
	case *arrow.ListType:
		f := t.ElemField()
		var c bool
		if f.Type, c = typeIn(f.Type, unit); !c {
			return dt, false
		}
		return arrow.ListOfField(f), true
	case *arrow.MapType:
		k, kc := typeIn(t.KeyType(), unit)
		v, vc := typeIn(t.ItemType(), unit)
		if !kc && !vc {
			return dt, false
		}
		m := arrow.MapOf(k, v)
		m.SetItemNullable(t.ItemField().Nullable)
		return m, true
	case *arrow.StructType:
		fields, changed := fieldsIn(t.Fields(), unit)
		if !changed {
			return dt, false
		}
		return arrow.StructOf(fields...), true
	}
	return dt, false
}

// dataIn rebuilds d as type dt (typeIn of d's type): the values of
// timestamps are converted, everything else is shared.
func dataIn(d arrow.ArrayData, dt arrow.DataType) arrow.ArrayData {
	if arrow.TypeEqual(d.DataType(), dt) {
		d.Retain()
		return d
	}
	bufs := d.Buffers()
	if from, ok := d.DataType().(*arrow.TimestampType); ok {
		n := d.Offset() + d.Len()
		vals := make([]int64, n)
		if len(bufs) > 1 && bufs[1] != nil && n > 0 {
			src := arrow.Int64Traits.CastFromBytes(bufs[1].Bytes())[:n]
			mul, div := unitRatio(from.Unit, dt.(*arrow.TimestampType).Unit)
			for i, v := range src {
				vals[i] = v * mul / div
			}
		}
		buf := memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(vals))
		return array.NewData(dt, d.Len(), []*memory.Buffer{bufs[0], buf}, nil, d.NullN(), d.Offset())
	}
	var childTypes []arrow.DataType
	switch t := dt.(type) {
	case *arrow.ListType:
		childTypes = []arrow.DataType{t.Elem()}
	case *arrow.MapType:
		childTypes = []arrow.DataType{t.Elem()}
	case *arrow.StructType:
		for _, f := range t.Fields() {
			childTypes = append(childTypes, f.Type)
		}
	}
	children := make([]arrow.ArrayData, len(d.Children()))
	for i, c := range d.Children() {
		children[i] = dataIn(c, childTypes[i])
	}
	out := array.NewData(dt, d.Len(), bufs, children, d.NullN(), d.Offset())
	for _, c := range children {
		c.Release()
	}
	return out
}

// unitRatio: a value in from times mul over div is in to.
func unitRatio(from, to arrow.TimeUnit) (mul, div int64) {
	f, t := int64(from.Multiplier()), int64(to.Multiplier())
	if f < t {
		return 1, t / f
	}
	return f / t, 1
}

// StoredParquet is a Parquet schema of a file with its timestamp columns
// in TimestampUnit, and whether any was not: the schema compaction
// rewrites a file of an earlier build with (nanoseconds). Column order,
// repetition, encodings and compression stay the file's.
func StoredParquet(s *parquet.Schema) (*parquet.Schema, bool) {
	return ParquetTimesIn(s, TimestampUnit)
}

// ParquetTimesIn is StoredParquet for any unit: tests write the files of
// earlier builds with it (arrow.Nanosecond).
func ParquetTimesIn(s *parquet.Schema, unit arrow.TimeUnit) (*parquet.Schema, bool) {
	n, changed := nodeTimesIn(s, parquetUnit(unit))
	if !changed {
		return s, false
	}
	return parquet.NewSchema(s.Name(), n), true
}

func nodeTimesIn(n parquet.Node, unit parquet.TimeUnit) (parquet.Node, bool) {
	if n.Leaf() {
		lt := n.Type().LogicalType()
		if lt == nil {
			return n, false
		}
		ts, ok := lt.Value.(*format.TimestampType)
		want := unit.TimeUnit()
		if !ok || ts.Unit.String() == want.String() {
			return n, false
		}
		return &timeLeaf{Node: n, typ: parquet.TimestampAdjusted(unit, ts.IsAdjustedToUTC).Type()}, true
	}
	fields := n.Fields()
	out := make([]parquet.Field, len(fields))
	changed := false
	for i, f := range fields {
		c, ok := nodeTimesIn(f, unit)
		if !ok {
			out[i] = f
			continue
		}
		out[i], changed = &field{Node: c, of: f}, true
	}
	if !changed {
		return n, false
	}
	return &group{Node: n, fields: out}, true
}

// timeLeaf, group and field are a node of another schema with another
// timestamp type, fields or child: parquet-go's own groups (parquet.Group)
// order their fields by name, and files keep theirs. Pointers: parquet-go
// keys maps by node.
type timeLeaf struct {
	parquet.Node
	typ parquet.Type
}

func (l *timeLeaf) Type() parquet.Type { return l.typ }

type group struct {
	parquet.Node
	fields []parquet.Field
}

func (g *group) Fields() []parquet.Field { return g.fields }

type field struct {
	parquet.Node
	of parquet.Field
}

func (f *field) Name() string                           { return f.of.Name() }
func (f *field) Value(base reflect.Value) reflect.Value { return f.of.Value(base) }
