package lineproto

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unsafe"

	"github.com/influxdata/line-protocol/v2/lineprotocol"

	"github.com/arc-otel/arc-otel/internal/arcmsgpack"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage"
)

// ErrInput marks an error in the request body, the client's fault: the
// same sentinel as the MessagePack decoder's, so callers answer both alike.
var ErrInput = arcmsgpack.ErrInput

// Error is a body error with the one-based line it is on.
type Error struct {
	Line int64
	Msg  string
	// syntax marks a line the parser could not read: its message
	// becomes InfluxDB's "unable to parse '<line>': <reason>".
	syntax bool
}

func (e *Error) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// Unwrap makes every Error an ErrInput.
func (e *Error) Unwrap() error { return ErrInput }

// Precision is a timestamp unit, in nanoseconds.
type Precision int64

// ParsePrecision reads a precision parameter as InfluxDB 1.x and 2.x spell
// it: ns/n (the default, also for ""), us/u/µ, ms, s, and with hours true
// (1.x only) m and h.
func ParsePrecision(s string, hours bool) (Precision, error) {
	switch s {
	case "", "ns", "n":
		return 1, nil
	case "us", "u", "µ":
		return 1e3, nil
	case "ms":
		return 1e6, nil
	case "s":
		return 1e9, nil
	}
	if hours {
		switch s {
		case "m":
			return 60e9, nil
		case "h":
			return 3600e9, nil
		}
		return 0, fmt.Errorf("invalid precision %q: want ns, n, us, u, ms, s, m or h", s)
	}
	return 0, fmt.Errorf("invalid precision %q: want ns, us, ms or s", s)
}

// Result is what Decode made of a body: the measurements of its good
// lines, and how many lines it dropped, with the first one's error.
type Result struct {
	Measurements []arcmsgpack.Measurement
	Dropped      int
	First        *Error
}

// Decode reads a whole line-protocol body. A line without a timestamp is
// stamped now (a stored timestamp, schema.TimestampOf); timestamps are
// stored in microseconds, finer ones truncated. A bad line is dropped and
// the others kept, as InfluxDB does: one it cannot parse, one whose
// measurement name cannot be stored (storage.MeasurementFolder), whose
// time the tables refuse (before 1970, or past schema.LatestTime), whose
// columns or values no file may hold, or whose field has another type
// than on an earlier line of the body. Every column is charged to b; past
// it Decode stops with arcmsgpack.ErrTooLarge, and the whole body is
// refused, as is a body without a line. A line that no request could
// store is dropped too: a tag or string value longer than MaxStringBytes,
// more tags and fields than MaxColumns allows. Limits a body passes only
// as a whole (its measurements' columns together, its partitions) are the
// store path's, which refuses the body with 413: clients that split a
// refused batch (Telegraf's influxdb_v2 output) then store all of it.
func Decode(body []byte, prec Precision, now int64, b *arcmsgpack.Budget, limits storage.Limits) (Result, error) {
	d := decoder{body: body, rows: arcmsgpack.NewRows(b), kinds: map[fieldKey]kindSeen{}, prec: prec, now: now, names: map[string]string{}, budget: b,
		limits: limits.WithDefaults(), latest: schema.LatestTime(time.Now())}
	if err := d.all(); err != nil {
		return Result{}, err
	}
	if d.rows.Len() == 0 && d.res.Dropped == 0 {
		return Result{}, fmt.Errorf("%w: the body holds no line", ErrInput)
	}
	d.res.Measurements = d.rows.Measurements()
	return d.res, nil
}

type fieldKey struct{ measurement, field string }

// kindSeen is a field's type in this request and the line of the first
// row that stored it: InfluxDB drops a point whose field changes type, and
// so do we, within a request (across requests the table's schema decides).
type kindSeen struct {
	kind lineprotocol.ValueKind
	line int64
}

type decoder struct {
	body  []byte
	rows  *arcmsgpack.Rows
	kinds map[fieldKey]kindSeen
	prec  Precision
	now   int64
	// latest is the latest time the tables accept (schema.LatestTime).
	latest int64
	// line is the current entry's line; counted, offset the position it
	// was counted to.
	line, counted int64
	offset        int
	// names interns measurement names, tag keys and values and field keys:
	// they repeat on every line, and a lookup by a byte slice allocates
	// nothing.
	names  map[string]string
	budget *arcmsgpack.Budget
	limits storage.Limits
	tags   [][2]string
	fields []fieldValue
	res    Result
}

// maxInterned is the longest text interned; longer tag values are rare
// and seldom repeat.
const maxInterned = 128

func (d *decoder) intern(b []byte) (string, error) {
	if s, ok := d.names[string(b)]; ok {
		return s, nil
	}
	s := string(b)
	if len(b) <= maxInterned {
		// A map entry: the key's header and bytes, the value's header
		// and the bucket's share.
		if err := d.budget.Charge(int64(len(b)) + 48); err != nil {
			return "", err
		}
		d.names[s] = s
	}
	return s, nil
}

