// Package arcflight is the wire contract between the exporter and the
// sidecar: Arrow Flight DoPut, long-lived streams of one (database, table)
// each, one acknowledgement per record batch, sent only once the batch is
// durable.
//
// A stream's first FlightData carries a descriptor of type PATH whose path is
// [database, table] and the table's schema. Every record batch that follows,
// for as long as the stream lives (the exporter keeps it for many pushes),
// is answered, in order, by one PutResult whose app_metadata is the batch's
// 0-based sequence number in the stream as 8 bytes big-endian. A batch the
// sidecar rejects ends the stream with a gRPC status: InvalidArgument for
// data that no retry fixes (the exporter makes it a permanent error),
// ResourceExhausted or Unavailable for overload and shutdown (the exporter
// retries). A sidecar shutting down ends every stream with Unavailable
// after the batch it is storing.
package arcflight

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight"
)

// ErrBadDescriptor reports a DoPut descriptor that does not name a database
// and a table.
var ErrBadDescriptor = errors.New("flight descriptor must be a path [database, table]")

// Descriptor returns the DoPut descriptor for a table of a database.
func Descriptor(database, table string) *flight.FlightDescriptor {
	return &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{database, table}}
}

// ParseDescriptor returns the database and table a descriptor names.
func ParseDescriptor(d *flight.FlightDescriptor) (database, table string, err error) {
	if d == nil || d.Type != flight.DescriptorPATH || len(d.Path) != 2 {
		return "", "", ErrBadDescriptor
	}
	return d.Path[0], d.Path[1], nil
}

// AckMetadata encodes the app_metadata of the acknowledgement of batch seq.
func AckMetadata(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(nil, seq)
}

// ParseAck decodes the sequence number an acknowledgement carries.
func ParseAck(md []byte) (uint64, error) {
	if len(md) != 8 {
		return 0, fmt.Errorf("acknowledgement metadata has %d bytes, want 8", len(md))
	}
	return binary.BigEndian.Uint64(md), nil
}
