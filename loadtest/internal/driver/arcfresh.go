package driver

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"
)

// freshBody is a pre-encoded batch whose timestamps are moved to the send's
// time before each send, so a cycled batch never repeats a row: a server
// that sorts a file by time (Arc) would otherwise find the copies side by
// side and compress them away, which flatters its bytes per row.
type freshBody struct {
	raw     []byte
	times   int           // offset of the first time value in raw
	rows    int           // time values, each 0xd3 + 8 bytes big-endian
	unit    time.Duration // of the time column: ns or ms
	created time.Time
}

// int64Code is MessagePack's fixed-width int64 marker, which msgpack/v5
// writes for every int64 of a []int64 unless compact ints are asked for.
const int64Code = 0xd3

// newFreshBody finds the time column of a batch encoded by arcRaw.
func newFreshBody(raw []byte, rows int, unit time.Duration, created time.Time) (*freshBody, error) {
	key := []byte{0xa4, 't', 'i', 'm', 'e'} // fixstr "time"
	var hdr []byte
	switch {
	case rows < 16:
		hdr = []byte{0x90 | byte(rows)} // fixarray
	case rows < 1<<16:
		hdr = binary.BigEndian.AppendUint16([]byte{0xdc}, uint16(rows))
	default:
		hdr = binary.BigEndian.AppendUint32([]byte{0xdd}, uint32(rows))
	}
	at := bytes.Index(raw, append(key, hdr...))
	if at < 0 {
		return nil, errors.New("fresh timestamps: no time column of fixed-width ints in the payload")
	}
	b := &freshBody{raw: raw, times: at + len(key) + len(hdr), rows: rows, unit: unit, created: created}
	if b.times+9*rows > len(raw) {
		return nil, errors.New("fresh timestamps: time column runs past the payload")
	}
	for i := 0; i < rows; i++ {
		if raw[b.times+9*i] != int64Code {
			return nil, fmt.Errorf("fresh timestamps: time value %d is not a fixed-width int64", i)
		}
	}
	return b, nil
}

// gzipPool reuses gzip writers across sends.
var gzipPool = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return zw
}}

// at returns the batch gzipped (level 1) with every timestamp moved forward
// by the time since the batch was made, into buf.
func (b *freshBody) at(now time.Time, buf *bytes.Buffer, scratch []byte) ([]byte, error) {
	delta := int64(now.Sub(b.created) / b.unit)
	scratch = append(scratch[:0], b.raw...)
	for i := 0; i < b.rows; i++ {
		v := scratch[b.times+9*i+1 : b.times+9*i+9]
		binary.BigEndian.PutUint64(v, uint64(int64(binary.BigEndian.Uint64(v))+delta))
	}
	buf.Reset()
	zw := gzipPool.Get().(*gzip.Writer)
	defer gzipPool.Put(zw)
	zw.Reset(buf)
	if _, err := zw.Write(scratch); err != nil {
		return scratch, fmt.Errorf("gzip payload: %w", err)
	}
	if err := zw.Close(); err != nil {
		return scratch, fmt.Errorf("gzip payload: %w", err)
	}
	return scratch, nil
}

// timeUnit is the unit arcColumns writes a measurement's time column in.
func timeUnit(s Signal) time.Duration {
	if s == ArcTraces || s == ArcEvents {
		return time.Millisecond
	}
	return time.Nanosecond
}
