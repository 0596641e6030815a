package parquetfile

import (
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/format"
)

// Layout returns the encoding this writer gives each leaf column of
// schema (in schema.Columns() order) in a file whose first row group is
// sample: the dictionaries the schema asks for that it keeps or gives up,
// and idEncoding for the strings of one width. Compaction writes its
// merged files with parquet-go, which takes an encoding per column up
// front: with Layout it takes the current writer's rules on the hour's
// rows, not the encodings of whichever file it read first (an earlier
// build's PLAIN ids would otherwise be every merged file's after an
// upgrade). A nil entry is a column the sample does not decide (no rows,
// or a list or map without an entry): the schema's encoding stands.
func Layout(schema *parquet.Schema, sample []arrow.RecordBatch) ([]encoding.Encoding, error) {
	var rows int64
	for _, r := range sample {
		rows += r.NumRows()
	}
	if rows == 0 {
		return nil, nil
	}
	// Uncompressed and discarded: only the footer's encodings are read.
	w, err := NewWriter(io.Discard, schema, sample[0].Schema(), Options{Compression: CompressionNone, RowGroupRows: rows})
	if err != nil {
		return nil, fmt.Errorf("plan layout: %w", err)
	}
	for _, r := range sample {
		if err := w.Write(r, nil); err != nil {
			return nil, fmt.Errorf("plan layout: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("plan layout: %w", err)
	}
	md, err := w.fw.FileMetadata()
	if err != nil {
		return nil, fmt.Errorf("plan layout: %w", err)
	}
	rg := md.RowGroup(0)
	out := make([]encoding.Encoding, len(schema.Columns()))
	if rg.NumColumns() != len(out) {
		return nil, fmt.Errorf("plan layout: %d columns written, the schema has %d", rg.NumColumns(), len(out))
	}
	leaf := 0
	for c, f := range schema.Fields() {
		n := leaves(f)
		// A list or map without an entry in the sample: its leaves' pages
		// hold levels alone, the rows decide nothing about them.
		if e := w.empty[c]; e != nil && e.written > 0 {
			leaf += n
			continue
		}
		for ; n > 0; n-- {
			cc, err := rg.ColumnChunk(leaf)
			if err != nil {
				return nil, fmt.Errorf("plan layout: %w", err)
			}
			var encs []format.Encoding
			for _, e := range cc.Encodings() {
				encs = append(encs, format.Encoding(e))
			}
			out[leaf] = chunkEncoding(encs)
			leaf++
		}
	}
	return out, nil
}

// leaves counts the leaf columns of a node.
func leaves(n parquet.Node) int {
	if n.Leaf() {
		return 1
	}
	total := 0
	for _, f := range n.Fields() {
		total += leaves(f)
	}
	return total
}

// chunkEncoding is a column chunk's encoding as parquet-go reads it from
// a file's footer: the dictionary or other non-PLAIN encoding of its data
// pages if any, else PLAIN (RLE there codes the levels).
func chunkEncoding(encs []format.Encoding) encoding.Encoding {
	out := encoding.Encoding(&parquet.Plain)
	for _, e := range encs {
		switch e {
		case format.Plain, format.RLE, format.BitPacked:
		case format.PlainDictionary, format.RLEDictionary:
			return &parquet.RLEDictionary
		default:
			out = parquet.LookupEncoding(e)
		}
	}
	return out
}
