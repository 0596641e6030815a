package storage

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/storagetest"
)

// TestCheckRequestCountsEveryPartition: partitions are counted across the
// request's batches, whether a batch's rows come in runs of one hour or
// alternate between hours.
func TestCheckRequestCountsEveryPartition(t *testing.T) {
	tbl := logsTable(t)
	hours := func(hs ...int) []time.Time {
		out := make([]time.Time, len(hs))
		for i, h := range hs {
			out[i] = t0.Add(time.Duration(h) * time.Hour)
		}
		return out
	}
	for _, tt := range []struct {
		name    string
		batches [][]int // hours of each batch's rows
		limit   int
		ok      bool
	}{
		{"runs within the limit", [][]int{{0, 0, 0, 1, 1}}, 2, true},
		{"runs over the limit", [][]int{{0, 0, 1, 1, 2, 2}}, 2, false},
		{"alternating within the limit", [][]int{{0, 1, 0, 1, 0}}, 2, true},
		{"a new hour after a run returns", [][]int{{0, 0, 1, 0, 2}}, 2, false},
		{"the same hours in two batches", [][]int{{0, 1}, {1, 0}}, 2, true},
		{"a third hour in the second batch", [][]int{{0, 1}, {1, 2}}, 2, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var batches []Batch
			for i, hs := range tt.batches {
				rec, _ := storagetest.LogBatch(t, fmt.Sprint(i), hours(hs...)...)
				defer rec.Release()
				batches = append(batches, Batch{Database: "default", Table: tbl, Rec: rec})
			}
			err := Limits{MaxPartitionsPerRequest: tt.limit}.CheckRequest(batches)
			if tt.ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrOverLimit)
			}
		})
	}
}

// TestCheckMeasurementRefusesTakenNames: the door refuses a record whose
// column names the decoders would have renamed (a reserved name in any
// case, two names equal but for case), so no such file is ever written.
func TestCheckMeasurementRefusesTakenNames(t *testing.T) {
	for _, tt := range []struct {
		cols []string
		msg  string
	}{
		{[]string{"v", "Date"}, `bad column name "Date": reserved`},
		{[]string{"TIME"}, `bad column name "TIME": reserved`},
		{[]string{"usage", "Usage"}, `bad column name "Usage": taken`},
		{[]string{"usage", "Usage_value"}, ""},
	} {
		t.Run(fmt.Sprint(tt.cols), func(t *testing.T) {
			fields := []arrow.Field{{Name: "time", Type: utcMicros}}
			for _, c := range tt.cols {
				fields = append(fields, arrow.Field{Name: c, Type: arrow.PrimitiveTypes.Int64, Nullable: true})
			}
			b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
			defer b.Release()
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(t0.UnixMicro()))
			for i := range tt.cols {
				b.Field(i + 1).(*array.Int64Builder).Append(1)
			}
			rec := b.NewRecordBatch()
			defer rec.Release()
			_, err := Limits{}.CheckMeasurement("cpu", rec)
			if tt.msg == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, schema.ErrBadColumnName)
			assert.ErrorContains(t, err, tt.msg)
		})
	}
}

// TestPartitionsCountHoursInAnyUnit: the same instants count the same
// partitions whatever the time column's unit, hours before the epoch
// floored as the partitions' folders are.
func TestPartitionsCountHoursInAnyUnit(t *testing.T) {
	instants := []time.Duration{-time.Hour - 1, -1, 0, time.Hour - 1, time.Hour, 3 * time.Hour}
	for _, unit := range []arrow.TimeUnit{arrow.Nanosecond, arrow.Microsecond, arrow.Millisecond, arrow.Second} {
		t.Run(unit.String(), func(t *testing.T) {
			times := make([]int64, len(instants))
			for i, d := range instants {
				times[i] = int64(d / unit.Multiplier())
				if d < 0 && d%unit.Multiplier() != 0 {
					times[i]-- // floored to the unit, as a clock would read it
				}
			}
			// -2h..-1h, -1h..0, 0..1h, 1h..2h, 3h..4h: five partitions.
			assert.NoError(t, Limits{MaxPartitionsPerRequest: 5}.Partitions().Add("default", "cpu", unit, times))
			err := Limits{MaxPartitionsPerRequest: 4}.Partitions().Add("default", "cpu", unit, times)
			assert.ErrorIs(t, err, ErrOverLimit)
			assert.ErrorContains(t, err, "more than 4 partitions")
			parts := Limits{MaxPartitionsPerRequest: 5}.Partitions()
			assert.NoError(t, parts.Add("default", "cpu", unit, times))
			assert.ErrorIs(t, parts.Add("other", "cpu", unit, times[:1]), ErrOverLimit, "another database's hour is another partition")
		})
	}
}
