package storage

import (
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// Limits bound what one Arc-protocol write request (MessagePack, line
// protocol) may hold. The store acknowledges a request once it is in the
// WAL; a request it can take but never flush (a flush of 16 000 columns
// needs gigabytes, one row per hour makes a partition each) would replay
// into the same failure on every start. So these are checked at the door,
// before anything is durable. Zero fields take the defaults.
type Limits struct {
	// MaxColumns bounds the columns of one measurement, time included.
	MaxColumns int
	// MaxStringBytes bounds one string value.
	MaxStringBytes int
	// MaxPartitionsPerRequest bounds the partitions (table and UTC hour)
	// one request writes to.
	MaxPartitionsPerRequest int
}

// Default limits: far above what Arc's clients and Telegraf send (tens to
// a few hundred columns, values of a few KiB, a request spanning an hour or
// two), low enough that the flush of a request stays within the memory
// bound (a partition's Parquet writer holds a buffer per column).
const (
	DefaultMaxColumns              = 1024
	DefaultMaxStringBytes          = 1 << 20
	DefaultMaxPartitionsPerRequest = 256
)

// ErrOverLimit reports a request over one of the Limits; ErrTooLarge one
// larger than the store can ever buffer. Neither can succeed on a retry:
// the receiver answers 413 (HTTP) or INVALID_ARGUMENT (Flight).
var (
	ErrOverLimit = errors.New("request over a limit")
	ErrTooLarge  = errors.New("request larger than the sidecar can ever buffer")
)

// WithDefaults is l with its zero fields set to the defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxColumns <= 0 {
		l.MaxColumns = DefaultMaxColumns
	}
	if l.MaxStringBytes <= 0 {
		l.MaxStringBytes = DefaultMaxStringBytes
	}
	if l.MaxPartitionsPerRequest <= 0 {
		l.MaxPartitionsPerRequest = DefaultMaxPartitionsPerRequest
	}
	return l
}

// CheckColumns checks a measurement's column count (time included)
// against MaxColumns; callers that know the count before building the
// record check it first, so an oversized one is never built.
func (l Limits) CheckColumns(measurement string, columns int) error {
	l = l.WithDefaults()
	if columns > l.MaxColumns {
		return fmt.Errorf("%w: measurement %q has %d columns, the limit is %d (-max-columns)", ErrOverLimit, measurement, columns, l.MaxColumns)
	}
	return nil
}

// CheckMeasurement is the door every Arc-protocol record passes before it
// is appended: the name rules of measurements and columns, the limits, and
// the table's own checks. It returns the measurement's table, named by
// the measurement's folder (MeasurementFolder). Records
// replayed from the WAL do not pass here: what was acknowledged under other
// limits is still stored.
func (l Limits) CheckMeasurement(name string, rec arrow.RecordBatch) (*Table, error) {
	l = l.WithDefaults()
	if err := l.CheckColumns(name, int(rec.NumCols())); err != nil {
		return nil, err
	}
	// The decoders named the columns with schema.ColumnNames; a record that
	// needs a rename did not come through them.
	var names schema.ColumnNames
	for _, f := range rec.Schema().Fields()[min(1, rec.NumCols()):] {
		err := schema.CheckColumnName(f.Name)
		if stored, _ := names.Store(f.Name); err == nil && stored != f.Name {
			err = fmt.Errorf("%w %q: taken by another column, ignoring case", schema.ErrBadColumnName, f.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("measurement %q: %w", name, err)
		}
	}
	folder, err := MeasurementFolder(name)
	if err != nil {
		return nil, err
	}
	t, err := MeasurementTable(folder, rec.Schema())
	if err != nil {
		return nil, err
	}
	if err := t.Check(rec); err != nil {
		return nil, fmt.Errorf("measurement %q: %w", name, err)
	}
	// After Check: it validated the offsets read here.
	for i, f := range rec.Schema().Fields() {
		s, ok := rec.Column(i).(*array.String)
		if !ok {
			continue
		}
		offs := s.ValueOffsets()
		for r := range s.Len() {
			if n := int(offs[r+1] - offs[r]); n > l.MaxStringBytes {
				return nil, fmt.Errorf("%w: measurement %q column %q row %d: a string of %d bytes, the limit is %d (-max-string-bytes)",
					ErrOverLimit, name, f.Name, r, n, l.MaxStringBytes)
			}
		}
	}
	return t, nil
}

// CheckRequest checks the partitions a request's batches write to
// against MaxPartitionsPerRequest.
func (l Limits) CheckRequest(batches []Batch) error {
	parts := l.Partitions()
	for _, b := range batches {
		ts, ok := b.Rec.Column(b.Table.timeCol).(*array.Timestamp)
		if !ok {
			continue
		}
		unit := ts.DataType().(*arrow.TimestampType).Unit
		if err := parts.Add(b.Database, b.Table.Name, unit, arrow.Int64Traits.CastFromBytes(arrow.TimestampTraits.CastToBytes(ts.Values()))); err != nil {
			return err
		}
	}
	return nil
}

// Partitions counts the partitions (table and UTC hour) a request writes
// to against MaxPartitionsPerRequest, as its rows are added. A caller that
// has a request's times before it builds its batches counts them first:
// a request of 90 000 one-row measurements is then refused for the cost of
// decoding it, not of building 90 000 records, schemas and IPC streams.
type Partitions struct {
	max  int
	seen map[requestPartition]struct{}
}

type requestPartition struct {
	database, table string
	hour            int64
}

// Partitions starts a count of a request's partitions.
func (l Limits) Partitions() *Partitions {
	return &Partitions{max: l.WithDefaults().MaxPartitionsPerRequest, seen: map[requestPartition]struct{}{}}
}

// Add counts the partitions of rows of a table at times, in unit since the
// epoch; past the limit it returns ErrOverLimit naming it.
func (p *Partitions) Add(database, table string, unit arrow.TimeUnit, times []int64) error {
	perHour := int64(time.Hour / unit.Multiplier())
	last, counted := int64(0), false
	for _, v := range times {
		// Rows come in runs of one hour: only a new hour needs the map.
		h := v / perHour
		if v%perHour < 0 {
			h-- // floored, as hourOf
		}
		if counted && h == last {
			continue
		}
		last, counted = h, true
		k := requestPartition{database, table, h}
		if _, ok := p.seen[k]; ok {
			continue
		}
		p.seen[k] = struct{}{}
		if len(p.seen) > p.max {
			return fmt.Errorf("%w: the request writes to more than %d partitions (measurement or table, and UTC hour; -max-partitions-per-request); send fewer measurements or hours per request",
				ErrOverLimit, p.max)
		}
	}
	return nil
}

// CheckFits refuses batches that can never be stored: larger together than
// the buffer (-max-buffer-bytes) or the WAL (-max-wal-bytes). Backpressure
// would refuse them on every retry, for ever.
func (s *Store) CheckFits(batches []Batch) error {
	var size int64
	for _, b := range batches {
		size += int64(len(b.IPC))
	}
	if size > s.opts.MaxBufferBytes {
		return fmt.Errorf("%w: %d bytes of Arrow IPC, the buffer holds %d (-max-buffer-bytes); send smaller requests", ErrTooLarge, size, s.opts.MaxBufferBytes)
	}
	if size > s.opts.MaxWALBytes {
		return fmt.Errorf("%w: %d bytes of Arrow IPC, the WAL holds %d (-max-wal-bytes); send smaller requests", ErrTooLarge, size, s.opts.MaxWALBytes)
	}
	return nil
}