func (d *decoder) fail(format string, args ...any) error {
	return &Error{Line: d.line, Msg: fmt.Sprintf(format, args...)}
}

// syntax turns the parser's error into ours, keeping its line.
func (d *decoder) syntax(err error) error {
	var de *lineprotocol.DecodeError
	if errors.As(err, &de) {
		return &Error{Line: de.Line, Msg: de.Err.Error(), syntax: true}
	}
	return &Error{Line: d.line, Msg: err.Error(), syntax: true}
}

// drop counts a line left out, and keeps the first one's error; an error
// that is not the line's (the request's budget) stops the body.
func (d *decoder) drop(err error) error {
	var le *Error
	if !errors.As(err, &le) {
		return err
	}
	d.line = max(d.line, le.Line)
	d.res.Dropped++
	if d.res.First == nil {
		if le.syntax {
			le.Msg = fmt.Sprintf("unable to parse '%s': %s", lineText(d.body, le.Line), le.Msg)
		}
		d.res.First = le
	}
	return nil
}

// maxQuoted is the most of a line an error message quotes.
const maxQuoted = 256

// lineText is the text of the one-based line n of body, cut to maxQuoted
// bytes.
func lineText(body []byte, n int64) string {
	for ; n > 1; n-- {
		i := bytes.IndexByte(body, '\n')
		if i < 0 {
			return ""
		}
		body = body[i+1:]
	}
	if i := bytes.IndexByte(body, '\n'); i >= 0 {
		body = body[:i]
	}
	body = bytes.TrimSuffix(body, []byte{'\r'})
	if len(body) > maxQuoted {
		return string(body[:maxQuoted]) + "..."
	}
	return string(body)
}

// locate sets the line of the entry whose measurement name is name: the
// parser does not tell the line of a well-formed entry, but a name without
// escapes is a slice of the body, so its offset gives the line. An escaped
// name is a copy; then the entry is taken to be on the line after the last.
func (d *decoder) locate(name []byte) {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(d.body)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(name)))
	if len(name) == 0 || p < base || p >= base+uintptr(len(d.body)) {
		d.line++
		return
	}
	off := int(p - base)
	if off >= d.offset {
		d.counted += int64(bytes.Count(d.body[d.offset:off], []byte{'\n'}))
		d.offset = off
	}
	d.line = d.counted + 1
}

func (d *decoder) all() error {
	dec := lineprotocol.NewDecoderWithBytes(d.body)
	for dec.Next() {
		name, err := dec.Measurement()
		if err != nil {
			if err := d.drop(d.syntax(err)); err != nil {
				return err
			}
			continue
		}
		d.locate(name)
		m, err := d.intern(name)
		if err == nil {
			err = d.entry(dec, m)
		}
		if err != nil {
			if err := d.drop(err); err != nil {
				return err
			}
		}
	}
	return nil
}

// fieldValue is a field read before the row's time is known: tags and
// fields come before the timestamp on a line.
type fieldValue struct {
	key string
	val lineprotocol.Value
}

// readTags reads a line's tags into d.tags, names and values interned.
func (d *decoder) readTags(dec *lineprotocol.Decoder) error {
	d.tags = d.tags[:0]
	for {
		k, v, err := dec.NextTag()
		if err != nil {
			return d.syntax(err)
		}
		if k == nil {
			return nil
		}
		key, err := d.intern(k)
		if err != nil {
			return err
		}
		val, err := d.intern(v)
		if err != nil {
			return err
		}
		d.tags = append(d.tags, [2]string{key, val})
	}
}

// readFields reads a line's fields into d.fields, names interned; the
// values wait for the line's time.
func (d *decoder) readFields(dec *lineprotocol.Decoder) error {
	d.fields = d.fields[:0]
	for {
		k, v, err := dec.NextField()
		if err != nil {
			return d.syntax(err)
		}
		if k == nil {
			return nil
		}
		key, err := d.intern(k)
		if err != nil {
			return err
		}
		d.fields = append(d.fields, fieldValue{key, v})
	}
}

