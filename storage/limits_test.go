package storage

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

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
