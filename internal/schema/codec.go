package schema

import (
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"
)

// ParquetLayout is s with codec on every column and encodings[i] on its
// i-th leaf column (in s.Columns() order; nil: PLAIN); a nil codec
// leaves the columns' own. The schema of a
// file parquet-go opened carries that file's codec and its first row
// group's encodings on each column, which a parquet-go writer takes over
// its own options: compaction, which rewrites files in their own shapes,
// sets both with this. Column order, repetition and types stay s's.
func ParquetLayout(s *parquet.Schema, codec compress.Codec, encodings []encoding.Encoding) *parquet.Schema {
	leaf := 0
	return parquet.NewSchema(s.Name(), nodeLayout(s, codec, encodings, &leaf))
}

func nodeLayout(n parquet.Node, codec compress.Codec, encodings []encoding.Encoding, leaf *int) parquet.Node {
	if n.Leaf() {
		// Not nil: parquet-go would pick its own default (strings:
		// DELTA_LENGTH_BYTE_ARRAY).
		var enc encoding.Encoding = &parquet.Plain
		if *leaf < len(encodings) && encodings[*leaf] != nil {
			enc = encodings[*leaf]
		}
		*leaf++
		if n = parquet.Encoded(n, enc); codec != nil {
			n = parquet.Compressed(n, codec)
		}
		return n
	}
	fields := n.Fields()
	out := make([]parquet.Field, len(fields))
	for i, f := range fields {
		out[i] = &field{Node: nodeLayout(f, codec, encodings, leaf), of: f}
	}
	return &group{Node: n, fields: out}
}