// entry reads one line and adds its row, or refuses it with an *Error and
// leaves the rows as they were.
func (d *decoder) entry(dec *lineprotocol.Decoder, name string) error {
	if err := d.readTags(dec); err != nil {
		return err
	}
	if err := d.readFields(dec); err != nil {
		return err
	}
	ts, err := dec.TimeBytes()
	if err != nil {
		return d.syntax(err)
	}
	at := d.now
	if ts != nil {
		v, err := strconv.ParseInt(string(ts), 10, 64)
		ok := err == nil
		if ok {
			// Stored in microseconds: nanoseconds are truncated.
			at, ok = schema.ScaleTimestamp(v, time.Duration(d.prec))
		}
		if !ok {
			return d.fail("invalid timestamp %q: out of range for precision %s", ts, precisionName(d.prec))
		}
		if at < 0 || at > d.latest {
			return d.fail("timestamp %q at precision %s: %v (%s)", ts, precisionName(d.prec), storage.ErrTimeRange, schema.TimeRange)
		}
	}
	if _, err := storage.MeasurementFolder(name); err != nil {
		return d.fail("%v", err)
	}
	if err := d.checkFields(name); err != nil {
		return err
	}
	if err := d.checkLimits(name); err != nil {
		return err
	}
	if err := d.rows.Begin(name, at); err != nil {
		return err
	}
	if err := d.row(); err != nil {
		d.rows.Discard()
		return d.wrap(err)
	}
	for _, f := range d.fields {
		k := fieldKey{name, f.key}
		if _, seen := d.kinds[k]; !seen {
			d.kinds[k] = kindSeen{kind: f.val.Kind(), line: d.line}
		}
	}
	return nil
}

// checkFields refuses a line whose field has another type than on an
// earlier line of the body, as InfluxDB does, or an unsigned value past
// what int64 holds.
func (d *decoder) checkFields(measurement string) error {
	for _, f := range d.fields {
		kind := f.val.Kind()
		if seen, ok := d.kinds[fieldKey{measurement, f.key}]; ok && seen.kind != kind {
			return d.fail("field type conflict: input field %q on measurement %q is type %s, already exists as type %s (line %d)",
				f.key, measurement, kindName(kind), kindName(seen.kind), seen.line)
		}
		if kind == lineprotocol.Uint && f.val.UintV() > math.MaxInt64 {
			return d.fail("field %q: unsigned value %d does not fit a signed 64-bit integer, the type it is stored as", f.key, f.val.UintV())
		}
	}
	return nil
}

// checkLimits refuses a line that no request could store: a tag or
// string value longer than MaxStringBytes, or more tags and fields than
// MaxColumns allows beside time.
func (d *decoder) checkLimits(measurement string) error {
	if w := 1 + len(d.tags) + len(d.fields); w > d.limits.MaxColumns {
		return d.fail("measurement %q: a line of %d columns (time, tags and fields), the limit is %d (-max-columns)", measurement, w, d.limits.MaxColumns)
	}
	limit := d.limits.MaxStringBytes
	for _, t := range d.tags {
		if len(t[1]) > limit {
			return d.fail("tag %q: a value of %d bytes, the limit is %d (-max-string-bytes)", t[0], len(t[1]), limit)
		}
	}
	for _, f := range d.fields {
		if f.val.Kind() == lineprotocol.String && len(f.val.StringV()) > limit {
			return d.fail("field %q: a string of %d bytes, the limit is %d (-max-string-bytes)", f.key, len(f.val.StringV()), limit)
		}
	}
	return nil
}

// row adds the current line's tags and fields to the row Begin started.
func (d *decoder) row() error {
	for _, t := range d.tags {
		if err := d.rows.Tag(t[0], t[1]); err != nil {
			return err
		}
	}
	for _, f := range d.fields {
		col, err := d.rows.Field(f.key)
		if err != nil {
			return err
		}
		switch f.val.Kind() {
		case lineprotocol.Int:
			err = col.AppendInt(f.val.IntV())
		case lineprotocol.Uint:
			err = col.AppendInt(int64(f.val.UintV()))
		case lineprotocol.Float:
			err = col.AppendFloat(f.val.FloatV())
		case lineprotocol.String:
			err = col.AppendString(f.val.StringV())
		case lineprotocol.Bool:
			err = col.AppendBool(f.val.BoolV())
		}
		if err != nil {
			return err
		}
	}
	return d.rows.End()
}

// wrap puts the line in front of a column error; a budget overrun stays
// itself (the request, not a line, is too large).
func (d *decoder) wrap(err error) error {
	var le *Error
	if err == nil || !errors.Is(err, ErrInput) || errors.As(err, &le) {
		return err
	}
	msg := err.Error()
	if p := ErrInput.Error() + ": "; len(msg) > len(p) && msg[:len(p)] == p {
		msg = msg[len(p):]
	}
	return d.fail("%s", msg)
}

// kindName names a field type as InfluxDB's conflict message does.
func kindName(k lineprotocol.ValueKind) string {
	switch k {
	case lineprotocol.Int:
		return "integer"
	case lineprotocol.Uint:
		return "unsigned"
	case lineprotocol.Bool:
		return "boolean"
	}
	return k.String()
}

// time names a precision for messages.
func precisionName(p Precision) string {
	switch p {
	case 1:
		return "ns"
	case 1e3:
		return "us"
	case 1e6:
		return "ms"
	case 1e9:
		return "s"
	case 60e9:
		return "m"
	}
	return "h"
}
