package arcexporter

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// batchWriter writes a DoPut stream's IPC messages: the schema once, then
// one record batch message per batch, the bytes ipc.Writer writes for a
// schema without dictionaries. ipc.Writer also collects every batch's
// dictionaries first, walking each column and nested child and allocating
// as it goes (2 % of the collector's CPU under the traces load) to find
// none: no table schema has a dictionary field, and newBatchWriter refuses
// a schema that has one.
type batchWriter struct {
	pw      ipc.PayloadWriter
	schema  *arrow.Schema
	mem     memory.Allocator
	started bool
}

var errDictionarySchema = errors.New("schema has a dictionary field, which batchWriter does not write")

func newBatchWriter(pw ipc.PayloadWriter, schema *arrow.Schema, mem memory.Allocator) (*batchWriter, error) {
	for _, f := range schema.Fields() {
		if hasDictionary(f.Type) {
			return nil, fmt.Errorf("field %s: %w", f.Name, errDictionarySchema)
		}
	}
	return &batchWriter{pw: pw, schema: schema, mem: mem}, nil
}

// hasDictionary reports whether dt or a type nested in it is a dictionary.
func hasDictionary(dt arrow.DataType) bool {
	switch t := dt.(type) {
	case *arrow.DictionaryType:
		return true
	case arrow.ExtensionType:
		return hasDictionary(t.StorageType())
	case arrow.NestedType:
		for _, f := range t.Fields() {
			if hasDictionary(f.Type) {
				return true
			}
		}
	}
	return false
}

// Write sends rec, after the schema when it is the stream's first batch.
func (w *batchWriter) Write(rec arrow.RecordBatch) error {
	if !rec.Schema().Equal(w.schema) {
		return fmt.Errorf("record batch schema differs from the stream's %v", w.schema)
	}
	if !w.started {
		p := ipc.GetSchemaPayload(w.schema, w.mem)
		err := w.pw.WritePayload(p)
		p.Release()
		if err != nil {
			return err
		}
		w.started = true
	}
	// Buffers the encoder makes (offsets rebased for a sliced array) are
	// Go memory whatever w.mem is: a recordWriter may hand them to gRPC,
	// which writes them after the payload is released; the record's own
	// buffers it holds through rec.
	p, err := ipc.GetRecordBatchPayload(rec, ipc.WithAllocator(goAllocator))
	if err != nil {
		return fmt.Errorf("encode record batch: %w", err)
	}
	defer p.Release()
	if rw, ok := w.pw.(recordWriter); ok {
		return rw.WriteRecordPayload(p, rec)
	}
	return w.pw.WritePayload(p)
}

// recordWriter is a PayloadWriter that is told the record a payload was
// encoded from, so that it can hold the body's buffers past the write
// (payloadWriter lends them to gRPC).
type recordWriter interface {
	WriteRecordPayload(p ipc.Payload, rec arrow.RecordBatch) error
}

var goAllocator = memory.NewGoAllocator()
