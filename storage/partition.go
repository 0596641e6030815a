package storage

import (
	"path/filepath"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/layout"
)

// Layout of the data directory (package layout).
const (
	systemDirName = layout.SystemDirName
	walDirName    = layout.WALDirName
	tmpDirName    = layout.TmpDirName
	intentName    = "flush-intent.json"
	parquetExt    = layout.ParquetExt
)

// partKey names one partition: a table of a database and one UTC hour.
type partKey struct {
	database string
	table    string
	hour     int64  // hours since the Unix epoch, floored
	variant  uint64 // schema of a measurement table (Table.variant)
}

// hourOf is the hour since the epoch of a stored timestamp, floored.
func hourOf(ts int64) int64 {
	h := ts / schema.TimestampsPerHour
	if ts%schema.TimestampsPerHour < 0 {
		h--
	}
	return h
}

// dir returns the partition's directory: date=YYYY-MM-DD/hour=H with an
// unpadded hour, which engines read as an integer (hour=09 reads as text).
func (k partKey) dir(dataDir string) string {
	t := schema.TimestampTime(k.hour * schema.TimestampsPerHour)
	return filepath.Join(dataDir, k.database, k.table,
		"date="+t.Format(time.DateOnly), "hour="+strconv.Itoa(t.Hour()))
}

// split groups the rows of rec by the UTC hour of its time column. The
// common case, every row in one hour, returns that hour with nil rows.
func split(rec arrow.RecordBatch, timeCol int) (hours []int64, rows [][]int32) {
	ts := rec.Column(timeCol).(*array.Timestamp).Values()
	if len(ts) == 0 {
		return nil, nil
	}
	first := hourOf(int64(ts[0]))
	i := 1
	for i < len(ts) && hourOf(int64(ts[i])) == first {
		i++
	}
	if i == len(ts) {
		return []int64{first}, [][]int32{nil}
	}
	index := map[int64]int{}
	for r, t := range ts {
		h := hourOf(int64(t))
		k, ok := index[h]
		if !ok {
			k = len(hours)
			index[h] = k
			hours = append(hours, h)
			rows = append(rows, nil)
		}
		rows[k] = append(rows[k], int32(r))
	}
	return hours, rows
}
