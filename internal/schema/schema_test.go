package schema

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/parquet-go/parquet-go/format"
	"github.com/stretchr/testify/assert"
)

func TestArrowSchemaMatchesParquet(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			tbl, _ := Lookup(name)
			fields := tbl.Parquet.Fields()
			if assert.Len(t, tbl.Arrow.Fields(), len(fields)) {
				for i, f := range fields {
					af := tbl.Arrow.Field(i)
					assert.Equal(t, f.Name(), af.Name, "column %d", i)
					assert.Equal(t, f.Optional(), af.Nullable, "nullability of %s", af.Name)
				}
			}
			t.Log(tbl.Parquet.String())
		})
	}
}

// TestTimestampsAreMicros checks that every timestamp column, nested ones
// included, is TimestampNode's Parquet type and TimestampType in Arrow:
// the row types' tags spell the unit, TimestampUnit is the fact.
func TestTimestampsAreMicros(t *testing.T) {
	want := TimestampNode().Type()
	for _, name := range Names() {
		tbl, _ := Lookup(name)
		var found []string
		for _, path := range tbl.Parquet.Columns() {
			leaf, _ := tbl.Parquet.Lookup(path...)
			if lt := leaf.Node.Type().LogicalType(); lt != nil && isTimestamp(lt.Value) {
				found = append(found, strings.Join(path, "."))
				assert.Equal(t, want.String(), leaf.Node.Type().String(), "%s.%s", name, strings.Join(path, "."))
			}
		}
		assert.NotEmpty(t, found, name)
		var arrowTS int
		var walk func(arrow.DataType)
		walk = func(dt arrow.DataType) {
			switch dt := dt.(type) {
			case *arrow.TimestampType:
				arrowTS++
				assert.True(t, arrow.TypeEqual(dt, TimestampType), "%s: %s", name, dt)
			case arrow.NestedType:
				for _, f := range dt.Fields() {
					walk(f.Type)
				}
			}
		}
		for _, f := range tbl.Arrow.Fields() {
			walk(f.Type)
		}
		assert.Equal(t, len(found), arrowTS, "%s: Arrow and Parquet timestamp columns", name)
	}
	assert.Equal(t, "TIMESTAMP(isAdjustedToUTC=true,unit=MICROS)", want.String())
}

func TestTimestampConversions(t *testing.T) {
	at := time.Date(2026, 11, 27, 13, 14, 15, 123456789, time.UTC)
	ts := TimestampOf(at)
	assert.Equal(t, at.UnixMicro(), ts)
	assert.Equal(t, at.Truncate(time.Microsecond), TimestampTime(ts))
	assert.Equal(t, ts, TimestampFromUnixNano(uint64(at.UnixNano())))
	assert.Equal(t, ts, TimestampFromNanos(at.UnixNano()))
	assert.Equal(t, uint64(at.Truncate(time.Microsecond).UnixNano()), TimestampToUnixNano(ts))
	// OTLP's unsigned nanoseconds past 2262 fit too, and come back.
	assert.Equal(t, uint64(math.MaxUint64/1000*1000), TimestampToUnixNano(TimestampFromUnixNano(math.MaxUint64)))
	assert.Equal(t, TimestampTime(ts).Truncate(time.Hour), TimestampTime(ts/TimestampsPerHour*TimestampsPerHour))
	for _, c := range []struct {
		v    int64
		unit time.Duration
		want int64
	}{
		{at.Unix(), time.Second, at.Unix() * 1e6},
		{at.UnixMilli(), time.Millisecond, at.UnixMilli() * 1e3},
		{at.UnixMicro(), time.Microsecond, ts},
		{at.UnixNano(), time.Nanosecond, ts},
		{1999, time.Nanosecond, 1},
	} {
		got, ok := ScaleTimestamp(c.v, c.unit)
		assert.True(t, ok)
		assert.Equal(t, c.want, got, "%d %s", c.v, c.unit)
	}
	_, ok := ScaleTimestamp(math.MaxInt64/10, time.Second)
	assert.False(t, ok, "overflow")
	got, ok := ScaleFloatTimestamp(1.5, time.Second)
	assert.True(t, ok)
	assert.Equal(t, int64(1_500_000), got)
	_, ok = ScaleFloatTimestamp(math.NaN(), time.Second)
	assert.False(t, ok)
}

func isTimestamp(v format.LogicalTypeValue) bool {
	_, ok := v.(*format.TimestampType)
	return ok
}
